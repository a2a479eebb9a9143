"""The streaming pipeline's wiring: the stages of ``harness.stages`` in one task group,
bounded streams between them, their resources entered through one exit stack.

The path of a sample is drawn in README.md ("How it works"); each stage's module says
what it does. Every stream is bounded, so a slow stage blocks the ones before it
(backpressure) and memory holds at most a few buffers of samples, never the dataset.
End-of-stream flows stage by stage: each task closes its send streams when its input
ends. A stage that raises cancels the others; the store writer then commits, shielded,
what the stages still send as they stop (``harness.stages.write``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
from anyio import create_memory_object_stream as memory_stream
from anyio.streams.memory import MemoryObjectSendStream

from .config import DatasetSpec
from .options import RunOptions
from .outcomes import Outcomes
from .progress import Progress
from .records import (
    Completion,
    JudgeRequest,
    JudgeTask,
    ModelSpec,
    Sample,
    SampleResult,
    StoreWrite,
)
from .stages.calls import Calls
from .stages.collect import Collector, Pair
from .stages.generate import Likelihoods, ModelClients, Starter, generate
from .stages.judge import Judges, judge_ask, judge_lookup
from .stages.offload import BATCH as OFFLOAD_BATCH
from .stages.read import read
from .stages.score import Dispatch, ScoreOutlet, Scorer, score
from .stages.write import write_store
from .store import Store
from .summary import ResultSummary
from .validate import cut_by_limit

__all__ = ["Pipeline", "Starter"]

#: Samples looked up in the store per query (predictions, then verdicts): one query per
#: batch instead of one per sample, small enough to start the first calls at once. The
#: reader's batches grow to the concurrency (up to ``LOOKUP_BATCH_MAX``): a batch at a
#: time keeps every caller fed, and a caller that finds no sample waiting costs more
#: than its call's own handling (a wait in the stream per sample).
LOOKUP_BATCH = 256

#: Keys per lookup query at most: SQLite before 3.32 takes 999 parameters per query.
LOOKUP_BATCH_MAX = 999

#: Samples waiting for a model caller, per caller: a few each, so the reader stays a
#: few lookups ahead of the callers (see ``LOOKUP_BATCH``) without running far ahead.
MODEL_BUFFER_MIN, MODEL_BUFFER_PER_CALLER = 4, 4

#: Completions waiting for a worker process (only with worker pools): the pool keeps
#: its own queue full, so a short buffer suffices.
SCORE_BUFFER = 16

#: Fresh completions, verdicts and outcomes waiting for the store writer, which commits
#: all that waits in one transaction. A commit takes four round trips to the store's
#: thread, each resumed by the event loop: at high concurrency one loop pass runs
#: hundreds of callers' work, and a caller may finish a sample or two (two rows each)
#: per pass, so the buffer holds eight rows per caller (fewer had callers wait for the
#: writer: ``bench/README.md``).
STORE_BUFFER, STORE_BUFFER_PER_CALLER = 1024, 8

#: Samples waiting for the judge. Large enough that a rate-limited judge does not hold
#: inference back, bounded so memory stays constant whatever the dataset size.
JUDGE_BUFFER = 4096

#: Judge requests with no stored verdict waiting for a judge caller: the callers are
#: paced by the judge endpoint, so a short buffer suffices.
ASK_BUFFER = 16


class Pipeline:
    """Evaluate ``models`` × ``datasets`` with stored predictions reused.

    Its parts, each given only what it uses: the ``Scorer`` (rules, worker processes),
    the ``Judges`` (runners and endpoints), the ``ModelClients`` and the ``Collector``
    (accumulators, details files).
    """

    def __init__(self, datasets: list[DatasetSpec], models: list[ModelSpec], store: Store,
                 options: RunOptions, work_dir: Path,
                 pairs: frozenset[Pair] | None = None, progress: Progress | None = None,
                 starters: Mapping[str, Starter] | None = None) -> None:
        """``work_dir`` is ``options.work_dir`` resolved; ``pairs`` the (model, dataset)
        pairs to run (``None``: all; ``--mode eval`` leaves out those never run here:
        see ``run_models.models_for_eval``)."""
        self.options = options
        self.store = store
        self.progress = progress or Progress()
        by_abbr = {d.abbr: d for d in datasets}
        self.pairs = [(m, d) for m in models for d in datasets
                      if pairs is None or (m.abbr, d.abbr) in pairs]
        self.scorer = Scorer(by_abbr, options.mode, options.rule_workers, self.progress,
                             store=store)
        # Resolved now (when any dataset is judged), so a missing judge fails before
        # any request.
        self.judges = Judges(self.scorer.plans if self.scorer.judges else {}, store,
                             options.breaker, options.timeout, options.max_attempts,
                             self.progress)
        # Outcomes are fingerprinted with the resolved judges; --mode infer scores nothing.
        outcomes = Outcomes(by_abbr, self.judges.runners) if options.mode != "infer" else None
        self.outcomes = outcomes if outcomes is not None and outcomes.templates else None
        self.scorer.outcomes = self.outcomes
        self.clients = ModelClients({m.abbr: m for m in models}, starters or {},
                                    options.concurrency, options.breaker, self.progress.model)
        likelihoods = Likelihoods(by_abbr, store)
        self.likelihoods = likelihoods if likelihoods.datasets else None
        self.collector = Collector(work_dir, by_abbr,
                                   [(m.abbr, d.abbr) for m, d in self.pairs], options.mode,
                                   options.dump_details,
                                   {d: self._judge_mode(d) for d in by_abbr}, self.progress,
                                   frozenset(d.abbr for d in datasets
                                             if cut_by_limit(d, options.limit)))

    @property
    def kept(self) -> dict[Pair, ResultSummary]:
        """(model, dataset) → the results kept on disk instead of this run's."""
        return self.collector.kept

    def _judge_mode(self, dataset: str) -> str | None:
        has_rule, judge, judge_all = self.scorer.plans[dataset]
        if judge is None or self.options.mode == "infer":
            return None
        return "judge" if not has_rule else ("parallel" if judge_all else "cascade")

    async def run(self, out: MemoryObjectSendStream[SampleResult] | None = None) -> None:
        """Run every stage to completion; per-sample results also go to ``out``."""
        self.collector.out = out
        self.collector.open()
        finished = False
        try:
            # One exit stack: each resource closes (shielded) even if another's close
            # raises, and the first error still surfaces.
            async with contextlib.AsyncExitStack() as stack:
                await stack.enter_async_context(self.scorer)
                await stack.enter_async_context(self.judges)
                if self.options.mode != "eval":
                    await stack.enter_async_context(self.clients)
                await self._run_stages()
            finished = True
        finally:
            self.collector.close(finished, self.store)

    async def _run_stages(self) -> None:
        options, progress = self.options, self.progress
        concurrency = options.concurrency
        read_batch = min(max(LOOKUP_BATCH, concurrency), LOOKUP_BATCH_MAX)
        model_buffer = max(MODEL_BUFFER_MIN, MODEL_BUFFER_PER_CALLER * concurrency)
        model_send, model_recv = memory_stream[Sample](model_buffer)
        # A backlog a worker process may score as one batch needs room to build up.
        score_buffer = 2 * OFFLOAD_BATCH if self.scorer.batches else SCORE_BUFFER
        score_send, score_recv = memory_stream[Completion](score_buffer)
        store_buffer = max(STORE_BUFFER, STORE_BUFFER_PER_CALLER * concurrency)
        store_send, store_recv = memory_stream[StoreWrite](store_buffer)
        judge_send, judge_recv = memory_stream[JudgeTask](JUDGE_BUFFER)
        ask_send, ask_recv = memory_stream[JudgeRequest](ASK_BUFFER)
        dispatch = Dispatch(judge_send, self.collector, progress.judge, store_send)
        outlet = ScoreOutlet(self.scorer, score_send, dispatch)
        callers = options.concurrency if options.mode != "eval" else 0
        async with anyio.create_task_group() as tg:
            self.scorer.start(tg)
            tg.start_soon(read, [(m, d) for m, d in self.pairs], options.limit, self.store,
                          options.mode != "eval", read_batch, model_send, outlet.clone(),
                          self.collector, progress, self.likelihoods, self.outcomes)
            calls = Calls(self.store)
            for _ in range(callers):
                tg.start_soon(generate, model_recv.clone(), self.clients, store_send.clone(),
                              outlet.clone(), progress, calls.predictions, self.likelihoods)
            for _ in range(self.scorer.parallelism if not self.scorer.inline else 0):
                tg.start_soon(score, score_recv.clone(), self.scorer, dispatch.clone())
            if self.judges.concurrency:
                tg.start_soon(judge_lookup, judge_recv.clone(), self.judges, self.store,
                              LOOKUP_BATCH, ask_send.clone(), self.collector, progress.judge,
                              store_send.clone())
            for _ in range(self.judges.concurrency):
                tg.start_soon(judge_ask, ask_recv.clone(), self.judges, store_send.clone(),
                              self.collector, progress.judge, calls.verdicts)
            tg.start_soon(write_store, store_recv, self.store, store_buffer, calls.committed)
            for stream in (model_recv, score_send, score_recv, store_send, judge_send,
                           judge_recv, ask_send, ask_recv):
                stream.close()

    def summaries(self) -> list[ResultSummary]:
        """The result of every (model, dataset), with call statistics."""
        return self.collector.summaries(self.judges.stats(), self.call_stats())

    def call_stats(self) -> dict[str, dict[str, Any]]:
        """Request, retry and token counters per model."""
        return self.clients.call_stats()
