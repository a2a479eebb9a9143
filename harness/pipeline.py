"""The streaming pipeline: one task group, bounded streams between stages.

::

    produce ──▶ call_model ×C ──▶ score ×S ─────────────────▶ finish ──▶ (caller's iterator)
       │  (stored predictions)  ▲  │     │                    ▲ (counts, details)
       └────────────────────────┘  │     └──▶ judge lookup ─┬─┘ (stored verdicts)
                                   │          (batched)     └─▶ judge ask ×M ─▶ finish
                                   └──▶ write_store ◀── (verdicts)
                                        (one writer, batched commits)

Every stream is bounded, so a slow stage blocks the ones before it (backpressure) and
memory holds at most a few buffers of samples, never the dataset. End-of-stream flows
stage by stage: each task closes its send streams when its input ends. A stage that
raises cancels the others; the store writer shields its last commit.

The score stage is a stage of its own only when it has worker processes to wait for
(math-verify). Inline rule checks take microseconds, less than a stream hop and a task
switch cost, so the model workers (and the producer, for stored predictions) score
what they hold themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable, Literal, Mapping

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream

from .breaker import BreakerPolicy
from .client import ModelClient
from .config import DatasetSpec
from .errors import ModelCallError, PermanentModelError, WorkDirError
from .keys import prediction_key
from .paths import details_path, result_path
from .progress import Progress
from .records import Completion, ModelSpec, Sample, SampleResult
from .retry import CallStats
from .results import Accumulator, keeps_previous, read_json
from .scoring import JudgeTask, Scorer
from .store import Store
from .validate import check_row, selected_rows

Mode = Literal["all", "infer", "eval"]

#: Starts an endpoint on first use and returns the spec that points at it; called by
#: every worker that needs the endpoint, it starts it once.
Starter = Callable[[ModelSpec], Awaitable[ModelSpec]]

#: Samples looked up in the store per query.
LOOKUP_BATCH = 256

#: Samples waiting for the judge. Large enough that a rate-limited judge does not hold
#: inference back, bounded so memory stays constant whatever the dataset size.
JUDGE_BUFFER = 4096


@dataclass(frozen=True)
class PipelineOptions:
    """Settings that shape the run but never a result (so they stay out of keys)."""

    work_dir: Path
    mode: Mode = "all"
    concurrency: int = 64
    limit: int | None = None
    dump_details: bool = True
    rule_workers: int | None = None
    #: The ``(model, dataset)`` pairs to run (``None``: all); ``--mode eval`` leaves out
    #: the pairs with nothing stored.
    pairs: frozenset[tuple[str, str]] | None = None
    #: When an endpoint counts as down and the run stops (``harness.breaker``).
    breaker: BreakerPolicy = BreakerPolicy()
    #: The run's ``--timeout``/``--max-attempts``: judges use them unless their
    #: ``judge_cfg`` says otherwise (models get them through ``ModelOverrides``).
    timeout: float | None = None
    max_attempts: int | None = None


class Pipeline:
    """Evaluate ``models`` × ``datasets`` with stored predictions reused."""

    def __init__(self, datasets: list[DatasetSpec], models: list[ModelSpec], store: Store,
                 options: PipelineOptions, progress: Progress | None = None,
                 starters: Mapping[str, Starter] | None = None) -> None:
        self.datasets = {d.abbr: d for d in datasets}
        self.models = {m.abbr: m for m in models}
        # Endpoints started on first use (the embedded model): abbr → a function that
        # starts it and returns the spec pointing at it.
        self.starters = dict(starters or {})
        #: (model, dataset) → the results kept on disk because this run got less far.
        self.kept: dict[tuple[str, str], dict[str, Any]] = {}
        self.store = store
        self.options = options
        self.progress = progress or Progress()
        self._out: ObjectSendStream[SampleResult] | None = None
        self.clients: dict[str, ModelClient] = {}
        self._ppl: Any = None  # harness.ppl.PPLRunner, made for the first PPL sample
        self.scorer = Scorer(self.datasets, options.mode, options.rule_workers, self.progress)
        self.judges: dict[str, Any] = {}  # dataset abbr → JudgeRunner
        self.endpoints: dict[str, Any] = {}
        if self.scorer.judges:
            self._build_judges()
        self.accumulators = {
            (m, d): Accumulator(m, d, options.mode, self._details_path(m, d),
                                judge_mode=self._judge_mode(d),
                                replicas=self.datasets[d].n)
            for m in self.models for d in self.datasets if self._included(m, d)}

    def _included(self, model: str, dataset: str) -> bool:
        return self.options.pairs is None or (model, dataset) in self.options.pairs

    def _build_judges(self) -> None:
        """Resolve every judge config now, so a missing judge fails before any request."""
        from .judge.runner import JudgeEndpoint, JudgeRunner
        from .judge.spec import judge_spec
        from .keys import content_key

        for i, (abbr, (_, judge, _)) in enumerate(self.scorer.plans.items()):
            if judge is None:
                continue
            spec = judge_spec(self._judge_cfg(judge.judge_cfg),
                              f"datasets[{i}].eval_cfg.evaluator.judge_cfg")
            # Datasets share a client and a pacer only for the same endpoint, key and
            # limits; each runner keeps its own generation and re-ask settings. (The
            # key is part of an in-memory dict key only, never stored.)
            ident = content_key("endpoint", id=spec.model.identity(), key=spec.model.api_key,
                                rpm=spec.rpm, tpm=spec.tpm, concurrency=spec.concurrency)
            if ident not in self.endpoints:
                self.endpoints[ident] = JudgeEndpoint(spec, self.options.breaker)
                self.progress.judge.calls.append(self.endpoints[ident].client.stats)
            self.judges[abbr] = JudgeRunner(judge, self.endpoints[ident], self.store, spec)

    def _judge_cfg(self, cfg: Mapping[str, Any] | None) -> dict[str, Any]:
        """``judge_cfg`` with the run's ``--timeout``/``--max-attempts`` where it sets
        none of its own: a judge is bounded like the model, never 600 s × 6 by default."""
        cfg = dict(cfg or {})
        if self.options.timeout is not None:
            cfg.setdefault("timeout", self.options.timeout)
        if self.options.max_attempts is not None and "retry" not in cfg:
            cfg.setdefault("max_attempts", self.options.max_attempts)
        return cfg

    def _judge_mode(self, dataset: str) -> str | None:
        has_rule, judge, judge_all = self.scorer.plans[dataset]
        if judge is None or self.options.mode == "infer":
            return None
        return "judge" if not has_rule else ("parallel" if judge_all else "cascade")

    def _details_path(self, model: str, dataset: str) -> Path | None:
        if not self.options.dump_details:
            return None
        return details_path(self.options.work_dir, model, dataset)

    async def run(self, out: ObjectSendStream[SampleResult] | None = None) -> None:
        """Run every stage to completion; per-sample results also go to ``out``."""
        self._out = out
        if self.options.mode != "eval":
            for spec in self.models.values():
                if spec.abbr not in self.starters:
                    self._add_client(spec)
        for acc in self.accumulators.values():
            acc.open()
        finished = False
        try:
            await self._run_stages()
            finished = True
        finally:
            with anyio.CancelScope(shield=True):
                await self.scorer.aclose()
                for client in self.clients.values():
                    await client.aclose()
                for endpoint in self.endpoints.values():
                    await endpoint.aclose()
            # An interrupted run leaves the previous details file as it was, and so does
            # one that got less far than the run that wrote the previous results.
            self._close_details(finished)

    def _close_details(self, finished: bool) -> None:
        """Close every details file (the first error is raised after all are closed);
        none is written where the work directory's path no longer leads to the locked
        directory."""
        try:
            self.store.check_work_dir()
        except WorkDirError:
            for acc in self.accumulators.values():
                acc.abandon()
            raise
        error: BaseException | None = None
        for pair, acc in self.accumulators.items():
            previous = read_json(result_path(self.options.work_dir, *pair))
            if finished and keeps_previous(acc.summary(), previous):
                self.kept[pair] = previous
            try:
                acc.close(keep=finished and pair not in self.kept)
            except OSError as exc:
                error = error or exc
        if error is not None:
            raise error

    def _add_client(self, spec: ModelSpec) -> ModelClient:
        slots = spec.concurrency or self.options.concurrency
        client = ModelClient(spec, concurrency=slots, limit_slots=slots < self.options.concurrency,
                             counts=self.progress.model, breaker=self.options.breaker)
        self.clients[spec.abbr] = client
        self.progress.model.calls.append(client.stats)
        return client

    async def _client(self, abbr: str) -> ModelClient:
        """The client of model ``abbr``, starting its endpoint first if it starts on use
        (a starter starts its endpoint once, however many callers wait for it)."""
        spec = await self.starters[abbr](self.models[abbr])
        return self.clients.get(abbr) or self._add_client(spec)

    async def _run_stages(self) -> None:
        create = anyio.create_memory_object_stream
        model_send, model_recv = create[Sample](max(4, self.options.concurrency // 4))
        score_send, score_recv = create[Completion](16)
        store_send, store_recv = create[Completion](1024)
        judge_send, judge_recv = create[JudgeTask](JUDGE_BUFFER)
        ask_send, ask_recv = create[Any](16)
        judge_workers = max((e.spec.concurrency for e in self.endpoints.values()), default=0)
        async with anyio.create_task_group() as tg:
            self.scorer.start(tg)
            tg.start_soon(self._produce, model_send, score_send.clone(), judge_send.clone())
            for _ in range(self.options.concurrency if self.options.mode != "eval" else 0):
                tg.start_soon(self._call_model, model_recv.clone(), score_send.clone(),
                              store_send.clone(), judge_send.clone())
            for _ in range(self.scorer.parallelism if not self.scorer.inline else 0):
                tg.start_soon(self._score, score_recv.clone(), judge_send.clone())
            if judge_workers:
                tg.start_soon(self._judge_lookup, judge_recv.clone(), ask_send.clone())
            for _ in range(judge_workers):
                tg.start_soon(self._judge_ask, ask_recv.clone(), store_send.clone())
            tg.start_soon(self._write_store, store_recv)
            for stream in (model_recv, score_send, score_recv, store_send, judge_send,
                           judge_recv, ask_send, ask_recv):
                stream.close()

    async def _produce(self, model_send: ObjectSendStream[Sample],
                       score_send: ObjectSendStream[Completion],
                       judge_send: ObjectSendStream[JudgeTask]) -> None:
        async with model_send, score_send, judge_send:
            for model in self.models.values():
                for dataset in self.datasets.values():
                    if not self._included(model.abbr, dataset.abbr):
                        continue
                    batch: list[Sample] = []
                    for sample in self._samples(model, dataset):
                        batch.append(sample)
                        if len(batch) >= LOOKUP_BATCH:
                            await self._route(batch, model_send, score_send, judge_send)
                            batch = []
                    await self._route(batch, model_send, score_send, judge_send)

    def _samples(self, model: ModelSpec, dataset: DatasetSpec):  # -> Iterator[Sample]
        gen_params = {**model.gen_params, **dataset.gen_params}
        identity = model.identity()
        api = endpoint_api(model, dataset)
        for index, line, row in selected_rows(dataset, self.options.limit):
            check_row(dataset, row, line)  # validated before the run; the file may change
            values = {column: row[column] for column in dataset.input_columns}
            messages = dataset.template.render(values)
            reference = row.get(dataset.output_column) if dataset.output_column else None
            for replica in range(dataset.n):
                key = prediction_key(identity, messages, gen_params, replica, api)
                yield Sample(dataset.abbr, model.abbr, index, replica, row, reference,
                             messages, key, gen_params, api)

    async def _route(self, batch: list[Sample], model_send: ObjectSendStream[Sample],
                     score_send: ObjectSendStream[Completion],
                     judge_send: ObjectSendStream[JudgeTask]) -> None:
        """Send stored predictions straight to scoring and the rest to the model."""
        if not batch:
            return
        stored = await self.store.lookup_predictions([s.key for s in batch])
        for sample in batch:
            hit = stored.get(sample.key)
            if hit is not None:
                self.progress.cached += 1
                await self._scored(Completion(sample, "ok", hit[0], hit[1], None, hit[2],
                                              hit[3], 0, True, hit[4]), score_send, judge_send)
            elif self.options.mode == "eval":
                await self._finish(SampleResult(
                    sample.dataset, sample.model, sample.index, sample.replica, "missing",
                    sample.messages, None, None, sample.reference, None,
                    "no stored prediction (run without --mode eval to predict it)",
                    cause="no stored prediction"))
            else:
                await _send(model_send, sample)

    async def _call_model(self, receive: ObjectReceiveStream[Sample],
                          score_send: ObjectSendStream[Completion],
                          store_send: ObjectSendStream[Completion],
                          judge_send: ObjectSendStream[JudgeTask]) -> None:
        stage = self.progress.model
        async with receive, score_send, store_send, judge_send:
            while (sample := await _receive(receive)) is not None:
                if self.datasets[sample.dataset].ppl is not None:
                    await self._call_ppl(sample, score_send, store_send, judge_send)
                    continue
                client = self.clients.get(sample.model) or await self._client(sample.model)
                try:
                    # A PermanentModelError (bad key, unknown model) ends the run here.
                    result = await client.complete(sample.messages, sample.gen_params,
                                                   sample.api)
                except ModelCallError as exc:
                    if isinstance(exc, PermanentModelError):
                        raise
                    stage.failed += 1
                    completion = Completion(sample, "error", error=str(exc),
                                            attempts=exc.attempts, cause=exc.outcome)
                else:
                    stage.done += 1
                    completion = Completion(sample, "ok", result.text, result.finish_reason,
                                            None, result.prompt_tokens,
                                            result.completion_tokens, result.attempts,
                                            False, result.reasoning)
                await _send(store_send, completion)
                await self._scored(completion, score_send, judge_send)

    async def _call_ppl(self, sample: Sample, score_send: ObjectSendStream[Completion],
                        store_send: ObjectSendStream[Completion],
                        judge_send: ObjectSendStream[JudgeTask]) -> None:
        """A PPL sample: candidate likelihoods (``harness.ppl``) instead of a generation.
        Its rows go to the store; the completion (the chosen label) is scored."""
        from .ppl import PPLRunner

        if self._ppl is None:
            self._ppl = PPLRunner(self.store)
        model = self.models[sample.model]

        async def client() -> ModelClient:  # started only if a request is needed
            return self.clients.get(sample.model) or await self._client(sample.model)

        completion, rows = await self._ppl.complete(sample, self.datasets[sample.dataset],
                                                    model.identity(), client)
        for row in rows:
            await _send(store_send, row)
        stage = self.progress.model
        if completion.cached:
            self.progress.cached += 1
        elif completion.status == "ok":
            stage.done += 1
        else:
            stage.failed += 1
        await self._scored(completion, score_send, judge_send)

    async def _scored(self, completion: Completion, score_send: ObjectSendStream[Completion],
                      judge_send: ObjectSendStream[JudgeTask]) -> None:
        """Hand a completion to the score stage, or score it here when scoring is inline."""
        if self.scorer.inline:
            await self._dispatch(await self.scorer.score(completion), judge_send)
        else:
            await score_send.send(completion)

    async def _score(self, receive: ObjectReceiveStream[Completion],
                     judge_send: ObjectSendStream[JudgeTask]) -> None:
        async with receive, judge_send:
            async for completion in receive:
                await self._dispatch(await self.scorer.score(completion), judge_send)

    async def _dispatch(self, outcome: SampleResult | JudgeTask,
                        judge_send: ObjectSendStream[JudgeTask]) -> None:
        """A scored sample is finished, unless the judge has yet to see it."""
        if isinstance(outcome, JudgeTask):
            await _send(judge_send, outcome)
        else:
            await self._finish(outcome)

    async def _judge_lookup(self, receive: ObjectReceiveStream[JudgeTask],
                            ask_send: ObjectSendStream[Any]) -> None:
        """Serve stored verdicts in batches (one query each); send the rest to be asked."""
        async with receive, ask_send:
            async for first in receive:
                batch = [first, *_drain(receive, LOOKUP_BATCH - 1)]
                prepared = [(task, self.judges[task.result.dataset]) for task in batch]
                prepared = [(task, runner, *runner.prepare(task)) for task, runner in prepared]
                stored = await self.store.lookup_verdicts([p[3] for p in prepared])
                for task, runner, messages, key in prepared:
                    verdict = stored.get(key)
                    if verdict is not None:
                        self.progress.judge.done += 1
                        await self._finish(runner.cached(task, verdict, messages))
                    else:
                        await ask_send.send((task, runner, messages, key))

    async def _judge_ask(self, receive: ObjectReceiveStream[Any],
                         store_send: ObjectSendStream[Any]) -> None:
        stage = self.progress.judge
        async with receive, store_send:
            async for task, runner, messages, key in receive:
                stage.in_flight += 1
                try:
                    result, fresh = await runner.ask(task, messages, key)
                finally:
                    stage.in_flight -= 1
                stage.done += 1
                stage.failed += result.judge_status == "error"
                await store_send.send(fresh)
                await self._finish(result)

    async def _write_store(self, receive: ObjectReceiveStream[Any]) -> None:
        async with receive:
            try:
                async for first in receive:
                    # A received reply is a paid-for request: finish committing it even
                    # if the run is being cancelled.
                    with anyio.CancelScope(shield=True):
                        await self.store.write_completions([first, *_drain(receive, 511)])
            except anyio.get_cancelled_exc_class():
                # Interrupted: what is already queued was paid for too; keep it.
                with anyio.CancelScope(shield=True):
                    await self.store.write_completions(_drain(receive, None))
                raise

    async def _finish(self, result: SampleResult) -> None:
        """Count a finished sample, write its details row, hand it to the caller.

        Called in the stage that finished the sample rather than through another
        stream: accumulating is a few dict updates, not worth a task switch.
        """
        self.accumulators[(result.model, result.dataset)].add(result)
        self.progress.results += 1
        if self._out is not None:
            await self._out.send(result)

    def summaries(self) -> list[dict[str, Any]]:
        """Results JSON of every (model, dataset), with call statistics."""
        out = []
        for (model, _), acc in self.accumulators.items():
            summary = acc.summary()
            summary["evaluator"] = type(self.datasets[acc.dataset].evaluator).__name__ \
                if self.datasets[acc.dataset].evaluator else None
            runner = self.judges.get(acc.dataset)
            if runner is not None:
                summary["judge_stats"] = runner.endpoint.stats()
            out.append(summary)
        return out

    def call_stats(self) -> dict[str, dict[str, Any]]:
        """Request, retry and token counters per model (zeros for an endpoint that was
        never started because nothing needed it)."""
        stats = {abbr: vars(client.stats).copy() for abbr, client in self.clients.items()}
        stats.update({abbr: vars(CallStats()) for abbr in self.starters if abbr not in stats})
        return stats


def endpoint_api(model: ModelSpec, dataset: DatasetSpec) -> Literal["chat", "completions"]:
    """The endpoint ``model`` answers ``dataset`` on: its ``api``, where ``auto`` means
    completions for a text prompt and chat for messages."""
    if model.api == "completions" or (model.api == "auto" and dataset.template.kind == "text"):
        return "completions"
    return "chat"


# The fast paths below skip anyio's checkpoint (a full trip round the event loop) when
# an item can move at once. At thousands of samples a second with hundreds of workers
# those trips are a measurable share of the loop; every caller of these awaits network
# I/O or a full stream often enough to stay cancellable.

async def _send(send: ObjectSendStream[Any], item: Any) -> None:
    """``send.send(item)``, without a checkpoint when the stream has room."""
    try:
        send.send_nowait(item)
    except anyio.WouldBlock:
        await send.send(item)


async def _receive(receive: ObjectReceiveStream[Any]) -> Any:
    """The next item (without a checkpoint when one is waiting); None at end of stream."""
    try:
        return receive.receive_nowait()
    except anyio.WouldBlock:
        pass
    except anyio.EndOfStream:
        return None
    try:
        return await receive.receive()
    except anyio.EndOfStream:
        return None


def _drain(receive: ObjectReceiveStream[Any], limit: int | None) -> list[Any]:
    """Items already waiting in ``receive`` (at most ``limit``), without blocking."""
    items: list[Any] = []
    while limit is None or len(items) < limit:
        try:
            items.append(receive.receive_nowait())
        except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
            break
    return items
