"""The collect stage: every finished sample is counted per (model, dataset), its details
row streamed to disk and, for ``open_run``, handed to the caller; at the end the details
files are put in order and the results files written.

Collecting is not a stream of its own: each stage hands the samples it finishes to the
``Collector`` directly, since counting is a few dict updates, less than a task switch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from anyio.streams.memory import MemoryObjectSendStream as ObjectSendStream

from ..config import DatasetSpec
from ..errors import WorkDirError
from ..paths import details_path, result_path
from ..progress import Progress
from ..records import SampleResult
from ..results import Accumulator, keeps_previous, read_summary, write_json
from ..store import Store
from ..summary import ResultSummary

#: A (model abbr, dataset abbr) pair: one result of the run.
Pair = tuple[str, str]


class Collector:
    """The sink of the pipeline: one ``Accumulator`` per (model, dataset) of the run."""

    def __init__(self, work_dir: Path, datasets: Mapping[str, DatasetSpec],
                 pairs: Iterable[Pair], mode: str, dump_details: bool,
                 judge_modes: Mapping[str, str | None], progress: Progress,
                 limited: frozenset[str]) -> None:
        """``limited``: the datasets ``--limit`` cuts short."""
        self.work_dir = work_dir
        self.datasets = datasets
        self.progress = progress
        self.accumulators = {
            (m, d): Accumulator(m, d, mode,
                                details_path(work_dir, m, d) if dump_details else None,
                                judge_mode=judge_modes[d], replicas=datasets[d].n,
                                pass_k=getattr(datasets[d].evaluator, "k", None),
                                evaluator=datasets[d].evaluator)
            for m, d in pairs}
        #: (model, dataset) → the results kept on disk instead of this run's
        #: (``results.keeps_previous``).
        self.kept: dict[Pair, ResultSummary] = {}
        self._limited = limited
        #: Where finished samples also go (``open_run``'s iterator), if anywhere.
        self.out: ObjectSendStream[SampleResult] | None = None

    def open(self) -> None:
        """Start every details file."""
        for acc in self.accumulators.values():
            acc.open()

    async def add(self, result: SampleResult) -> None:
        """Count a finished sample, write its details row, hand it to the caller."""
        self.accumulators[(result.model, result.dataset)].add(result)
        self.progress.results += 1
        if self.out is not None:
            await self.out.send(result)

    def close(self, finished: bool, store: Store) -> None:
        """Close every details file (the first error is raised after all are closed).

        An interrupted run leaves the previous details file as it was, and so does one
        whose previous result is kept (``results.keeps_previous``); a finished run that
        replaces a result without writing details removes the previous details file.
        None is written where the work directory's path no longer leads to the locked
        directory.
        """
        try:
            store.check_work_dir()
        except WorkDirError:
            for acc in self.accumulators.values():
                acc.abandon()
            raise
        error: BaseException | None = None
        for pair, acc in self.accumulators.items():
            previous = read_summary(result_path(self.work_dir, *pair))
            if finished and keeps_previous(acc.summary(), previous, pair[1] in self._limited):
                assert previous is not None
                self.kept[pair] = previous
            try:
                acc.close(keep=finished and pair not in self.kept)
                if finished and pair not in self.kept and acc.details_path is None:
                    # Replaced without details (--no-dump-eval-details): the earlier
                    # run's rows would describe another result.
                    details_path(self.work_dir, *pair).unlink(missing_ok=True)
            except OSError as exc:
                error = error or exc
        if error is not None:
            raise error

    def summaries(self, judge_stats: Mapping[str, dict[str, Any]],
                  call_stats: Mapping[str, dict[str, Any]]) -> list[ResultSummary]:
        """The result of every (model, dataset); ``judge_stats`` maps a dataset to its
        judge endpoint's statistics, ``call_stats`` a model to its client's."""
        out = []
        for acc in self.accumulators.values():
            evaluator = self.datasets[acc.dataset].evaluator
            out.append(replace(acc.summary(),
                               evaluator=type(evaluator).__name__ if evaluator else None,
                               evaluator_options=evaluator.metric_options() if evaluator
                               else None,
                               judge_stats=judge_stats.get(acc.dataset),
                               call_stats=call_stats.get(acc.model)))
        return out


def write_results(work_dir: Path, summaries: list[ResultSummary],
                  kept: Mapping[Pair, ResultSummary], elapsed: float) -> None:
    """Write each result and ``summary.json``; a kept result stays as it was, and
    ``summary.json`` lists it, so it always agrees with ``results/``."""
    current = []
    for summary in summaries:
        if summary.pair in kept:
            current.append(kept[summary.pair].to_json())
        else:
            data = summary.to_json()
            write_json(result_path(work_dir, *summary.pair), data)
            current.append(data)
    write_json(work_dir / "summary.json",
               {"elapsed_seconds": round(elapsed, 3), "results": current})
