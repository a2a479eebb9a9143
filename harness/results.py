"""Per-(model, dataset) aggregation, results JSON, details JSONL and the summary table.

Memory holds counters (and, per sample, a details-file offset and, with replicas, its
correct count; with a text-metric evaluator, each metric's few per-sample numbers, see
``harness.metrics.aggregate.MetricSums``); details are streamed to
``details/MODEL/DATASET.jsonl`` as
results arrive and put in sample order at the end (only offsets are kept to do that).
"""

from __future__ import annotations

import itertools
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from .json_encode import encoder
from .records import (
    INFER_PENDING_STATUSES,
    NO_ANSWER_STATUSES,
    SCORED_STATUSES,
    UNPREDICTED_STATUSES,
    SampleResult,
)
from .summary import PRIMARY_METRIC, MetricValue, PendingCause, ResultSummary

# Re-exported: the table lives in its own module, callers import it from here.
from .table import summary_table  # noqa: F401

if TYPE_CHECKING:
    from .evaluators.base import BaseEvaluator
    from .metrics.aggregate import MetricSums

#: Bytes of details rows buffered before a write to the file (some hundreds of rows).
DETAILS_BUFFER = 256 * 1024

#: Distinct causes of pending samples counted per result; the rest are "other causes"
#: (an evaluator bug can fail every sample in its own words).
MAX_CAUSES = 20

# Built once (see ``harness.json_encode``): one details row per sample.
_details_json = encoder(ensure_ascii=False, default=str, allow_nan=False)


def _in_order(offsets: list[tuple[int, int, int, int]]) -> bool:
    """Whether the rows at ``offsets`` were written in (index, replica) order."""
    return all(a[:2] < b[:2] for a, b in itertools.pairwise(offsets))


def details_line(row: Mapping[str, Any]) -> str:
    """One details-JSONL line. U+2028/U+2029 are escaped: valid JSON either way, but
    ``str.splitlines()`` (and JavaScript before ES2019) reads them as line breaks."""
    try:
        text = _details_json(row)
    except ValueError:  # a NaN or an infinity: JSON has no such number
        text = _details_json(_finite(row))
    if "\u2028" in text or "\u2029" in text:
        text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return text


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float written as text (``'nan'``, ``'inf'``),
    as ``default=str`` writes any other value JSON has no form for: a bare ``NaN`` token
    is not JSON, and strict readers of the details file refuse it."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, Mapping):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


@dataclass
class Accumulator:
    """Running counts for one model on one dataset."""

    model: str
    dataset: str
    mode: str
    details_path: Path | None = None
    judge_mode: str | None = None  # None, 'judge', 'cascade' or 'parallel'
    replicas: int = 1
    #: The pass@k values to report with replicas (the evaluator's ``k``); None: 1, 2, 4, … n.
    pass_k: tuple[int, ...] | None = None
    #: The dataset's evaluator: one with metrics of its own (BLEU, EM …) gets them
    #: computed here; any other result's metric is accuracy over ``correct``.
    evaluator: BaseEvaluator | None = None
    total: int = 0
    correct: int = 0
    scored: int = 0
    cached: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    rule_correct: int = 0
    llm_evaluated: int = 0
    llm_correct: int = 0
    unparsed: int = 0
    judge_errors: int = 0
    judge_cached: int = 0
    # Pending samples by (status, cause): what failed and why, for the end of the run.
    causes: dict[tuple[str, str], int] = field(default_factory=dict)
    # With replicas: per sample [scored, correct] and per replica [scored, correct]; the
    # per-sample results the metrics need, nothing more.
    _per_sample: dict[int, list[int]] = field(default_factory=dict)
    _per_replica: dict[int, list[int]] = field(default_factory=dict)
    _fh: BinaryIO | None = None
    _written: int = 0
    _offsets: list[tuple[int, int, int, int]] = field(default_factory=list)
    _metrics: MetricSums | None = None

    def __post_init__(self) -> None:
        # Judge and cascade results are accuracies, whatever rule layer they have.
        if (self.evaluator is not None and self.mode != "infer" and self.judge_mode is None
                and self.evaluator.reports_own_metrics()):
            from .metrics.aggregate import MetricSums

            self._metrics = MetricSums(self.evaluator)

    def open(self) -> None:
        """Start a fresh details file (every run rewrites it from all samples)."""
        if self.details_path is not None:
            self.details_path.parent.mkdir(parents=True, exist_ok=True)
            # A large buffer: each write to the file lets the store's thread take the
            # GIL, and the event loop then waits to get it back.
            self._fh = open(self.details_path.with_suffix(".jsonl.part"), "wb",
                            buffering=DETAILS_BUFFER)
            self._written = 0

    def add(self, result: SampleResult) -> None:
        """Count one result and append its details row."""
        self.total += 1
        self.cached += result.cached
        self.by_status[result.status] = self.by_status.get(result.status, 0) + 1
        if result.status not in SCORED_STATUSES:
            self._count_cause(result)
        if self._metrics is not None:
            self._metrics.add(result.index, result.status,
                              {**result.details, "correct": result.correct}, result.reference)
        if result.rule_correct is not None:  # a cascade's rule layer, judged or not
            self.rule_correct += result.rule_correct
        if result.status in SCORED_STATUSES and self.mode != "infer":
            self.scored += 1
            self.correct += bool(result.correct)
            if self.replicas > 1:
                for table, key in ((self._per_sample, result.index),
                                   (self._per_replica, result.replica)):
                    counts = table.setdefault(key, [0, 0])
                    counts[0] += 1
                    counts[1] += bool(result.correct)
        if result.judge_status is not None:
            self.llm_evaluated += 1
            self.llm_correct += bool(result.judge_correct)
            self.unparsed += result.judge_status == "unparsed"
            self.judge_errors += result.judge_status == "error"
            self.judge_cached += result.judge_cached
        if self._fh is not None:
            line = (details_line(result.to_json()) + "\n").encode()
            # Offsets are counted, not asked for: tell() on a file costs more than the write.
            self._fh.write(line)
            self._offsets.append((result.index, result.replica, self._written, len(line)))
            self._written += len(line)

    def _count_cause(self, result: SampleResult) -> None:
        key = (result.status, result.cause or result.status)
        if key not in self.causes and len(self.causes) >= MAX_CAUSES:
            key = (result.status, "other causes (see the details)")
        self.causes[key] = self.causes.get(key, 0) + 1

    def close(self, keep: bool = True) -> None:
        """Finish the details file in (index, replica) order, replacing the old one
        atomically; ``keep=False`` (an interrupted run) discards what was written."""
        if self._fh is None or self.details_path is None:
            return
        part = Path(self._fh.name)
        tmp = self.details_path.with_suffix(".jsonl.tmp")
        fh, self._fh = self._fh, None
        try:
            try:
                fh.close()
            except OSError:
                if keep:
                    raise
                # A full disk failing the last flush of a file being discarded anyway.
            if keep:
                # Rows arrive in order when nothing overtakes (a rerun served from the
                # store): then the file is already what the copy would write.
                finished = part
                if not _in_order(self._offsets):
                    self._offsets.sort()
                    with open(part, "rb") as src, open(tmp, "wb") as dst:
                        for _, _, offset, size in self._offsets:
                            src.seek(offset)
                            dst.write(src.read(size))
                    finished = tmp
                os.replace(finished, self.details_path)
        finally:
            # Never a half-written file left behind, whatever failed.
            part.unlink(missing_ok=True)
            tmp.unlink(missing_ok=True)
            self._offsets.clear()

    def abandon(self) -> None:
        """Close the details file without touching any path: the work directory's path
        no longer leads to the directory the file is in (see ``Store.check_work_dir``)."""
        if self._fh is not None:
            fh, self._fh = self._fh, None
            try:
                fh.close()
            except OSError:
                pass  # discarded anyway
            self._offsets.clear()

    def summary(self) -> ResultSummary:
        """The result for this model and dataset.

        While any sample is unscored (a failed model or judge call, say) the result is
        incomplete: ``complete`` is false and, instead of one accuracy, its ``bounds``
        give the range it lies in (every pending sample wrong … every one right). The
        pending samples are no random subset (a cascade sends only rule failures to the
        judge), so an accuracy over the scored ones alone would mislead.
        """
        no_answer = sum(self.by_status.get(s, 0) for s in NO_ANSWER_STATUSES)
        # In infer mode nothing is scored: only a failed call is pending.
        pending_counts = {status: n for status, n in sorted(self.by_status.items())
                          if (status in INFER_PENDING_STATUSES if self.mode == "infer"
                              else status not in SCORED_STATUSES)}
        pending = sum(pending_counts.values())
        complete = pending == 0 and self.total > 0
        causes = tuple(PendingCause(status, cause, n) for (status, cause), n in
                       sorted(self.causes.items(), key=lambda item: -item[1])
                       if status in pending_counts)
        metrics: dict[str, MetricValue] = {}
        extract_rate = replicas = None
        if self.mode != "infer":
            extract_rate = (100.0 * (self.scored - no_answer) / self.scored
                            if self.scored else None)
        if self._metrics is not None:
            metrics = self._metrics.values()
        elif self.mode != "infer":
            value = 100.0 * self.correct / self.total if complete else None
            bounds = ((round(100.0 * self.correct / self.total, 4),
                       round(100.0 * (self.correct + pending) / self.total, 4))
                      if self.total else None)
            ci = wilson_interval(self.correct, self.total) if complete else None
            if self.replicas > 1:
                computed = replica_metrics(self._per_sample, self._per_replica, self.replicas,
                                           self.pass_k)
                sample_ci = computed.pop("_sample_ci95")
                if complete:
                    replicas, ci = computed, sample_ci
            metrics[PRIMARY_METRIC] = MetricValue(PRIMARY_METRIC, value,
                                                  (ci[0], ci[1]) if ci else None,
                                                  bounds=bounds)
        return ResultSummary(
            model=self.model, dataset=self.dataset, mode=self.mode, total=self.total,
            scored=self.scored, correct=self.correct, counts=dict(sorted(self.by_status.items())),
            cached_predictions=self.cached, complete=complete, pending=pending,
            pending_counts=pending_counts, pending_causes=causes, metrics=metrics,
            primary_metric=next(iter(metrics), PRIMARY_METRIC),
            extract_rate=extract_rate, replica_metrics=replicas,
            judge_mode=self.judge_mode,
            cascade_stats=self.cascade_stats() if self.judge_mode is not None else None,
            details=str(self.details_path) if self.details_path is not None else None)

    def cascade_stats(self) -> dict[str, Any]:
        """The seed's ``cascade_stats``, plus ``unparsed``, ``judge_error`` and ``pending``.

        ``total_samples`` counts every sample, pending ones included, and
        ``rule_accuracy`` is ``rule_correct`` over all of them: the lower bound of the
        final score, as the seed defines it (a pending sample is not rule-correct);
        ``llm_evaluated`` counts samples the judge was asked about (cached verdicts
        included); ``llm_accuracy`` is over the verdicts the judge gave, an unreadable one
        counting as not correct (as the seed treats a paragraph) and a failed call left
        out (pending); ``final_accuracy`` is ``None`` while samples are pending.
        """
        pct = lambda a, b: 100.0 * a / b if b else 0.0  # noqa: E731
        answered = self.llm_evaluated - self.judge_errors
        pending = self.total - self.scored
        return {
            "total_samples": self.total, "rule_correct": self.rule_correct,
            "rule_accuracy": pct(self.rule_correct, self.total),
            "llm_evaluated": self.llm_evaluated, "llm_correct": self.llm_correct,
            "llm_accuracy": pct(self.llm_correct, answered),
            "final_correct": self.correct,
            "final_accuracy": pct(self.correct, self.total) if not pending else None,
            "parallel_mode": self.judge_mode == "parallel",
            "unparsed": self.unparsed, "judge_error": self.judge_errors,
            "judge_cached": self.judge_cached, "pending": pending,
        }


def replica_metrics(per_sample: dict[int, list[int]], per_replica: dict[int, list[int]],
                    replicas: int, pass_k: tuple[int, ...] | None = None) -> dict[str, Any]:
    """avg@K, its standard error across replicas, per-replica accuracy and pass@k.

    ``pass@k`` is the unbiased estimator 1 - C(n-c, k) / C(n, k) averaged over samples
    (n scored replicas of a sample, c of them correct), for k = 1, 2, 4, … and K, or
    for the ``pass_k`` given (those not above K: a larger k cannot be estimated), each
    with a 95% interval (``pass_at_k_ci95``). Intervals are over samples (each sample's
    mean correctness, or its pass@k estimate), since replicas of one sample are not
    independent.
    """
    # In replica order, whatever order the replicas' results arrived in.
    rates = [100.0 * c / n for _, (n, c) in sorted(per_replica.items()) if n]
    mean = sum(rates) / len(rates) if rates else 0.0
    se = (math.sqrt(sum((r - mean) ** 2 for r in rates) / (len(rates) - 1) / len(rates))
          if len(rates) > 1 else 0.0)
    ks = (sorted(k for k in pass_k if k <= replicas) if pass_k is not None else
          sorted({k for k in (1, 2, 4, 8, 16, 32, 64, 128) if k <= replicas} | {replicas}))
    pass_at, pass_ci = {}, {}
    for k in ks:
        values = [pass_at_k(n, c, k) for n, c in per_sample.values() if n >= k]
        pass_at[f"pass@{k}"] = 100.0 * sum(values) / len(values) if values else None
        # Over samples, like accuracy's: the per-sample estimates are independent. A
        # sample of n replicas holds n // k disjoint tries of k (pass@1: accuracy's).
        tries = sum(n // k for n, _ in per_sample.values() if n >= k)
        pass_ci[f"pass@{k}"] = _percent(proportion_interval(values, tries))
    sample_means = [c / n for n, c in per_sample.values() if n]
    draws = sum(n for n, _ in per_sample.values())
    return {
        f"avg@{replicas}": mean, "avg_stderr": se,
        "replica_accuracy": [round(r, 4) for r in rates],
        "pass_at_k": pass_at, "pass_at_k_ci95": pass_ci,
        "_sample_ci95": _percent(proportion_interval(sample_means, draws)),
    }


def _percent(bounds: tuple[float, float] | None) -> list[float] | None:
    """Bounds as fractions in percent, rounded as results show them."""
    return None if bounds is None else [round(100 * bounds[0], 2), round(100 * bounds[1], 2)]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one sample: n attempts, c correct (Chen et al., 2021)."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def proportion_interval(means: Sequence[float], draws: float) -> tuple[float, float] | None:
    """95% interval, as fractions, of a proportion measured as per-sample means in [0, 1]
    over ``draws`` 0/1 judgements in all (the replicas of a sample are not independent).

    With one judgement per sample, Wilson's interval. With replicas, Wilson's at the
    sample size the samples' spread is worth: p(1−p) over the variance of their mean
    (Kish's effective size), at most ``draws`` (as if every replica were independent),
    and the number of samples when every sample scores the same, with Student's t for
    as many samples less one in place of z (the spread is estimated from them). Unlike a
    normal interval it never shrinks to a point.
    """
    if not means:
        return None
    n = len(means)
    p = sum(means) / n
    if draws <= n or n < 2:
        return wilson_bounds(p * n, n)
    spread = sum((m - p) ** 2 for m in means) / (n - 1)
    size = min(float(draws), n * p * (1 - p) / spread) if spread > 0 else float(n)
    return wilson_bounds(p * size, size, _t95(n - 1))


#: Student's t, two-sided 95%, for 1 … 30 degrees of freedom.
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def _t95(df: int) -> float:
    """Student's t quantile for a two-sided 95% interval (beyond 30 degrees of freedom,
    Cornish-Fisher's first correction to z, within 0.001)."""
    if df <= len(_T95):
        return _T95[df - 1]
    z = 1.959963984540054
    return z + (z ** 3 + z) / (4 * df)


def wilson_bounds(successes: float, n: float,
                  z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval of a proportion, as fractions (n > 0)."""
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def wilson_interval(successes: int, n: int, z: float = 1.959963984540054) -> list[float] | None:
    """95% Wilson score interval for a proportion, in percent (``None`` when n = 0)."""
    if n == 0:
        return None
    return _percent(wilson_bounds(successes, n, z))


def keeps_previous(summary: ResultSummary, previous: ResultSummary | None,
                   limited: bool) -> bool:
    """Whether the result on disk (``previous``) stays instead of ``summary``.

    A run that scored every sample of the dataset as it is now (complete, not
    ``limited`` by ``--limit``) always replaces it: a dataset with fewer rows, replicas
    or a narrower ``test_range`` than before is that dataset now. Any other run replaces
    it only when it got at least as far: as many samples scored and as many predicted
    (:func:`reach`). A run against a dead endpoint (all failed calls), a ``--limit`` run
    on fewer samples, or a ``--mode infer`` run (nothing scored) never replaces a scored
    result with its own, complete or not, nor a ``--mode eval`` run that found nothing
    stored (an earlier run's failed calls keep their result).
    """
    if previous is None:
        return False
    if summary.complete and not limited and (summary.mode != "infer" or not reach(previous)[0]):
        return False  # all of the dataset as it is now (an infer run replaces no scores)
    (scored, predicted), (was_scored, was_predicted) = reach(summary), reach(previous)
    if found_nothing(summary):
        return True  # no result to replace one with
    return scored < was_scored or predicted < was_predicted


def found_nothing(summary: ResultSummary) -> bool:
    """Whether ``summary`` is of a ``--mode eval`` run that found no stored prediction
    (an earlier run's calls all failed, or its prompts changed since)."""
    return summary.mode == "eval" and reach(summary)[1] == 0


def reach(summary: ResultSummary) -> tuple[int, int]:
    """How far the run of a result got: ``(samples scored, samples predicted)``."""
    unpredicted = sum(summary.counts.get(status, 0) for status in UNPREDICTED_STATUSES)
    # Results files of older revisions count an infer run's predictions as scored.
    scored = 0 if summary.mode == "infer" else summary.scored
    return scored, summary.total - unpredicted


def read_summary(path: Path) -> ResultSummary | None:
    """The result in the results file ``path``, or ``None`` when it is absent or not one."""
    data = read_json(path)
    if data is None or "model" not in data or "dataset" not in data:
        return None
    try:
        return ResultSummary.from_json(data)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None  # a foreign or damaged file is no result to keep


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object from ``path``, or ``None`` when it is absent or unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_json(path: Path, data: Any) -> None:
    """Write JSON atomically (temp file + rename), so a kill never leaves half a file,
    and a failed write (a full disk) leaves the old file and no temp file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n",
                       encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
