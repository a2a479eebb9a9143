"""The judge stages: stored verdicts looked up in batches, the rest asked.

``judge_lookup`` (one task) renders each ``JudgeTask``'s judge messages, looks their
verdict keys up in one query per batch and finishes the samples a stored verdict
answers; the others go on as ``JudgeRequest``s to the ``judge_ask`` tasks (the judge
endpoints' concurrency), whose fresh verdicts go to the store writer. Either way a
judged result that is final goes to the store writer as an outcome row too
(``harness.outcomes``). Caching, pacing, re-asks and the decision rules are
``harness.judge.runner``'s.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import replace
from types import TracebackType
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream as ObjectReceiveStream
from anyio.streams.memory import MemoryObjectSendStream as ObjectSendStream

from ..breaker import BreakerPolicy
from ..evaluators.llm import GenericLLMEvaluator
from ..judge.runner import JudgeEndpoint, JudgeRunner
from ..judge.spec import JudgeSpec, judge_spec
from ..keys import content_key
from ..outcomes import FINAL_VERDICTS, judged_row
from ..progress import Progress, StageCounts
from ..records import JudgeRequest, JudgeTask, SampleResult, StoreWrite, VerdictRecord
from ..store import Store
from .calls import Shared
from .collect import Collector
from .streams import drain, send
from .streams import receive as next_item

#: Per dataset: whether it has a rule layer, its judge (if any), and whether the judge
#: sees every sample (``harness.evaluators.llm.judge_plan``).
Plan = tuple[bool, GenericLLMEvaluator | None, bool]


class Judges:
    """The judge runner of each judged dataset and the endpoints they share.

    Every judge config is resolved on construction, so a missing judge fails before any
    request. An async context manager: every endpoint closes on exit, even if another's
    close raises.
    """

    def __init__(self, plans: Mapping[str, Plan], store: Store, breaker: BreakerPolicy,
                 timeout: float | None, max_attempts: int | None,
                 progress: Progress) -> None:
        self.timeout = timeout
        self.max_attempts = max_attempts
        #: dataset abbr → its runner.
        self.runners: dict[str, JudgeRunner] = {}
        self.endpoints: dict[str, JudgeEndpoint] = {}
        specs = {abbr: judge_spec(self._judge_cfg(judge.judge_cfg),
                                  f"datasets[{i}].eval_cfg.evaluator.judge_cfg")
                 for i, (abbr, (_, judge, _)) in enumerate(plans.items()) if judge is not None}
        # Datasets judged by the same endpoint, model and key share one client, one pacer
        # and one set of counts: the provider's limits are the endpoint's, whatever each
        # dataset's config says, so the strictest limits any of them sets apply to all.
        # Each runner keeps its own generation and re-ask settings; different attempt
        # settings (timeouts, attempts, transport) keep their own clients. (The key is
        # part of an in-memory dict key only, never stored.)
        groups: dict[str, list[str]] = {}
        for abbr, spec in specs.items():
            m = spec.model
            ident = content_key("endpoint", id=m.identity(), key=m.api_key,
                                attempts=[m.timeout, m.max_attempts, m.connect_timeout,
                                          m.rate_limit_timeout, m.transport])
            groups.setdefault(ident, []).append(abbr)
        shared = {ident: strictest([specs[a] for a in abbrs]) for ident, abbrs in groups.items()}
        # One ``judge_ask`` task per slot of the largest endpoint: an endpoint with as
        # many slots as there are tasks can never be asked more, so only a smaller one
        # holds a slot per attempt (a slot costs two trips round the event loop).
        tasks = max((spec.concurrency for spec in shared.values()), default=0)
        names: dict[str, int] = {}
        for ident, abbrs in groups.items():
            spec = shared[ident]
            endpoint = self.endpoints[ident] = JudgeEndpoint(
                spec, breaker, limit_slots=spec.concurrency < tasks)
            # Two clients of one endpoint (other timeouts, say) are counted apart: their
            # statistics lines, keyed by name, must not replace one another.
            names[endpoint.name] = count = names.get(endpoint.name, 0) + 1
            if count > 1:
                endpoint.name += f" #{count}"
            progress.judge.calls.append(endpoint.client.stats)
            for abbr in abbrs:
                judge = plans[abbr][1]
                assert judge is not None
                self.runners[abbr] = JudgeRunner(judge, endpoint, store, specs[abbr])

    def _judge_cfg(self, cfg: Mapping[str, Any] | None) -> dict[str, Any]:
        """``judge_cfg`` with the run's ``--timeout``/``--max-attempts`` where it sets
        none of its own: a judge is bounded like the model, never 600 s × 6 by default."""
        cfg = dict(cfg or {})
        if self.timeout is not None:
            cfg.setdefault("timeout", self.timeout)
        if self.max_attempts is not None and "retry" not in cfg:
            cfg.setdefault("max_attempts", self.max_attempts)
        return cfg

    @property
    def concurrency(self) -> int:
        """Judge calls in flight at once: the largest endpoint's (0 without a judge)."""
        return max((e.spec.concurrency for e in self.endpoints.values()), default=0)

    def stats(self) -> dict[str, dict[str, Any]]:
        """dataset abbr → its judge endpoint's statistics."""
        return {abbr: runner.endpoint.stats() for abbr, runner in self.runners.items()}

    async def __aenter__(self) -> Judges:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        with anyio.CancelScope(shield=True):
            async with contextlib.AsyncExitStack() as stack:
                for endpoint in self.endpoints.values():
                    stack.push_async_callback(endpoint.aclose)


def strictest(specs: list[JudgeSpec]) -> JudgeSpec:
    """The first of ``specs`` (one endpoint's, from each dataset that uses it, alike in
    all but their limits) with the lowest ``concurrency``, ``rpm`` and ``tpm`` any of them
    sets (the default concurrency when none sets one)."""
    def lowest(values: list[float | None]) -> float | None:
        return min((v for v in values if v is not None), default=None)

    first = specs[0]
    model = replace(first.model, rpm=lowest([s.rpm for s in specs]),
                    tpm=lowest([s.tpm for s in specs]))
    concurrency = lowest([s.model.concurrency for s in specs])
    return replace(first, model=model,
                   concurrency=int(concurrency) if concurrency else first.concurrency)


async def _finish(request: JudgeRequest, result: SampleResult,
                  store_send: ObjectSendStream[StoreWrite], collect: Collector) -> None:
    """A judged sample's outcome row to the store (if it is final), its result on."""
    if (row := judged_row(request, result)) is not None:
        await send(store_send, row)
    await collect.add(result)


async def _reuse(request: JudgeRequest, verdict: VerdictRecord, runner: JudgeRunner,
                 counts: StageCounts, store_send: ObjectSendStream[StoreWrite],
                 collect: Collector) -> None:
    """Finish a request with a verdict already paid for (stored, or shared in this run)."""
    counts.done += 1
    counts.reused += 1
    await _finish(request, runner.cached(request.task, verdict, request.messages),
                  store_send, collect)


async def judge_lookup(receive: ObjectReceiveStream[JudgeTask], judges: Judges, store: Store,
                       batch_size: int, ask_send: ObjectSendStream[JudgeRequest],
                       collect: Collector, counts: StageCounts,
                       store_send: ObjectSendStream[StoreWrite]) -> None:
    """Serve stored verdicts in batches (one query each); send the rest to be asked."""
    async with receive, ask_send, store_send:
        async for first in receive:
            batch = [first, *drain(receive, batch_size - 1)]
            requests = [JudgeRequest(task, *judges.runners[task.result.dataset].prepare(task))
                        for task in batch]
            stored = await store.lookup_verdicts([r.key for r in requests])
            for request in requests:
                verdict = stored.get(request.key)
                runner = judges.runners[request.task.result.dataset]
                if verdict is not None and runner.serves(verdict):
                    await _reuse(request, verdict, runner, counts, store_send, collect)
                else:
                    await send(ask_send, request)


async def judge_ask(receive: ObjectReceiveStream[JudgeRequest], judges: Judges,
                    store_send: ObjectSendStream[StoreWrite], collect: Collector,
                    counts: StageCounts, calls: Shared[VerdictRecord]) -> None:
    """Ask the judge about each request; the verdict to the store, the result on. A
    request whose verdict key this run already asked takes that verdict (``calls``), if
    it serves the request's judge."""
    async with receive, store_send:
        while (request := await next_item(receive)) is not None:
            runner = judges.runners[request.task.result.dataset]
            shared = None if calls.claim(request.key) else await calls.reuse(
                request.key, runner.serves)
            if shared is not None:
                # As the store gives it on a rerun: what the verdict cost, marked reused.
                await _reuse(request, replace(shared, cached=True), runner, counts,
                             store_send, collect)
                continue
            counts.in_flight += 1
            final = None
            try:
                result, fresh = await runner.ask(request.task, request.messages, request.key)
                final = fresh if fresh.status in FINAL_VERDICTS else None
            finally:
                counts.in_flight -= 1
                calls.finish(request.key, final)
            counts.done += 1
            counts.failed += result.judge_status == "error"
            # Shielded: a verdict received was paid for, cancelled or not.
            await send(store_send, fresh, shield=True)
            await _finish(request, result, store_send, collect)
