"""The generate stage: model calls, each with its retries, paced and bounded per model.

Many copies of ``generate`` run at once (the run's concurrency), sharing one
``ModelClient`` per model through ``ModelClients``. Every reply (or failure after its
retries) goes to the store writer and on to scoring; a failed call is data (a
``Completion`` with status ``error``), except a permanent one (a bad key, an unknown
model), which stops the run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream as ObjectReceiveStream
from anyio.streams.memory import MemoryObjectSendStream as ObjectSendStream

from ..breaker import BreakerPolicy
from ..client import ModelClient
from ..config import DatasetSpec
from ..errors import ModelCallError, PermanentModelError
from ..progress import Progress, StageCounts
from ..records import Completion, ModelSpec, Sample, StoreWrite
from ..retry import CallStats
from ..store import Store
from .calls import Reply, Shared
from .score import ScoreOutlet
from .streams import receive as next_item
from .streams import send

if TYPE_CHECKING:
    from ..ppl import PPLRunner

#: Starts an endpoint on first use and returns the spec that points at it; called by
#: every worker that needs the endpoint, it starts it once.
Starter = Callable[[ModelSpec], Awaitable[ModelSpec]]


class ModelClients:
    """One ``ModelClient`` per model under evaluation, closed together on exit.

    A model with a ``Starter`` (the embedded server) gets its client when the first
    sample that needs it arrives, so a rerun served from the store never starts it.
    """

    def __init__(self, models: Mapping[str, ModelSpec], starters: Mapping[str, Starter],
                 concurrency: int, breaker: BreakerPolicy, counts: StageCounts) -> None:
        self.models = models
        self.starters = dict(starters)
        self.concurrency = concurrency
        self.breaker = breaker
        self.counts = counts
        #: abbr → client, for every model whose client exists (read without awaiting).
        self.ready: dict[str, ModelClient] = {}

    async def __aenter__(self) -> ModelClients:
        for spec in self.models.values():
            if spec.abbr not in self.starters:
                self._add(spec)
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        # Each client closes even if another's close raises; the first error surfaces.
        with anyio.CancelScope(shield=True):
            async with contextlib.AsyncExitStack() as stack:
                for client in self.ready.values():
                    stack.push_async_callback(client.aclose)

    async def get(self, abbr: str) -> ModelClient:
        """The client of model ``abbr``, starting its endpoint first if it starts on use
        (a starter starts its endpoint once, however many callers wait for it)."""
        client = self.ready.get(abbr)
        if client is not None:
            return client
        spec = await self.starters[abbr](self.models[abbr])
        return self.ready.get(abbr) or self._add(spec)

    def _add(self, spec: ModelSpec) -> ModelClient:
        slots = spec.concurrency or self.concurrency
        client = ModelClient(spec, concurrency=slots, limit_slots=slots < self.concurrency,
                             counts=self.counts, breaker=self.breaker)
        self.ready[spec.abbr] = client
        self.counts.calls.append(client.stats)
        return client

    def call_stats(self) -> dict[str, dict[str, Any]]:
        """Request, retry and token counters per model (zeros for an endpoint that was
        never started because nothing needed it)."""
        stats = {abbr: vars(client.stats).copy() for abbr, client in self.ready.items()}
        stats.update({abbr: vars(CallStats()) for abbr in self.starters if abbr not in stats})
        return stats


class Likelihoods:
    """The PPL datasets of a run and the one ``PPLRunner`` their samples share: a PPL
    sample gets candidate likelihoods (``harness.ppl``) instead of a generation."""

    def __init__(self, datasets: Mapping[str, DatasetSpec], store: Store) -> None:
        self.datasets = {abbr: d for abbr, d in datasets.items() if d.ppl is not None}
        self._runner: PPLRunner | None = None
        self._store = store

    def runner(self) -> PPLRunner:
        """The run's one ``PPLRunner``, made for the first PPL sample."""
        from ..ppl import PPLRunner

        if self._runner is None:
            self._runner = PPLRunner(self._store)
        return self._runner

    async def stored(self, sample: Sample, model: ModelSpec) -> Completion | None:
        """A PPL sample's completion from the store alone, or ``None`` (``--mode eval``)."""
        return await self.runner().stored(sample, self.datasets[sample.dataset],
                                          model.identity())

    async def complete(self, sample: Sample, clients: ModelClients,
                       store_send: ObjectSendStream[StoreWrite], outlet: ScoreOutlet,
                       counts: StageCounts, progress: Progress, calls: Shared[Reply]) -> None:
        """Score one PPL sample: its request rows to the store, the chosen label on;
        ``calls`` shares its requests with the run's other samples."""

        async def client() -> ModelClient:  # started only if a request is needed
            return clients.ready.get(sample.model) or await clients.get(sample.model)

        async def keep(row: Completion) -> None:
            await send(store_send, row, shield=True)  # a paid-for request

        completion = await self.runner().complete(
            sample, self.datasets[sample.dataset], clients.models[sample.model].identity(),
            client, keep, calls)
        if completion.cached:
            progress.cached += 1
        else:
            counts.done += 1
            counts.failed += completion.status != "ok"
        await outlet.put(completion)


async def generate(receive: ObjectReceiveStream[Sample], clients: ModelClients,
                   store_send: ObjectSendStream[StoreWrite], outlet: ScoreOutlet,
                   progress: Progress, calls: Shared[Reply],
                   likelihoods: Likelihoods | None = None) -> None:
    """Samples in; each one's completion to ``store_send`` and to ``outlet``. A sample
    whose key this run already asked for takes that reply instead (``calls``)."""
    counts = progress.model
    async with receive, store_send, outlet:
        while (sample := await next_item(receive)) is not None:
            if likelihoods is not None and sample.dataset in likelihoods.datasets:
                await likelihoods.complete(sample, clients, store_send, outlet, counts,
                                           progress, calls)
                continue
            shared = None if calls.claim(sample.key) else await calls.reuse(sample.key)
            if shared is not None:
                progress.cached += 1
                text, finish_reason, reasoning = shared
                await outlet.put(Completion(sample, "ok", text, finish_reason, None, 0, 0, 0,
                                            True, reasoning))
                continue
            reply: Reply | None = None
            try:
                completion = await _call(sample, clients, counts)
                if completion.status == "ok":
                    reply = (completion.text, completion.finish_reason, completion.reasoning)
            finally:
                calls.finish(sample.key, reply)
            # Shielded: a received reply was paid for, cancelled or not.
            await send(store_send, completion, shield=True)
            await outlet.put(completion)


async def _call(sample: Sample, clients: ModelClients, counts: StageCounts) -> Completion:
    """Ask the model for ``sample``: its reply, or the failure after the retries."""
    client = clients.ready.get(sample.model) or await clients.get(sample.model)
    try:
        # A PermanentModelError (bad key, unknown model) ends the run here.
        result = await client.complete(sample.messages, sample.gen_params, sample.api)
    except ModelCallError as exc:
        if isinstance(exc, PermanentModelError):
            raise
        counts.failed += 1
        counts.done += 1  # done counts failures too, as in the other stages
        return Completion(sample, "error", error=str(exc), attempts=exc.attempts,
                          cause=exc.outcome)
    counts.done += 1
    return Completion(sample, "ok", result.text, result.finish_reason, None,
                      result.prompt_tokens, result.completion_tokens, result.attempts,
                      False, result.reasoning)
