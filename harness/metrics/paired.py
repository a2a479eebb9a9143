"""The paired difference B − A of every metric between two runs on the same samples.

For ``compare``: rows are matched by ``(index, replica)`` and only samples scored in
both runs count; a scored sample without the metric's fields counts as an empty
prediction (as in ``aggregate``). Replicas of one sample move together in a resample.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..records import SCORED_STATUSES
from .aggregate import Filler, clustered
from .intervals import RESAMPLES, SEED, paired_bootstrap_interval

if TYPE_CHECKING:
    from ..evaluators.base import BaseEvaluator


@dataclass(frozen=True, slots=True)
class PairedDifference:
    """One metric in both runs, their difference B − A and its paired 95% interval."""

    name: str
    a: float
    b: float
    difference: float
    ci95: tuple[float, float] | None
    n: int

    def to_json(self) -> dict[str, Any]:
        """The JSON form, rounded like ``MetricValue``."""
        return {"a": round(self.a, 4), "b": round(self.b, 4),
                "difference": round(self.difference, 4), "n": self.n,
                "ci95": None if self.ci95 is None else [round(x, 4) for x in self.ci95]}


def _scored(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[Any, Any], Mapping[str, Any]]:
    return {(r.get("index"), r.get("replica")): r for r in rows
            if r.get("status") in SCORED_STATUSES}


def paired_differences(evaluator: BaseEvaluator, rows_a: Iterable[Mapping[str, Any]],
                       rows_b: Iterable[Mapping[str, Any]], resamples: int = RESAMPLES,
                       seed: int = SEED) -> dict[str, PairedDifference]:
    """Every metric of ``evaluator`` in runs A and B, and the paired interval of B − A."""
    stats = evaluator.statistics()
    filler = Filler(evaluator, stats)
    a, b = _scored(rows_a), _scored(rows_b)
    keys = sorted(a.keys() & b.keys(), key=lambda k: tuple(
        x if isinstance(x, int) else -1 for x in k))
    side_a = [(k[0], filler.scored(a[k], a[k].get("reference"))) for k in keys]
    side_b = [(k[0], filler.scored(b[k], b[k].get("reference"))) for k in keys]
    out: dict[str, PairedDifference] = {}
    for stat in stats:
        if not keys:
            continue
        rows_a_ = np.asarray(clustered(stat, side_a), dtype=np.float64)
        rows_b_ = np.asarray(clustered(stat, side_b), dtype=np.float64)
        value_a, value_b = stat.scores_of(rows_a_), stat.scores_of(rows_b_)
        ci = (paired_bootstrap_interval(rows_a_, rows_b_, stat.scores, resamples, seed)
              if len(rows_a_) > 1 else None)
        out[stat.name] = PairedDifference(stat.name, value_a, value_b, value_b - value_a,
                                          ci, len(keys))
    return out
