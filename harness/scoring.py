"""The rule stage: extract the answer, normalize the reference, apply the evaluator.

Cheap evaluators run inline (microseconds); evaluators marked ``needs_worker``
(math-verify) run in worker processes under a time limit. Every outcome, failures
included, becomes a ``SampleResult`` with a status: nothing is dropped and nothing
fails silently.
"""

from __future__ import annotations

from typing import Any, Mapping

from .config import DatasetSpec
from .progress import Progress
from .records import Completion, SampleResult, SampleStatus
from .workers import WorkerPool, WorkerTimeout


class Scorer:
    """Turns completions into results for the datasets of one run."""

    def __init__(self, datasets: Mapping[str, DatasetSpec], mode: str,
                 workers: int | None, progress: Progress) -> None:
        self.datasets = datasets
        self.mode = mode
        self.progress = progress
        heavy = mode != "infer" and any(d.evaluator is not None and d.evaluator.needs_worker
                                        for d in datasets.values())
        self.pool = WorkerPool(workers) if heavy else None
        # With worker processes, keep each of them busy (plus one queued); inline
        # scoring is synchronous, so one task is all it can use.
        self.parallelism = 2 * self.pool.size if self.pool else 1

    async def start(self) -> None:
        """Start worker processes (and their imports) before the first sample."""
        if self.pool is not None:
            modules = {type(d.evaluator).__module__ for d in self.datasets.values()
                       if d.evaluator is not None and d.evaluator.needs_worker}
            for module in modules:
                await self.pool.warm(module)

    async def aclose(self) -> None:
        """Nothing to release today; worker processes are anyio's and end with the loop."""

    async def score(self, completion: Completion) -> SampleResult:
        """Score one completion; never raises for a per-sample problem."""
        sample = completion.sample
        dataset = self.datasets[sample.dataset]

        def result(status: SampleStatus, extracted: Any = None, reference: Any = None,
                   correct: bool | None = None, error: str | None = None,
                   details: Mapping[str, Any] | None = None) -> SampleResult:
            return SampleResult(sample.dataset, sample.model, sample.index, sample.replica,
                                status, sample.messages, completion.text, extracted,
                                sample.reference if reference is None else reference,
                                correct, error, dict(details or {}), completion.cached)

        if completion.status != "ok":
            return result("model_error", error=completion.error)
        if self.mode == "infer" or dataset.evaluator is None:
            return result("ok")
        stage = self.progress.rules
        stage.in_flight += 1
        try:
            return await self._evaluate(completion, dataset, result)
        except Exception as exc:  # an evaluator or postprocessor bug on this sample
            stage.failed += 1
            return result("eval_error", error=f"{type(exc).__name__}: {exc}")
        finally:
            stage.in_flight -= 1
            stage.done += 1

    async def _evaluate(self, completion: Completion, dataset: DatasetSpec, result) -> SampleResult:
        from .postprocessors import is_extraction_failure

        sample = completion.sample
        reference = sample.reference
        if dataset.dataset_postprocessor is not None:
            reference = dataset.dataset_postprocessor(reference)
        extracted: Any = completion.text
        if dataset.pred_postprocessor is not None:
            extracted = dataset.pred_postprocessor(completion.text)
        if is_extraction_failure(extracted):
            return result("extract_failed", extracted, reference, False,
                          details={"finish_reason": completion.finish_reason})
        evaluator = dataset.evaluator
        assert evaluator is not None
        if evaluator.needs_worker and self.pool is not None:
            try:
                detail = await self.pool.run(evaluator.score_sample, extracted, reference,
                                             dict(sample.row), timeout=evaluator.timeout)
            except WorkerTimeout as exc:
                return result("timeout", extracted, reference, False, str(exc))
        else:
            detail = evaluator.score_sample(extracted, reference, sample.row)
        pred = detail.get("pred", extracted)
        status: SampleStatus = "extract_failed" if is_extraction_failure(pred) else "ok"
        extra = {k: v for k, v in detail.items() if k not in ("pred", "answer", "correct")}
        if completion.finish_reason and completion.finish_reason != "stop":
            extra["finish_reason"] = completion.finish_reason
        return result(status, pred, reference, bool(detail.get("correct")),
                      details=extra)
