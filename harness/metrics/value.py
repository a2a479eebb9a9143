"""``MetricValue``: one aggregate metric of one (model, dataset), with its interval."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class MetricValue:
    """An aggregate metric, in the metric's own unit (percent for every metric here).

    ``value`` is ``None`` while samples are pending (a failed model call, say): then
    ``bounds`` gives the range the value lies in (every pending sample as an empty
    prediction … every pending sample equal to its reference), as accuracy bounds do.
    ``ci95`` is the 95% interval (Wilson for 0/1 judgements, a seeded percentile
    bootstrap over samples otherwise), ``None`` when it cannot be computed.
    ``sample_keys`` names the per-sample detail fields the value is computed from, so
    anyone can recompute it from the details file; ``n`` counts the samples used.
    """

    name: str
    value: float | None
    ci95: tuple[float, float] | None
    sample_keys: tuple[str, ...]
    n: int
    bounds: tuple[float, float] | None = None

    def to_json(self) -> dict[str, Any]:
        """The results-JSON form: ``{value, ci95, n, sample_keys[, bounds]}``."""
        out: dict[str, Any] = {
            "value": None if self.value is None else round(self.value, 4),
            "ci95": None if self.ci95 is None else [round(x, 4) for x in self.ci95],
            "n": self.n, "sample_keys": list(self.sample_keys)}
        if self.bounds is not None:
            out["bounds"] = [round(x, 4) for x in self.bounds]
        return out

    def cell(self) -> str:
        """A summary-table cell: ``27.31 [25.10, 29.40]``, or the bounds when pending."""
        if self.value is None:
            return "—" if self.bounds is None else f"{self.bounds[0]:.2f}…{self.bounds[1]:.2f}"
        if self.ci95 is None:
            return f"{self.value:.2f}"
        return f"{self.value:.2f} [{self.ci95[0]:.2f}, {self.ci95[1]:.2f}]"
