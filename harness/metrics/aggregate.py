"""The metrics of one (model, dataset) from its details rows, for the results stage.

``metric_values(evaluator, rows)`` takes the details-JSONL rows of a run (one per
(index, replica), with ``status``, ``reference`` and the evaluator's per-sample fields)
and returns one ``MetricValue`` per metric of ``evaluator.statistics()``, primary first.

* A scored sample without the metric's fields (an empty reply or a failed extraction,
  which never reach the evaluator) counts as an empty prediction: BLEU gets its
  reference length and no matches, EM and F1 get 0, accuracy counts it wrong.
* A pending sample (model error, judge error …) is never folded into either side:
  the value is ``None`` and ``bounds`` spans every pending sample as an empty
  prediction … as its own reference (for accuracy: all wrong … all right).
* Replicas of one sample are summed into one row before resampling, so the interval
  reflects the number of distinct samples, not of replicas.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

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

    def fill(self, row: Mapping[str, Any], best: bool) -> Mapping[str, Any]:
        """``row`` with the metric fields of an empty (or, if ``best``, perfect) answer."""
        detail: dict[str, Any] = {"correct": best}
        if self.calls:
            reference = row.get("reference")
            prediction = best_prediction(reference) if best else ""
            detail.update(self.evaluator.score_sample(prediction, reference, None))
            detail["correct"] = best
        return detail

    def scored(self, row: Mapping[str, Any]) -> Mapping[str, Any]:
        """A scored row as it counts: itself, or an empty answer's fields if it lacks them."""
        if self.keys <= row.keys() and all(row[k] is not None for k in self.keys):
            return row
        return self.fill(row, best=False)


def clustered(stat: Statistic, rows: Iterable[tuple[Any, Mapping[str, Any]]]) -> list[list[float]]:
    """``stat``'s numbers per sample index, summed over that index's replicas, in order."""
    sums: OrderedDict[Any, list[float]] = OrderedDict()
    for index, detail in rows:
        numbers = stat.row(detail)
        if index in sums:
            sums[index] = [a + b for a, b in zip(sums[index], numbers)]
        else:
            sums[index] = numbers
    return list(sums.values())


def metric_values(evaluator: BaseEvaluator, rows: Iterable[Mapping[str, Any]],
                  resamples: int = RESAMPLES, seed: int = SEED) -> dict[str, MetricValue]:
    """Every metric of ``evaluator`` over the details rows of one (model, dataset)."""
    stats = evaluator.statistics()
    filler = Filler(evaluator, stats)
    scored: list[tuple[Any, Mapping[str, Any]]] = []
    pending: list[Mapping[str, Any]] = []
    for row in rows:
        if row.get("status") in SCORED_STATUSES:
            scored.append((row.get("index"), filler.scored(row)))
        else:
            pending.append(row)
    out: dict[str, MetricValue] = {}
    worst = [(r.get("index"), filler.fill(r, best=False)) for r in pending]
    best = [(r.get("index"), filler.fill(r, best=True)) for r in pending]
    n = len(scored) + len(pending)
    for stat in stats:
        if not pending:
            value, ci = stat.measure(clustered(stat, scored), resamples, seed)
            out[stat.name] = MetricValue(stat.name, value, ci, (stat.key,), n)
            continue
        low = stat.scores_of(clustered(stat, scored + worst))
        high = stat.scores_of(clustered(stat, scored + best))
        out[stat.name] = MetricValue(stat.name, None, None, (stat.key,), n,
                                     bounds=(min(low, high), max(low, high)))
    return out


def results_entry(evaluator: BaseEvaluator, rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The proposed results-JSON fields: ``{"primary": name, "metrics": {name: {...}}}``."""
    values = metric_values(evaluator, rows)
    return {"primary": next(iter(values)),
            "metrics": {name: mv.to_json() for name, mv in values.items()}}
