"""``ResultSummary``: the result of one model on one dataset, typed.

The results JSON (``results/MODEL/DATASET.json``, ``summary.json``) is its ``to_json()``;
``from_json()`` reads one back (an earlier run's result, say). A result carries any
number of metrics (``metrics``: name → ``MetricValue``). Rule- and judge-scored results
have ``accuracy`` as their primary metric, which keeps its flat JSON keys (``accuracy``,
``accuracy_bounds``, ``accuracy_ci95``). A text-metric evaluator's result (BLEU, EM …)
names its primary metric (``"primary_metric": "bleu"``) and writes every metric under
``"metrics"``, so a new metric needs no new field.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .metrics.value import MetricValue, as_pair

#: The primary metric of every rule- or judge-scored result.
PRIMARY_METRIC = "accuracy"

#: JSON keys written from fields (in this order); any other key read is kept in ``extra``.
_KEYS = ("model", "dataset", "mode", "total", "scored", "correct", "counts",
         "cached_predictions", "complete", "pending", "pending_counts", "pending_causes",
         "accuracy", "accuracy_bounds", "accuracy_ci95", "primary_metric", "extract_rate",
         "metrics",
         "judge_mode", "cascade_stats", "details", "evaluator", "evaluator_options",
         "judge_stats", "call_stats")
_REPLICA_KEYS = ("avg_stderr", "replica_accuracy", "pass_at_k", "pass_at_k_ci95")


@dataclass(frozen=True)
class PendingCause:
    """Why ``count`` samples of a result are pending: their status and cause."""

    status: str
    cause: str
    count: int


@dataclass(frozen=True, eq=True)
class ResultSummary(Mapping[str, Any]):
    """One (model, dataset) result: counts, metrics, and what is pending and why.

    While any sample is pending the result is incomplete: ``complete`` is false and the
    primary metric has ``bounds`` instead of a ``value``. It is also a read-only mapping
    of its results JSON, for code written against the dict summaries of earlier
    versions (``report.result("gsm8k")["accuracy"]``); harness's own code reads fields.
    """

    model: str
    dataset: str
    mode: str
    total: int
    scored: int
    correct: int
    counts: Mapping[str, int]
    cached_predictions: int
    complete: bool
    pending: int
    pending_counts: Mapping[str, int]
    pending_causes: tuple[PendingCause, ...] = ()
    #: name → value, primary first; none when ``mode`` is ``infer``.
    metrics: Mapping[str, MetricValue] = field(default_factory=dict)
    #: The metric tables show: ``accuracy``, or a text-metric evaluator's (``bleu`` …).
    primary_metric: str = PRIMARY_METRIC
    extract_rate: float | None = None
    #: With replicas (``n`` > 1) on a complete result: ``avg@K``, ``avg_stderr``,
    #: ``replica_accuracy`` and ``pass_at_k``, as written to the JSON.
    replica_metrics: Mapping[str, Any] | None = None
    judge_mode: str | None = None
    cascade_stats: Mapping[str, Any] | None = None
    details: str | None = None
    evaluator: str | None = None
    #: The evaluator's ``metric_options()`` (a BLEU tokenizer …), when it has any.
    evaluator_options: Mapping[str, Any] | None = None
    judge_stats: Mapping[str, Any] | None = None
    call_stats: Mapping[str, Any] | None = None
    #: Keys of a results file this version does not write (kept when rewritten).
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def pair(self) -> tuple[str, str]:
        """``(model, dataset)``."""
        return self.model, self.dataset

    @property
    def primary(self) -> MetricValue | None:
        """The primary metric, if the result is scored."""
        return self.metrics.get(self.primary_metric)

    @property
    def accuracy(self) -> float | None:
        """Accuracy in percent; ``None`` while samples are pending, in infer mode, or
        when the result has no accuracy (a BLEU result)."""
        accuracy = self.metrics.get(PRIMARY_METRIC)
        return accuracy.value if accuracy else None

    def to_json(self) -> dict[str, Any]:
        """The results JSON of this result (the format ``results/`` files have)."""
        out: dict[str, Any] = {
            "model": self.model, "dataset": self.dataset, "mode": self.mode,
            "total": self.total, "scored": self.scored, "correct": self.correct,
            "counts": dict(self.counts), "cached_predictions": self.cached_predictions,
            "complete": self.complete, "pending": self.pending,
            "pending_counts": dict(self.pending_counts),
            "pending_causes": [{"status": c.status, "cause": c.cause, "count": c.count}
                               for c in self.pending_causes],
        }
        primary = self.primary
        if primary is not None and self.primary_metric == PRIMARY_METRIC:
            out["accuracy"] = primary.value
            out["accuracy_bounds"] = _list(primary.bounds)
            out["accuracy_ci95"] = _list(primary.ci95)
            out["extract_rate"] = self.extract_rate
            if self.replica_metrics:
                out.update(self.replica_metrics)
        elif primary is not None:
            out["primary_metric"] = self.primary_metric
            out["extract_rate"] = self.extract_rate
        # Accuracy keeps its flat keys; every other metric (a text metric's primary
        # included) is written under "metrics".
        others = {name: m.to_json() for name, m in self.metrics.items()
                  if name != PRIMARY_METRIC or self.primary_metric != PRIMARY_METRIC}
        if others:
            out["metrics"] = others
        if self.judge_mode is not None:
            out["judge_mode"] = self.judge_mode
            out["cascade_stats"] = dict(self.cascade_stats or {})
        if self.details is not None:
            out["details"] = self.details
        out["evaluator"] = self.evaluator
        if self.evaluator_options:
            out["evaluator_options"] = dict(self.evaluator_options)
        if self.judge_stats is not None:
            out["judge_stats"] = dict(self.judge_stats)
        out["call_stats"] = dict(self.call_stats) if self.call_stats is not None else None
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ResultSummary:
        """A result from its results JSON (missing counts read as zero)."""
        metrics = {name: MetricValue.from_json(name, value)
                   for name, value in (data.get("metrics") or {}).items()}
        if "accuracy" in data:
            metrics = {PRIMARY_METRIC: MetricValue(
                PRIMARY_METRIC, data.get("accuracy"), as_pair(data.get("accuracy_ci95")),
                bounds=as_pair(data.get("accuracy_bounds"))), **metrics}
        replica = {k: v for k, v in data.items()
                   if k.startswith("avg@") or k in _REPLICA_KEYS}
        known = {*_KEYS, *replica}
        return cls(
            model=data["model"], dataset=data["dataset"], mode=data.get("mode", "all"),
            total=data.get("total", 0), scored=data.get("scored", 0),
            correct=data.get("correct", 0), counts=dict(data.get("counts") or {}),
            cached_predictions=data.get("cached_predictions", 0),
            complete=bool(data.get("complete")), pending=data.get("pending", 0),
            pending_counts=dict(data.get("pending_counts") or {}),
            pending_causes=tuple(PendingCause(c["status"], c["cause"], c["count"])
                                 for c in data.get("pending_causes") or ()),
            metrics=metrics, primary_metric=data.get("primary_metric") or PRIMARY_METRIC,
            extract_rate=data.get("extract_rate"),
            replica_metrics=replica or None, judge_mode=data.get("judge_mode"),
            cascade_stats=data.get("cascade_stats"), details=data.get("details"),
            evaluator=data.get("evaluator"),
            evaluator_options=data.get("evaluator_options"), judge_stats=data.get("judge_stats"),
            call_stats=data.get("call_stats"),
            extra={k: v for k, v in data.items() if k not in known})

    def __getitem__(self, key: str) -> Any:
        return self.to_json()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_json())

    def __len__(self) -> int:
        return len(self.to_json())


def _list(pair: tuple[float, float] | None) -> list[float] | None:
    return list(pair) if pair is not None else None
