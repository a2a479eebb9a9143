"""``MetricValue``: one aggregate metric of one (model, dataset), with its interval.

The one record of a metric's value: ``ResultSummary.metrics`` holds these, and so do
``harness.metrics.aggregate``'s results. It imports nothing heavy (no numpy), since
every results file read builds some.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class MetricValue:
    """An aggregate metric, in the metric's own unit (percent for every metric here).

    ``value`` is ``None`` while samples are pending (a failed model call, say): then
    ``bounds`` gives the range the value lies in (every pending sample as an empty
    prediction … every pending sample equal to its reference), as accuracy bounds do,
    for a proportion or a mean; a corpus metric (BLEU, chrF) has none (see
    ``harness.metrics.aggregate``).
    ``ci95`` is the 95% interval (Wilson for 0/1 judgements, a seeded percentile
    bootstrap over samples otherwise), ``None`` when it cannot be computed.
    ``sample_keys`` names the per-sample detail fields the value is computed from, so
    anyone can recompute it from the details file; ``n`` counts the samples used.
    """

    name: str
    value: float | None
    ci95: tuple[float, float] | None = None
    sample_keys: tuple[str, ...] = ()
    n: int = 0
    bounds: tuple[float, float] | None = None

    def to_json(self) -> dict[str, Any]:
        """The results-JSON form: ``{value, ci95, n, sample_keys[, bounds]}`` (the name
        is the key it is written under)."""
        out: dict[str, Any] = {
            "value": None if self.value is None else round(self.value, 4),
            "ci95": _rounded(self.ci95), "n": self.n, "sample_keys": list(self.sample_keys)}
        if self.bounds is not None:
            out["bounds"] = _rounded(self.bounds)
        return out

    @classmethod
    def from_json(cls, name: str, data: Mapping[str, Any]) -> MetricValue:
        """The metric ``name`` from its ``to_json()``."""
        return cls(name, data.get("value"), as_pair(data.get("ci95")),
                   tuple(data.get("sample_keys") or ()), int(data.get("n") or 0),
                   as_pair(data.get("bounds")))

    def cell(self) -> str:
        """A summary-table cell: ``27.31 [25.10, 29.40]``, or the bounds when pending
        (``no value`` for a metric without bounds)."""
        if self.value is None:
            if self.bounds is None:
                return "no value"
            return f"{self.bounds[0]:.2f}..{self.bounds[1]:.2f}"
        if self.ci95 is None:
            return f"{self.value:.2f}"
        return f"{self.value:.2f} [{self.ci95[0]:.2f}, {self.ci95[1]:.2f}]"


def _rounded(pair: tuple[float, float] | None) -> list[float] | None:
    return None if pair is None else [round(x, 4) for x in pair]


def as_pair(value: Any) -> tuple[float, float] | None:
    """A ``(low, high)`` from a JSON list (``None`` for anything else)."""
    return (value[0], value[1]) if isinstance(value, (list, tuple)) and len(value) == 2 else None
