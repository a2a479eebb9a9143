"""The plain-text summary table of a run: one row per dataset, one column per model.

An accuracy result shows its accuracy, counts and extract rate; a text-metric result
(BLEU, EM …) shows each metric by name with its 95% interval; an incomplete result
shows no single number, only the range it lies in and what is pending.
"""

from __future__ import annotations

from collections.abc import Collection

from .summary import PRIMARY_METRIC, ResultSummary


def summary_table(summaries: list[ResultSummary],
                  kept: Collection[tuple[str, str]] = ()) -> str:
    """A plain-text table: one row per dataset, one column per model. ``kept``: the
    (model, dataset) pairs whose results files keep an earlier run's result, marked."""
    models = list(dict.fromkeys(s.model for s in summaries))
    datasets = list(dict.fromkeys(s.dataset for s in summaries))
    cell = {(s.dataset, s.model): _cell(s) + (" *" if (s.model, s.dataset) in kept else "")
            for s in summaries}
    header = ["dataset", *models]
    rows = [[d, *(cell.get((d, m), "-") for m in models)] for d in datasets]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*header), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*r) for r in rows]
    if any((s.model, s.dataset) in kept for s in summaries):
        lines.append("* this run's own result: results/ keeps an earlier run's, which got "
                     "further")
    return "\n".join(lines)


def _cell(s: ResultSummary) -> str:
    if s.mode == "infer":
        failed = s.pending
        return (f"{s.total - failed} predicted"
                + (f", INCOMPLETE: {failed} model_error" if failed else ""))
    if s.primary_metric != PRIMARY_METRIC:
        return _metric_cell(s)
    if not s.complete or s.accuracy is None or s.extract_rate is None:
        return _incomplete_cell(s)
    text = f"{s.accuracy:.2f} ({s.correct}/{s.scored}, extract {rate(s.extract_rate)}%)"
    cascade = s.cascade_stats
    if cascade and s.judge_mode in ("cascade", "parallel"):
        # The seed asks for both layers, so results compare with pure-rule runs.
        gain = cascade["final_accuracy"] - cascade["rule_accuracy"]
        text += f" = rule {cascade['rule_accuracy']:.2f} + judge {gain:.2f}"
    if cascade and cascade["unparsed"]:
        text += f" [{cascade['unparsed']} unparsed]"
    return text


def rate(percent: float) -> str:
    """A percentage to one decimal (none for a whole number), never rounded to 100 or 0
    when it is neither: 200 answers of 201 extracted is not "100%"."""
    text = f"{percent:.1f}"
    if text == "100.0" and percent < 100:
        text = "99.9"
    elif text == "0.0" and percent > 0:
        text = "0.1"
    return text.removesuffix(".0")


def _incomplete_cell(s: ResultSummary) -> str:
    """No single number for an incomplete result: its bounds and what is pending."""
    bounds = s.primary.bounds if s.primary else None
    if not s.total or bounds is None:
        return "n/a (no samples)"
    low, high = bounds
    pending = ", ".join(f"{n} {status}" for status, n in s.pending_counts.items())
    return f"INCOMPLETE {low:.2f}..{high:.2f} ({s.correct}/{s.total} correct; pending: {pending})"


def _metric_cell(s: ResultSummary) -> str:
    """A text metric's result: ``bleu 27.31 [25.10, 29.40], chrf 55.20 (50 scored)``;
    while samples are pending, every metric's bounds and what is pending."""
    primary = s.primary
    if not s.total or primary is None:
        return "n/a (no samples)"
    others = ", ".join(f"{m.name} {m.cell()}" for m in s.metrics.values()
                       if m.name != primary.name)
    text = f"{primary.name} {primary.cell()}" + (f", {others}" if others else "")
    if not s.complete:
        pending = ", ".join(f"{n} {status}" for status, n in s.pending_counts.items())
        return f"INCOMPLETE {text} ({s.scored}/{s.total} scored; pending: {pending})"
    extract = f", extract {rate(s.extract_rate)}%" if s.extract_rate is not None else ""
    return f"{text} ({s.scored} scored{extract})"
