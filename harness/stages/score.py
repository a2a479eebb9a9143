"""The rule stage: extract the answer, normalize the reference, apply the evaluator.

Cheap evaluators run inline (microseconds); evaluators marked ``needs_worker``
(math-verify) run in worker processes under a time limit; evaluators marked
``executes`` (code) are awaited (``ascore_sample``), one sandboxed program per core at
a time, with the store as their execution cache. Every outcome, failures
included, becomes a ``SampleResult`` with a status: nothing is dropped and nothing
fails silently. Samples the judge must see leave as a ``JudgeTask`` instead.

A final, reproducible result is also stored as an outcome (``harness.outcomes``) under
a key the scorer computes from the completion: the dispatch sends its row to the store
writer, and a judge task carries the key to the judge stage.

Without worker processes scoring never waits, so the stage that holds a completion
(the reader for a stored one, a model caller for a reply) scores it on the spot through
its ``ScoreOutlet``: a stream hop and a task switch cost more than the check.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream as ObjectReceiveStream
from anyio.streams.memory import MemoryObjectSendStream as ObjectSendStream

from ..config import DatasetSpec
from ..evaluators.base import BaseEvaluator
from ..evaluators.llm import GenericLLMEvaluator, judge_plan
from ..outcomes import final_row
from ..postprocessors import is_extraction_failure
from ..progress import Progress, StageCounts
from ..records import (
    RULE_DECIDED_STATUSES,
    Completion,
    JudgeTask,
    SampleResult,
    SampleStatus,
    StoreWrite,
)
from ..workers import DEPTH, WorkerPool, WorkerTimeout
from . import offload
from .collect import Collector
from .extract import Extraction, Rules, apply, extract
from .streams import send

if TYPE_CHECKING:
    from ..outcomes import Outcomes

#: What scoring a completion gives: a finished result, or a task for the judge.
Scored = SampleResult | JudgeTask

#: Builds the ``SampleResult`` of the completion being scored from what scoring found.
_ResultOf = Callable[..., SampleResult]


def empty_reply(text: str | None) -> bool:
    """Whether a reply is empty (after its retries): scored as ``empty_reply``, without
    a rule check."""
    return not text or text.isspace()


class Scorer:
    """Turns completions into results (or judge tasks) for the datasets of one run.

    An async context manager: its worker processes (if any) stop on exit.
    """

    def __init__(self, datasets: Mapping[str, DatasetSpec], mode: str,
                 workers: int | None, progress: Progress, store: Any = None) -> None:
        self.datasets = datasets
        self.mode = mode
        self.progress = progress
        self.plans = {name: judge_plan(d.evaluator) for name, d in datasets.items()}
        heavy = mode != "infer" and any(d.evaluator is not None and d.evaluator.needs_worker
                                        for d in datasets.values())
        self.pool = WorkerPool(workers) if heavy else None
        # With worker processes, fill every worker's queue (one check running, the
        # next waiting in its pipe). Without them scoring never waits, so the stage
        # that holds a completion scores it.
        self.parallelism = self.pool.size * self.pool.depth if self.pool else 1
        #: Where code evaluators find and keep executions (the run's ``Store``).
        self.executions = store
        executes = mode != "infer" and any(getattr(d.evaluator, "executes", False)
                                           for d in datasets.values())
        if executes:  # one sandboxed program per core
            self.parallelism = max(self.parallelism, os.cpu_count() or 1)
        self.rules = {name: Rules.of(d.dataset_postprocessor, d.pred_postprocessor,
                                     d.evaluator) for name, d in datasets.items()}
        # Datasets a worker process may score when replies pile up (``offload``), its
        # pool started at the first backlog. Not beside worker processes of another
        # kind: the score stage would then wait for their checks one batch at a time
        # instead of side by side.
        self._offload = offload.offloadable(
            {name: rules for name, rules in self.rules.items() if self.plans[name][0]}
        ) if mode != "infer" and not heavy and not executes and offload.can_spawn() else None
        self._offload_workers = workers or max(1, (os.cpu_count() or 1) - 1)
        self._offload_pool: WorkerPool | None = None
        self._offload_ready = False
        self._tg: TaskGroup | None = None
        if self._offload is not None:
            self.parallelism = max(self.parallelism, self._offload_workers * DEPTH)
        #: Whether ``score`` never waits (no worker processes, no programs to run) and
        #: nothing can be offloaded: then callers score inline instead of going through
        #: a score stage.
        self.inline = self.pool is None and not executes and self._offload is None
        # Whether callers may score inline anyway: until scoring takes a large share of
        # the loop's time (``note_inline``), while nothing is waiting for a worker.
        self._may_inline = self.pool is None and not executes
        self._hot = False
        self._new_window(time.monotonic())
        #: Keys reproducible final results for the outcome store (``None``: nothing is
        #: stored); set by the pipeline once the judges, which it fingerprints, exist.
        self.outcomes: Outcomes | None = None

    @property
    def judges(self) -> bool:
        """Whether any dataset of the run needs the judge stage."""
        return self.mode != "infer" and any(j is not None for _, j, _ in self.plans.values())

    async def __aenter__(self) -> Scorer:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    def start(self, tg: TaskGroup) -> None:
        """Start the worker processes, each with the evaluators' warm-ups (imports,
        parser caches) first in its pipe: checks queue behind them, untimed, while the
        first model requests go out. A task of ``tg`` waits for the warm-ups, to stop
        the run on a warm-up's own error (math-verify missing, say)."""
        self._tg = tg
        if self.pool is None:
            return
        warm_ups = [d.evaluator.warm_up for d in self.datasets.values()
                    if d.evaluator is not None and d.evaluator.needs_worker]
        self.pool.start(*warm_ups)
        tg.start_soon(self.pool.warm)

    async def aclose(self) -> None:
        """Stop the worker processes, if any (shielded: it runs on cancellation too)."""
        with anyio.CancelScope(shield=True):
            for pool in (self.pool, self._offload_pool):  # never both (see __init__)
                if pool is not None:
                    await pool.aclose()

    @property
    def scores_here(self) -> bool:
        """Whether the task holding a completion should score it itself (no stream hop):
        always without worker processes, unless scoring has become the loop's
        bottleneck and a worker process can take a backlog (see ``offload``)."""
        return self._may_inline and not self._hot

    def note_inline(self, seconds: float) -> None:
        """Count ``seconds`` the loop spent scoring in a caller's task; over a window in
        which that passes ``offload.HOT_SHARE`` of the time, send replies to the score
        stage, which batches them for a worker process."""
        self._window_busy += seconds
        now = time.monotonic()
        elapsed = now - self._window_start
        if elapsed >= offload.WINDOW and elapsed > 0:
            share = self._window_busy / elapsed
            self._hot = self._offload is not None and share > offload.HOT_SHARE
            self._new_window(now)

    def _new_window(self, now: float) -> None:
        """Start a window of ``note_inline``'s and ``note_batch``'s counts."""
        self._window_start = now
        self._window_busy = 0.0  # seconds scoring in callers' tasks
        self._window_replies = self._window_batches = 0  # taken by the score stage

    def note_batch(self, size: int) -> None:
        """Count a batch the score stage took; over a window in which they averaged
        under ``offload.MIN_BATCH`` replies there was no backlog: callers score inline
        again."""
        self._window_replies += size
        self._window_batches += 1
        now = time.monotonic()
        if now - self._window_start >= offload.WINDOW:
            if self._window_replies < offload.MIN_BATCH * self._window_batches:
                self._hot = False
            self._new_window(now)

    @property
    def batches(self) -> bool:
        """Whether the score stage should take what is waiting as one batch: some
        datasets' replies can be scored in a worker process (see ``offload``)."""
        return self._offload is not None

    async def score_batch(self, completions: list[Completion]
                          ) -> list[tuple[Scored, str | None]]:
        """``score_keyed`` of each completion; a backlog of them that a worker process can
        score goes there in one call, once its worker is ready."""
        checked = await self._check_offloaded(completions)
        scored = []
        for i, completion in enumerate(completions):
            if i and i not in checked:
                # Scored here: let the other tasks run between long replies.
                await anyio.lowlevel.checkpoint()
            scored.append(await self.score_keyed(completion, checked.get(i)))
        return scored

    async def _check_offloaded(self, completions: list[Completion]
                               ) -> dict[int, offload.Checked]:
        """What a worker made of the completions it can score, by their position; empty
        for a trickle, before the worker is ready, or when its call failed (they are
        then scored here, with the same code, and so is the rest of the run)."""
        if self._offload is None:
            return {}
        names = self._offload[1]
        mine = [i for i, c in enumerate(completions)
                if c.sample.dataset in names and c.status == "ok" and not empty_reply(c.text)]
        if len(mine) < offload.MIN_BATCH or not self._offload_started():
            return {}
        items: list[offload.Item] = [
            (c.sample.dataset, c.text, c.finish_reason, c.sample.row, c.sample.reference)
            for c in (completions[i] for i in mine)]
        assert self._offload_pool is not None
        stage = self.progress.rules
        stage.in_flight += len(items)  # shown as in flight while the worker has them
        try:
            checked = await self._offload_pool.run(offload.check, items,
                                                   timeout=offload.timeout(items))
        except Exception:  # noqa: BLE001 - a killed or crashed worker
            # Score them here, and the rest of the run too: a batch that kills its
            # worker would kill the next one as well.
            self._offload, self._hot = None, False
            return {}
        finally:
            stage.in_flight -= len(items)
        done = {i: found for i, found in zip(mine, checked, strict=True) if found is not None}
        stage.offloaded += len(done)
        return done

    def _offload_started(self) -> bool:
        """Whether the offload worker is ready; starts it (and its warm-up, in the run's
        task group) on the first call."""
        if self._offload_pool is None and self._offload is not None and self._tg is not None:
            self._offload_pool = WorkerPool(self._offload_workers)
            self._tg.start_soon(self._warm_offload)
        return self._offload_ready

    async def _warm_offload(self) -> None:
        """Give the offload workers the rules; on any failure keep scoring here."""
        assert self._offload is not None and self._offload_pool is not None
        try:
            await self._offload_pool.warm(offload.installer(self._offload[0]))
        except Exception:  # noqa: BLE001 - e.g. a rule that does not unpickle there
            self._offload, self._hot = None, False
            return
        self._offload_ready = True

    async def score(self, completion: Completion) -> Scored:
        """Score one completion; never raises for a per-sample problem."""
        return (await self.score_keyed(completion))[0]

    def _reference(self, completion: Completion) -> Any:
        """The sample's reference after its dataset's ``dataset_postprocessor``, as a
        scored sample's details show it; as written if that fails here (the details
        of a sample that was never scored must not fail on it)."""
        sample = completion.sample
        postprocessor = self.rules[sample.dataset].dataset_postprocessor
        if postprocessor is None or self.datasets[sample.dataset].ppl is not None:
            return sample.reference
        try:
            return apply(postprocessor, sample.reference, sample.row)
        except Exception:  # noqa: BLE001 - shown as written instead
            return sample.reference

    def _key(self, completion: Completion) -> str | None:
        """The completion's outcome key, where its dataset's outcomes are stored."""
        if self.outcomes is None or completion.status != "ok":
            return None
        return self.outcomes.key(completion.sample, completion.text,
                                 completion.finish_reason, completion.reasoning)

    async def score_keyed(self, completion: Completion, checked: offload.Checked = None
                          ) -> tuple[Scored, str | None]:
        """``score``, and the outcome key to store the result under: ``None`` when it is
        not stored (a dataset that is not cacheable, a check that is not reproducible).
        A judge task also carries the key, for its judged result. ``checked``: what a
        worker process already made of it (``offload``)."""
        sample = completion.sample
        dataset = self.datasets[sample.dataset]

        def result(status: SampleStatus, extracted: Any = None, reference: Any = None,
                   correct: bool | None = None, error: str | None = None,
                   details: Mapping[str, Any] | None = None,
                   cause: str | None = None, cascade: bool = False) -> SampleResult:
            details = {**(completion.details or {}), **(details or {})}
            if completion.finish_reason not in (None, "stop"):
                details["finish_reason"] = completion.finish_reason  # e.g. truncated
            if completion.reasoning:
                details["reasoning"] = completion.reasoning  # shown, never scored
            if sample.api == "completions":  # the messages went as one text (``as_text``)
                details["api"] = "completions"
            rule_correct = None
            if cascade and status in RULE_DECIDED_STATUSES:
                # A cascade's rule verdict: its details go under "rule_evaluation",
                # beside which the judge layer puts its own.
                rule_correct = correct
                details = {"rule_evaluation": {"correct": correct, "pred": extracted,
                                               "answer": reference, **details},
                           "cascade_correct": correct}
            return SampleResult(sample.dataset, sample.model, sample.index, sample.replica,
                                status, sample.messages, completion.text, extracted,
                                sample.reference if reference is None else reference,
                                correct, error, details, completion.cached, cause=cause,
                                rule_correct=rule_correct)

        if completion.status != "ok":
            return result("model_error", reference=self._reference(completion),
                          error=completion.error, cause=completion.cause), None
        if empty_reply(completion.text):
            # Still empty after its retries: the model answered nothing, which is wrong
            # (a transient empty reply was retried and never gets here). Nothing for a
            # judge to read; a cascade's rule layer counts it as a rule failure.
            scored = self.mode != "infer" and dataset.evaluator is not None
            wrong = scored and dataset.evaluator is not None and dataset.evaluator.verdicts
            empty = result("empty_reply", "", self._reference(completion),
                           correct=False if wrong else None,
                           error="the model's reply was empty")
            has_rule, judge, _ = self.plans[sample.dataset]
            if scored and has_rule and judge is not None:
                empty = replace(empty, rule_correct=False,
                                details={**empty.details, "cascade_correct": False})
            return empty, self._key(completion)
        if self.mode == "infer" or dataset.evaluator is None:
            return result("ok"), None
        stage = self.progress.rules
        stage.in_flight += 1
        try:
            return await self._evaluate(completion, result, checked)
        except Exception as exc:  # an evaluator or postprocessor bug on this sample
            stage.failed += 1
            return result("eval_error", error=f"{type(exc).__name__}: {exc}",
                          cause=f"the evaluator raised {type(exc).__name__}"), None
        finally:
            stage.in_flight -= 1
            stage.done += 1

    async def _evaluate(self, completion: Completion, result: _ResultOf,
                        checked: offload.Checked) -> tuple[Scored, str | None]:
        sample = completion.sample
        has_rule, judge, judge_all = self.plans[sample.dataset]
        found, detail = checked or (extract(self.rules[sample.dataset], completion.text,
                                            completion.finish_reason, sample.row,
                                            sample.reference, rule=has_rule), None)
        if not has_rule:
            assert judge is not None  # judge_plan: no rule layer means a judge
            base = result("ok", found.extracted, found.reference)
            key = self._key(completion)
            return self._judge_task(base, sample.row, found.extracted, found.reference, judge,
                                    False, key), key
        if judge is not None:  # the rule layer of a cascade: built in its shape at once
            result = functools.partial(result, cascade=True)
        rule, reproducible = await self._rule(self.datasets[sample.dataset], found,
                                              sample.row, result, detail)
        key = self._key(completion) if reproducible else None
        if judge is None or rule.status not in RULE_DECIDED_STATUSES:
            return rule, key
        if rule.correct and not judge_all:
            return rule, key
        return self._judge_task(rule, sample.row, found.extracted, found.reference, judge,
                                True, key), key

    def _judge_task(self, base: SampleResult, row: Mapping[str, Any], extracted: Any,
                    reference: Any, judge: GenericLLMEvaluator, has_rule: bool,
                    key: str | None) -> Scored:
        prediction = extracted
        if judge.pred_postprocessor is not None:
            prediction = apply(judge.pred_postprocessor, prediction, row)
        if is_extraction_failure(prediction):
            # Nothing to show the judge: a request would only buy a certain "B".
            skipped = {"status": "skipped", "reason": "empty prediction", "llm_correct": False}
            if has_rule:
                return replace(base, details={**base.details, "llm_evaluation": skipped})
            return replace(base, status="extract_failed", correct=False,
                           details={"llm_evaluation": skipped})
        return JudgeTask(base, row, prediction, reference, has_rule, key)

    async def _rule(self, dataset: DatasetSpec, found: Extraction, row: Mapping[str, Any],
                    result: _ResultOf, detail: dict[str, Any] | None
                    ) -> tuple[SampleResult, bool]:
        """The rule layer's result, and whether it is reproducible (another run would
        give the same: no timeout, no check that may have hit a quiet time limit).
        ``detail``: the evaluator's, already worked out in a worker process."""
        evaluator = dataset.evaluator
        assert evaluator is not None
        extracted, reference = found.prediction, found.reference
        if found.failed:
            # A config's own function may call an empty answer right ("none", say);
            # otherwise, also when it cannot read one, it is an extraction failure
            # (wrong, or the judge's to decide in a cascade).
            if evaluator.scores_failed_extraction \
                    and (right := _function_verdict(evaluator, extracted, reference, row)):
                return _from_detail(result, right, extracted, reference), True
            return result("extract_failed", extracted, reference,
                          False if evaluator.verdicts else None), True
        if detail is not None:
            return _from_detail(result, detail, extracted, reference), True
        reproducible = True
        if evaluator.executes:
            from ..sandbox import SandboxUnavailable  # only code evaluation needs it

            try:
                detail = await evaluator.ascore_sample(extracted, reference, dict(row),
                                                       self.executions)
            except SandboxUnavailable as exc:  # --mode eval: only a new execution needs it
                return result("sandbox_error", extracted, reference, None, str(exc),
                              cause="no code sandbox on this machine"), False
            if detail.get("outcome") == "sandbox_error":
                return result("sandbox_error", detail.get("pred"), reference, None,
                              detail.get("reason"), cause="the code sandbox failed"), False
        # A check whose outcome is certain at once (math_fast) skips the worker.
        elif (fast := evaluator.fast_score(extracted, reference)
              if evaluator.needs_worker else None) is not None:
            detail = fast
        else:
            limit = evaluator.quiet_timeout()
            started = time.monotonic() if limit is not None else 0.0
            if evaluator.needs_worker and self.pool is not None:
                try:
                    # Keyed by the reference: a worker keeps the references it parsed.
                    detail = await self.pool.run(evaluator.score_sample, extracted,
                                                 reference, dict(row),
                                                 timeout=evaluator.timeout,
                                                 key=str(reference))
                except WorkerTimeout as exc:
                    return result("timeout", extracted, reference, False, str(exc)), False
            else:
                detail = evaluator.score_sample(extracted, reference, row)
            # Timed here, so the wait in a worker's pipe counts too: an over-estimate,
            # which only stores fewer outcomes.
            reproducible = limit is None or time.monotonic() - started < limit
        if detail.get("outcome") == "timeout":
            # A check cut short by the evaluator's own limit (a program, math-verify's
            # comparison) has no verdict: counted apart, never silently wrong.
            return result("timeout", detail.get("pred"), reference, False,
                          detail.get("reason"), details={
                              k: v for k, v in detail.items()
                              if k not in ("pred", "answer", "correct")}), False
        return _from_detail(result, detail, extracted, reference), reproducible


def _function_verdict(evaluator: BaseEvaluator, extracted: Any, reference: Any,
                      row: Mapping[str, Any]) -> dict[str, Any] | None:
    """A config function's detail for a prediction nothing was extracted from, when
    it says right; ``None`` when it says wrong or raises on it."""
    try:
        detail: dict[str, Any] = evaluator.score_sample(extracted, reference, row)
    except Exception:  # noqa: BLE001 - a function written for answers, not for ''
        return None
    return detail if detail.get("correct") else None


def _from_detail(result: _ResultOf, detail: Mapping[str, Any], extracted: Any,
                 reference: Any) -> SampleResult:
    """The result of an evaluator's ``detail`` for the checked prediction."""
    pred = detail.get("pred", extracted)
    status: SampleStatus = "extract_failed" if is_extraction_failure(pred) else "ok"
    extra = {k: v for k, v in detail.items() if k not in ("pred", "answer", "correct")}
    # A metric with no 0/1 judgement (BLEU, ROUGE) leaves ``correct`` unset: the
    # sample is scored, by its metric fields, and is neither right nor wrong.
    correct = detail.get("correct")
    return result(status, pred, reference, None if correct is None else bool(correct),
                  details=extra)


class Dispatch:
    """Where a scored sample goes: to the judge if it still needs a verdict, else to
    the collector, its outcome row (if it has one) to the store writer. Holds its own
    clones of the judge and store streams (closed on exit)."""

    def __init__(self, judge_send: ObjectSendStream[JudgeTask], collect: Collector,
                 judge_counts: StageCounts, store_send: ObjectSendStream[StoreWrite]) -> None:
        self.judge_send = judge_send
        self.collect = collect
        self.judge_counts = judge_counts
        self.store_send = store_send

    def clone(self) -> Dispatch:
        """A dispatch for another task (each task closes its own stream clones)."""
        return Dispatch(self.judge_send.clone(), self.collect, self.judge_counts,
                        self.store_send.clone())

    def close(self) -> None:
        """Close this dispatch's stream clones."""
        self.judge_send.close()
        self.store_send.close()

    async def __aenter__(self) -> Dispatch:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()

    async def put(self, outcome: Scored, key: str | None = None) -> None:
        """Pass one scored sample on; ``key``: where its outcome is stored, if final."""
        if isinstance(outcome, JudgeTask):
            self.judge_counts.submitted += 1
            await send(self.judge_send, outcome)
            return
        if key is not None and (row := final_row(key, outcome)) is not None:
            await send(self.store_send, row)
        await self.collect.add(outcome)


class ScoreOutlet:
    """Where a stage puts a completion: scored on the spot when scoring never waits (no
    worker processes), else sent to the score stage's stream."""

    def __init__(self, scorer: Scorer, score_send: ObjectSendStream[Completion],
                 dispatch: Dispatch) -> None:
        self.scorer = scorer
        self.score_send = score_send
        self.dispatch = dispatch

    def clone(self) -> ScoreOutlet:
        """An outlet for another task (each task closes its own stream clones)."""
        return ScoreOutlet(self.scorer, self.score_send.clone(), self.dispatch.clone())

    async def __aenter__(self) -> ScoreOutlet:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.score_send.close()
        self.dispatch.close()

    async def put(self, completion: Completion) -> None:
        """Score ``completion`` here (inline scoring) or hand it to the score stage."""
        scorer = self.scorer
        if scorer.inline:
            await self.dispatch.put(*await scorer.score_keyed(completion))
        elif scorer.scores_here:
            started = time.perf_counter()
            scored = await scorer.score_keyed(completion)
            scorer.note_inline(time.perf_counter() - started)
            await self.dispatch.put(*scored)
        else:
            await send(self.score_send, completion)  # no task switch while there is room


async def score(receive: ObjectReceiveStream[Completion], scorer: Scorer,
                dispatch: Dispatch) -> None:
    """The score stage (run only with worker processes): completions in, each scored
    and dispatched to the judge or the collector. With ``scorer.batches`` it takes
    every completion already waiting, so a backlog is scored as one batch."""
    async with receive, dispatch:
        async for completion in receive:
            batch = [completion]
            if scorer.batches:
                _drain(receive, batch)
                if len(batch) < offload.MIN_BATCH and not scorer.scores_here:
                    # Replies coming one at a time (a single producer): give a batch
                    # time to build before deciding there is no backlog.
                    await anyio.sleep(offload.GATHER)
                    _drain(receive, batch)
                scorer.note_batch(len(batch))
            for scored in await scorer.score_batch(batch):
                await dispatch.put(*scored)


def _drain(receive: ObjectReceiveStream[Completion], batch: list[Completion]) -> None:
    """Add to ``batch`` what is already waiting in ``receive``, up to ``offload.BATCH``."""
    while len(batch) < offload.BATCH:
        try:
            batch.append(receive.receive_nowait())
        except (anyio.WouldBlock, anyio.EndOfStream):
            return
