"""The async library API: ``evaluate`` and ``open_run``; the CLI is a thin layer on top.

Nothing here calls ``asyncio.run``: both functions are awaited inside the caller's
event loop, so harness embeds in any async program::

    report = await harness.evaluate("datasets/gsm8k_demo.py", work_dir="outputs/demo")

    async with harness.open_run("my_config.py", work_dir="outputs/x") as results:
        async for result in results:       # SampleResult, as each sample finishes
            print(result.index, result.correct)
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio

from .config import RunConfig, config_from_namespace, load_config
from .errors import ConfigError, primary_error
from .models import resolve_models
from .options import RunOptions
from .pipeline import Pipeline
from .progress import Progress
from .records import SampleResult
from .results import summary_table
from .run_models import discover_name, models_for_eval, spec_record, unique_abbrs
from .stages.collect import write_results
from .store import DB_NAME, IntactCheck, Store
from .summary import ResultSummary
from .validate import validate_dataset


@dataclass
class RunReport:
    """What a finished run produced: one summary per (model, dataset) and call stats."""

    work_dir: Path
    summaries: list[ResultSummary]
    call_stats: dict[str, dict[str, Any]] = field(default_factory=dict)
    elapsed: float = 0.0
    #: Results left on disk instead of this run's (``results.keeps_previous``: it got
    #: less far, or found nothing stored); its own summary is still in ``summaries``:
    #: (model, dataset) → them.
    kept: dict[tuple[str, str], ResultSummary] = field(default_factory=dict)

    @property
    def failed(self) -> int:
        """Samples pending (not scored, or with ``mode='infer'`` not predicted): the run
        is incomplete while there are any. See ``results.Accumulator.summary``."""
        return sum(s.pending for s in self.summaries)

    @property
    def complete(self) -> bool:
        """Whether every sample of every result is scored (or, with ``mode='infer'``,
        predicted)."""
        return self.failed == 0

    def table(self) -> str:
        """The summary table (datasets × models), results kept from an earlier run
        marked."""
        return summary_table(self.summaries, self.kept)

    def result(self, dataset: str, model: str | None = None) -> ResultSummary:
        """The result of one dataset (and model, when there are several)."""
        for s in self.summaries:
            if s.dataset == dataset and (model is None or s.model == model):
                return s
        raise KeyError(dataset)


async def evaluate(config: str | Path | RunConfig | None = None,
                   options: RunOptions | None = None, *,
                   datasets: Sequence[Mapping[str, Any]] | None = None,
                   models: Sequence[Mapping[str, Any]] | None = None,
                   progress: Progress | None = None, show_progress: bool = False,
                   **settings: Any) -> RunReport:
    """Run an evaluation to the end and return its report.

    ``config`` is a config file path (or a loaded ``RunConfig``); alternatively (not
    both) pass the ``datasets`` dicts directly; ``models`` dicts replace the config's.
    ``options`` says how the run goes (``RunOptions``); its fields may also be given as
    keyword arguments (``work_dir=``, ``mode=``, ``concurrency=``, ``limit=``,
    ``overrides=``, ``dump_details=``, ``rule_workers=``, ``breaker=``), which override
    ``options``'. Results are also
    written to the work directory: ``harness.db``, ``results/MODEL/DATASET.json`` and
    ``details/...``. When an endpoint counts as down (``breaker``) the run stops with
    ``EndpointDownError``.
    """
    async with open_run(config, options, datasets=datasets, models=models,
                        progress=progress, show_progress=show_progress, _stream=False,
                        **settings) as run:
        await run.finished.wait()
    assert run.report is not None
    return run.report


class Run:
    """An evaluation in progress: iterate it for ``SampleResult``; ``report`` when done.

    The run hands each result over as it is taken, so it goes on only while someone
    takes them: iterate it, or ``await run.wait()``.
    """

    def __init__(self, receive: Any) -> None:
        self._receive = receive
        self.report: RunReport | None = None
        #: Set when every sample has been processed and its result taken (the report
        #: follows on exit).
        self.finished = anyio.Event()

    def __aiter__(self) -> AsyncIterator[SampleResult]:
        return self._receive.__aiter__()

    async def wait(self) -> None:
        """Wait for the run to end, dropping the results nobody took (for a caller that
        wants only ``report``, or stopped iterating early)."""
        async for _ in self._receive:
            pass
        await self.finished.wait()


@contextlib.asynccontextmanager
async def open_run(config: str | Path | RunConfig | None = None,
                   options: RunOptions | None = None, *,
                   datasets: Sequence[Mapping[str, Any]] | None = None,
                   models: Sequence[Mapping[str, Any]] | None = None,
                   progress: Progress | None = None, show_progress: bool = False,
                   _stream: bool = True, **settings: Any) -> AsyncIterator[Run]:
    """Start an evaluation; yields a ``Run`` to iterate per-sample results from.

    ``options`` and keyword ``settings`` as for ``evaluate``. Leaving the block early
    cancels the run (stored results stay stored). After the block, ``run.report``
    holds the summaries.
    """
    options = RunOptions.of(options, settings)
    mode, limit = options.mode, options.limit
    # The store's pages are read while the config loads and the datasets are validated
    # (see IntactCheck), from the moment the work directory is known.
    work = await _resolved(options.work_dir) if options.work_dir else None
    intact = IntactCheck(work) if work is not None else None
    try:
        run_config = _load(config, datasets, models)
        if work is None:
            # Without a work_dir, each config gets its own, so two configs never share a
            # store.
            default = (f"outputs/{run_config.path.stem}" if run_config.path
                       else "outputs/default")
            work = await _resolved(run_config.work_dir or default)
            intact = IntactCheck(work)
        specs = resolve_models(run_config.models, options.overrides)
        if mode != "infer":
            _check_scored(run_config)
        rows = {d.abbr: validate_dataset(d, limit).rows * d.n for d in run_config.datasets}
        # A run that predicts and scores needs what the evaluators need (a code sandbox)
        # before its first request. ``--mode eval`` sends none, so it finds out per
        # sample: a stored execution scores without a sandbox, the others are sandbox
        # errors.
        if mode == "all":
            for dataset in run_config.datasets:
                if dataset.evaluator is not None:
                    dataset.evaluator.check_ready()
        if mode == "eval" and not (work / DB_NAME).exists():
            # Nothing to re-score: refused before a store is made where there was none.
            raise ConfigError(f"{work} holds no recorded predictions of these datasets to "
                              "re-score; run without --mode eval first", field="--mode")
    except BaseException:
        if intact is not None:
            intact.cancel()  # the run stops before its store opens: nobody waits for it
        raise
    progress = progress or Progress()
    started = time.monotonic()
    async with contextlib.AsyncExitStack() as stack:
        # The store first: a locked or incompatible work directory fails before any
        # server is started or request sent.
        store = await stack.enter_async_context(Store(work, intact))
        starters = {}
        pairs = None
        if mode == "eval":
            selection = await models_for_eval(specs, store, run_config.datasets, limit)
            specs, pairs = selection.models, selection.pairs
        elif specs is None:
            # Started by the first sample that needs it: a rerun served from the store
            # never starts it.
            from .embedded import EmbeddedServer, context_per_slot, embedded_spec

            embedded = EmbeddedServer(stack, context_per_slot(run_config.datasets, limit),
                                      notify=progress.note)
            specs = [embedded_spec()]
            starters[specs[0].abbr] = embedded.start
        else:
            specs = [await discover_name(s) for s in specs]
        specs = unique_abbrs(specs)
        if mode != "eval":
            await store.record_models(spec_record(s) for s in specs)
        progress.total = sum(n for d, n in rows.items() for s in specs
                             if pairs is None or (s.abbr, d) in pairs)
        pipeline = Pipeline(run_config.datasets, specs, store, options, work, pairs,
                            progress, starters)
        send, receive = anyio.create_memory_object_stream[SampleResult](0)
        run = Run(receive)
        finished = run.finished
        printer = anyio.CancelScope()
        try:
            async with anyio.create_task_group() as tg:
                if show_progress:
                    tg.start_soon(_print_until_cancelled, printer, progress)

                async def drive() -> None:
                    try:
                        async with send:
                            # evaluate() reads no per-sample results: skip the hand-over.
                            await pipeline.run(send if _stream else None)
                        finished.set()
                    finally:
                        printer.cancel()

                tg.start_soon(drive)
                try:
                    yield run
                finally:
                    # Cancel before closing the receiver, so an early exit by the caller
                    # is a cancellation of the run, not a broken-stream error inside it.
                    if not finished.is_set():
                        tg.cancel_scope.cancel()
                    receive.close()
        except BaseExceptionGroup as group:
            raise primary_error(group) from None
        if not finished.is_set():
            return  # the caller left early: no report for a partial run
        report = RunReport(work, pipeline.summaries(), pipeline.call_stats(),
                           time.monotonic() - started, pipeline.kept)
        store.check_work_dir()
        write_results(work, report.summaries, report.kept, report.elapsed)
        store.check_work_dir()  # replaced while they were written: say so
        run.report = report


def _check_scored(run_config: RunConfig) -> None:
    """A run that scores needs an evaluator for every dataset: without one, each sample
    would be reported as scored and wrong."""
    for i, dataset in enumerate(run_config.datasets):
        if dataset.evaluator is None:
            path = str(run_config.path) if run_config.path is not None else None
            raise ConfigError(f"dataset {dataset.abbr!r} has no evaluator, so nothing can "
                              "score it: add one (e.g. dict(type=AccEvaluator)), or only "
                              "predict with --mode infer (mode='infer')",
                              path=path, field=f"datasets[{i}].eval_cfg.evaluator")


async def _print_until_cancelled(scope: anyio.CancelScope, progress: Progress) -> None:
    """Show ``progress`` on stderr until ``scope`` is cancelled (at the run's end)."""
    from .progress.display import print_progress  # loads rich only when shown

    with scope:
        await print_progress(progress)


async def _resolved(work_dir: str | Path) -> Path:
    """``work_dir`` resolved once: a symlink re-pointed during the run must not move its
    files."""
    return Path(await anyio.Path(work_dir).resolve())


def _load(config: str | Path | RunConfig | None,
          datasets: Sequence[Mapping[str, Any]] | None,
          models: Sequence[Mapping[str, Any]] | None) -> RunConfig:
    if config is not None and datasets is not None:
        # Silently running the config's datasets instead would report the wrong ones.
        raise TypeError("pass a config or datasets=, not both (models= may go with "
                        "either: it replaces the config's models)")
    if isinstance(config, RunConfig):
        loaded = config
    elif config is not None:
        loaded = load_config(config)
    else:
        loaded = config_from_namespace({"datasets": list(datasets or [])})
    if models is not None:
        loaded = replace(loaded, models=list(models))
    return loaded
