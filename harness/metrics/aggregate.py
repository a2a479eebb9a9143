"""The metrics of one (model, dataset) from its details rows, for the results stage.

``metric_values(evaluator, rows)`` takes the details-JSONL rows of a run (one per
(index, replica), with ``status``, ``reference`` and the evaluator's per-sample fields)
and returns one ``MetricValue`` per metric of ``evaluator.statistics()``, primary first.

* A scored sample without the metric's fields (an empty reply or a failed extraction,
  which never reach the evaluator) counts as an empty prediction: BLEU gets its
  reference length and no matches, EM and F1 get 0, accuracy counts it wrong.
* A pending sample (model error, judge error …) is never folded into either side:
  the value is ``None``, and for a proportion or a mean ``bounds`` spans every pending
  sample as an empty prediction … as its own reference (for accuracy: all wrong … all
  right). A corpus metric (BLEU, chrF) has no bounds: it is not monotone in one
  sample's output (an empty or a wrong reply can raise it, when the others are longer
  than their references), so those two fillings do not enclose its final value.
* Replicas of one sample are summed into one row before resampling, so the interval
  reflects the number of distinct samples, not of replicas.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..records import SCORED_STATUSES
from .intervals import RESAMPLES, SEED
from .statistic import Statistic
from .value import MetricValue

if TYPE_CHECKING:
    from ..evaluators.base import BaseEvaluator


def aggregate_details(stat: Statistic, details: Sequence[Mapping[str, Any]],
                      resamples: int = RESAMPLES, seed: int = SEED) -> MetricValue:
    """``stat`` over per-sample details, each one sample, all of them scored."""
    value, ci = stat.measure([stat.row(d) for d in details], resamples, seed)
    return MetricValue(stat.name, value, ci, (stat.key,), len(details))


def best_prediction(reference: Any) -> str:
    """The prediction that scores best against ``reference``: its first reference."""
    if isinstance(reference, (list, tuple)):
        return str(reference[0]) if reference else ""
    return "" if reference is None else str(reference)


class Filler:
    """Per-sample fields for samples the evaluator did not score, memoized per row."""

    def __init__(self, evaluator: BaseEvaluator, stats: Sequence[Statistic]) -> None:
        self.evaluator = evaluator
        self.keys = {s.key for s in stats}
        # Accuracy-style metrics need only ``correct``: no evaluator call (math-verify
        # would run in the results stage otherwise).
        self.calls = bool(self.keys - {"correct"})

    def fill(self, reference: Any, best: bool) -> Mapping[str, Any]:
        """The metric fields of an empty (or, if ``best``, perfect) answer to ``reference``."""
        detail: dict[str, Any] = {"correct": best}
        if self.calls:
            prediction = best_prediction(reference) if best else ""
            detail.update(self.evaluator.score_sample(prediction, reference, None))
            detail["correct"] = best
        return detail

    def scored(self, row: Mapping[str, Any], reference: Any) -> Mapping[str, Any]:
        """A scored row as it counts: itself, or, if it lacks the metric fields (no
        answer was extracted), an empty answer's fields against its ``reference``."""
        if self.keys <= row.keys() and all(row[k] is not None for k in self.keys):
            return row
        # The reference still counts: BLEU's lengths, chrF's reference n-grams.
        return self.fill(reference, best=False)


def clustered(stat: Statistic, rows: Iterable[tuple[Any, Mapping[str, Any]]]) -> list[list[float]]:
    """``stat``'s numbers per sample index, summed over that index's replicas, in order."""
    sums: OrderedDict[Any, list[float]] = OrderedDict()
    for index, detail in rows:
        numbers = stat.row(detail)
        if index in sums:
            sums[index] = [a + b for a, b in zip(sums[index], numbers, strict=True)]
        else:
            sums[index] = numbers
    return list(sums.values())


class MetricSums:
    """The metrics of one (model, dataset), fed one sample at a time.

    Memory holds only numbers: per sample index, each metric's row of summed
    statistics (BLEU's 10 counts, chrF's 18, ``[value, 1]`` for a mean), and for the
    pending samples two running sums (as empty predictions, as their references).
    Texts are never kept, so a streaming run's memory does not grow with reply length.
    """

    def __init__(self, evaluator: BaseEvaluator) -> None:
        self.stats = evaluator.statistics()
        self.filler = Filler(evaluator, self.stats)
        self.n = 0
        self.pending = 0
        # Per metric: sample index → its row (replicas of one index summed).
        self._rows: list[dict[Any, list[float]]] = [{} for _ in self.stats]
        # Per metric: the pending samples' sums as empty answers, and as perfect ones.
        self._worst: list[list[float] | None] = [None for _ in self.stats]
        self._best: list[list[float] | None] = [None for _ in self.stats]
        # The last ``values()`` and the sample count it was computed at: a summary is
        # asked for more than once at the end of a run, the bootstrap need not be.
        self._cache: tuple[int, dict[str, MetricValue]] | None = None

    def add(self, index: Any, status: str, fields: Mapping[str, Any],
            reference: Any) -> None:
        """Count one sample: its ``status``, its evaluator ``fields`` (the details row's
        per-sample fields) and ``reference`` (read for a sample without those fields:
        pending, or scored with no answer extracted)."""
        self.n += 1
        if status in SCORED_STATUSES:
            detail = self.filler.scored(fields, reference)
            for stat, rows in zip(self.stats, self._rows, strict=True):
                rows[index] = _plus(rows.get(index), stat.row(detail))
            return
        self.pending += 1
        worst = self.filler.fill(reference, best=False)
        best = self.filler.fill(reference, best=True)
        for i, stat in enumerate(self.stats):
            self._worst[i] = _plus(self._worst[i], stat.row(worst))
            self._best[i] = _plus(self._best[i], stat.row(best))

    def add_row(self, row: Mapping[str, Any]) -> None:
        """Count one details-JSONL row."""
        self.add(row.get("index"), str(row.get("status")), row, row.get("reference"))

    def values(self, resamples: int = RESAMPLES, seed: int = SEED) -> dict[str, MetricValue]:
        """Every metric, primary first: a value and 95% interval when nothing is
        pending, else ``bounds`` (pending samples all empty … all perfect; none for a
        corpus metric)."""
        if self._cache is not None and self._cache[0] == self.n:
            return dict(self._cache[1])
        out: dict[str, MetricValue] = {}
        for i, stat in enumerate(self.stats):
            rows = list(self._rows[i].values())
            if not self.pending:
                value, ci = stat.measure(rows, resamples, seed)
                out[stat.name] = MetricValue(stat.name, value, ci, (stat.key,), self.n)
                continue
            bounds = None
            if stat.kind != "corpus":  # see the module docstring
                worst, best = self._worst[i], self._best[i]
                assert worst is not None and best is not None  # set with the first pending
                low, high = stat.scores_of([*rows, worst]), stat.scores_of([*rows, best])
                bounds = (min(low, high), max(low, high))
            out[stat.name] = MetricValue(stat.name, None, None, (stat.key,), self.n,
                                         bounds=bounds)
        self._cache = (self.n, out)
        return dict(out)


def _plus(total: list[float] | None, numbers: list[float]) -> list[float]:
    return numbers if total is None else [a + b for a, b in zip(total, numbers, strict=True)]


def metric_values(evaluator: BaseEvaluator, rows: Iterable[Mapping[str, Any]],
                  resamples: int = RESAMPLES, seed: int = SEED) -> dict[str, MetricValue]:
    """Every metric of ``evaluator`` over the details rows of one (model, dataset)."""
    sums = MetricSums(evaluator)
    for row in rows:
        sums.add_row(row)
    return sums.values(resamples, seed)


def results_entry(evaluator: BaseEvaluator, rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The proposed results-JSON fields: ``{"primary": name, "metrics": {name: {...}}}``."""
    values = metric_values(evaluator, rows)
    return {"primary": next(iter(values)),
            "metrics": {name: mv.to_json() for name, mv in values.items()}}
