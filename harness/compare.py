"""``python -m harness compare A B``: which samples changed verdict between two runs.

Runs are compared per (model, dataset) present in both work directories, sample by
sample. Samples are paired by what was asked, the prompt in their details rows (and
their reference), never by row position: a row added to or removed from the data file
between the runs moves the others' indices, not their pairing. A prompt template
changed on purpose leaves no prompt in common; the rows are then paired by index only
where the references show them to be the same rows, and otherwise not compared
(``harness.report.pairing``). Samples in one run only are left out and listed, and so
are rows not scored in both runs (a model error in either).

**The interval is paired.** Both runs score the same samples, so only the samples that
changed verdict carry the difference: with ``both`` samples right in both runs,
``fixed`` right only in B, ``broken`` right only in A and ``n`` in all, the accuracy
difference is ``(fixed - broken) / n``. Its 95% interval is Newcombe's hybrid score
interval for paired proportions (Newcombe 1998, method 10): the Wilson intervals of the
two accuracies, combined through the correlation of the paired verdicts. Unlike the
normal (Wald) interval it stays within ±100 points and keeps its coverage when few
samples changed or an accuracy is near 0 or 100%. Numbers are in percentage points; no
samples in common, no interval (``None``).

**With replicas** (several rows of one sample), the rows are not independent: the
interval is then over samples, the normal interval of the mean per-sample difference
(each sample's B accuracy less its A accuracy over its paired replicas), as accuracy's
own interval is over samples, and never narrower than Newcombe's over every pair of
rows (which it would be, down to a point, when every sample changed by the same).

**An incomplete run** (pending samples) has no result of its own: the comparison is
over the samples both runs scored, says which run is incomplete, and the CLI exits 1.

**Any other metric** (a result whose ``primary_metric`` is BLEU, EM, F1 …) gets a paired
bootstrap interval of B − A for every metric of its evaluator
(``harness.metrics.paired``), under ``"metrics"``; the verdict counts above are kept
where the evaluator gives per-sample verdicts (EM does, BLEU does not). The evaluator
is rebuilt from the name and ``evaluator_options`` in the results (BLEU's tokenizer,
chrF++'s word order), so samples without an answer are scored as the runs scored
theirs. Two runs scored with different options are not compared on their metrics
(``metrics_not_compared`` says why): BLEU under two tokenizers is two metrics.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import HarnessError
from .paths import details_path
from .records import SCORED_STATUSES
from .report.pairing import Pairing, RowKey, pair_details, pairing_header, pairing_notes
from .report.workdir import iter_details, load_summaries
from .results import wilson_bounds
from .summary import PRIMARY_METRIC, ResultSummary

_PRED_CHARS = 200


def paired_interval(fixed: int, broken: int, both: int, n: int) -> list[float] | None:
    """95% interval, in points, for the paired accuracy difference B − A (see above)."""
    if n < 1:
        return None
    neither = n - fixed - broken - both
    p_b, p_a = (both + fixed) / n, (both + broken) / n
    low_b, high_b = wilson_bounds(both + fixed, n)
    low_a, high_a = wilson_bounds(both + broken, n)
    # The correlation of the paired verdicts, continuity-corrected as Newcombe does.
    cross = both * neither - fixed * broken
    denom = math.sqrt((both + fixed) * (neither + broken) * (both + broken) * (neither + fixed))
    phi = 0.0
    if denom:
        phi = (max(cross - n / 2, 0.0) if cross > 0 else cross) / denom
    diff = p_b - p_a
    below = (p_b - low_b) ** 2 - 2 * phi * (p_b - low_b) * (high_a - p_a) + (high_a - p_a) ** 2
    above = (high_b - p_b) ** 2 - 2 * phi * (high_b - p_b) * (p_a - low_a) + (p_a - low_a) ** 2
    low = max(-1.0, diff - math.sqrt(max(0.0, below)))
    high = min(1.0, diff + math.sqrt(max(0.0, above)))
    return [round(100 * low, 4), round(100 * high, 4)]


def load_verdicts(path: Path) -> dict[RowKey, tuple[Any, bool]]:
    """``(index, replica) → (extracted answer, correct)`` for the scored rows of a file
    (keys as the file holds them: a hand-edited row may lack either)."""
    out: dict[RowKey, tuple[Any, bool]] = {}
    if not path.is_file():
        return out
    for _, row in iter_details(path):
        if row.get("status") in SCORED_STATUSES and row.get("correct") is not None:
            pred = row.get("pred")
            if isinstance(pred, str) and len(pred) > _PRED_CHARS:
                pred = pred[:_PRED_CHARS] + "…"
            out[(row.get("index"), row.get("replica"))] = (pred, bool(row["correct"]))
    return out


def compare_verdicts(a: dict[RowKey, tuple[Any, bool]], b: dict[RowKey, tuple[Any, bool]],
                     rows: dict[RowKey, RowKey] | None = None) -> dict[str, Any]:
    """Counts, changed samples, accuracies and the paired difference of two runs;
    ``rows`` maps A's rows to B's (``Pairing.rows``; ``None``: the keys of ``a`` and
    ``b`` already name the same samples)."""
    pairs = sorted(((k, k if rows is None else rows.get(k)) for k in a),
                   key=lambda kk: tuple(x if isinstance(x, int) else -1 for x in kk[0]))
    both = [(k, kb) for k, kb in pairs if kb is not None and kb in b]
    changed = []
    fixed = broken = correct_a = correct_b = 0
    by_sample: dict[Any, list[int]] = {}
    for key, key_b in both:
        (pred_a, ok_a), (pred_b, ok_b) = a[key], b[key_b]
        correct_a += ok_a
        correct_b += ok_b
        by_sample.setdefault(key[0], []).append(ok_b - ok_a)
        if ok_a != ok_b:
            fixed += ok_b
            broken += ok_a
            changed.append({"index": key[0], "replica": key[1], "b_index": key_b[0],
                            "a_pred": pred_a, "a_correct": ok_a, "b_pred": pred_b,
                            "b_correct": ok_b})
    n = len(both)
    replicated = len(by_sample) < n
    return {
        "paired": n, "unmatched_a": len(a) - n, "unmatched_b": len(b) - n,
        "fixed": fixed, "broken": broken, "unchanged": n - fixed - broken,
        "accuracy_a": 100 * correct_a / n if n else None,
        "accuracy_b": 100 * correct_b / n if n else None,
        "difference": 100 * (fixed - broken) / n if n else None,
        "ci95": (replica_interval([sum(d) / len(d) for d in by_sample.values()],
                                  fixed, broken, correct_a - broken, n)
                 if replicated else paired_interval(fixed, broken, correct_a - broken, n)),
        "changed": changed,
    }


def replica_interval(differences: list[float], fixed: int, broken: int, both: int,
                     n: int) -> list[float] | None:
    """95% interval, in points, of the difference for runs with replicas: the interval
    over samples (``clustered_interval``), widened where needed to Newcombe's over every
    pair of rows, as if the replicas were independent. Alone, the first is a point when
    every sample changed by the same (all 0 → all 1 on five samples)."""
    rows = paired_interval(fixed, broken, both, n)
    clustered = clustered_interval(differences)
    if clustered is None or rows is None:
        return rows
    return [min(clustered[0], rows[0]), max(clustered[1], rows[1])]


def clustered_interval(differences: list[float]) -> list[float] | None:
    """95% normal interval, in points, of the mean of per-sample differences (each in
    [-1, 1]), for runs with replicas (see above); ``None`` below two samples."""
    n = len(differences)
    if n < 2:
        return None
    mean = sum(differences) / n
    half = 1.959963984540054 * math.sqrt(sum((d - mean) ** 2 for d in differences)
                                         / (n - 1) / n)
    return [round(100 * max(-1.0, mean - half), 4), round(100 * min(1.0, mean + half), 4)]


def compare_dirs(work_a: str | Path, work_b: str | Path) -> dict[str, Any]:
    """The comparison of every (model, dataset) in both work directories."""
    summaries_a = {s.pair: s for s in map(ResultSummary.from_json, load_summaries(work_a))}
    summaries_b = {s.pair: s for s in map(ResultSummary.from_json, load_summaries(work_b))}
    pairs = []
    for model, dataset in sorted(summaries_a.keys() & summaries_b.keys()):
        path_a, path_b = details_path(work_a, model, dataset), details_path(work_b, model, dataset)
        pairing = pair_details(path_a, path_b)
        result = compare_verdicts(load_verdicts(path_a), load_verdicts(path_b), pairing.rows)
        result["pairing"] = pairing.to_json()
        summary_a, summary = summaries_a[(model, dataset)], summaries_b[(model, dataset)]
        if summary.primary_metric != PRIMARY_METRIC and summary.evaluator:
            scoring_a = (summary_a.evaluator, dict(summary_a.evaluator_options or {}))
            scoring_b = (summary.evaluator, dict(summary.evaluator_options or {}))
            if scoring_a != scoring_b:
                # BLEU under two tokenizers (chrF and chrF++ …) are two different metrics:
                # a difference between them would measure the settings, not the model.
                result["metrics_not_compared"] = (
                    f"A was scored by {_scoring(*scoring_a)}, B by {_scoring(*scoring_b)}")
            else:
                result.update(compare_metrics(summary.evaluator, summary.primary_metric,
                                              path_a, path_b, pairing, scoring_b[1]))
        # An incomplete run has no result of its own to compare: only its scored samples.
        result["pending_a"] = dict(summary_a.pending_counts) if not summary_a.complete else {}
        result["pending_b"] = dict(summary.pending_counts) if not summary.complete else {}
        pairs.append({"model": model, "dataset": dataset, **result})
    return {"a": str(work_a), "b": str(work_b), "pairs": pairs,
            "only_in_a": [f"{m}/{d}" for m, d in sorted(summaries_a.keys() - summaries_b.keys())],
            "only_in_b": [f"{m}/{d}" for m, d in sorted(summaries_b.keys() - summaries_a.keys())]}


def _scoring(evaluator: str | None, options: Mapping[str, Any]) -> str:
    """An evaluator and its metric options, for a message."""
    shown = ", ".join(f"{k}={v!r}" for k, v in sorted(options.items()))
    return f"{evaluator}({shown})"


def compare_metrics(evaluator_name: str, primary: str, path_a: Path, path_b: Path,
                    pairing: Pairing, options: Mapping[str, Any] | None = None
                    ) -> dict[str, Any]:
    """Every metric of the evaluator in both runs, with the paired bootstrap interval of
    B − A: ``{"primary_metric", "paired", "unmatched_a", "unmatched_b", "metrics"}``.
    ``pairing`` says which rows are the same samples; ``options`` are the evaluator's
    ``metric_options`` in both runs (its results' ``evaluator_options``), so samples
    without metric fields are scored as the runs scored theirs."""
    from .evaluators import build_evaluator
    from .metrics.paired import paired_differences

    evaluator = build_evaluator({"type": evaluator_name, **(options or {})})
    keys = {stat.key for stat in evaluator.statistics()}
    rows = pairing.rows
    rows_a, rows_b = _metric_rows(path_a, keys), _metric_rows(path_b, keys)
    scored_a = {(r["index"], r["replica"]) for r in rows_a if r["status"] in SCORED_STATUSES}
    scored_b = {(r["index"], r["replica"]) for r in rows_b if r["status"] in SCORED_STATUSES}
    paired = sum(rows.get(key) in scored_b for key in scored_a)
    # B's rows under the keys of the A rows they pair with (the rest left out), as
    # ``paired_differences`` matches rows by key.
    of_b = {b: a for a, b in rows.items()}
    rows_b = [{**r, "index": a[0], "replica": a[1]} for r in rows_b
              if (a := of_b.get((r["index"], r["replica"]))) is not None]
    try:
        diffs = paired_differences(evaluator, rows_a, rows_b)
    except (TypeError, ValueError, IndexError) as exc:
        raise HarnessError(f"{path_a} and {path_b}: the per-sample fields of "
                         f"{', '.join(sorted(keys))} are not {evaluator_name}'s: {exc}") from exc
    return {"primary_metric": primary, "paired": paired,
            "unmatched_a": len(scored_a) - paired, "unmatched_b": len(scored_b) - paired,
            "metrics": {name: d.to_json() for name, d in diffs.items()}}


def _metric_rows(path: Path, keys: set[str]) -> list[dict[str, Any]]:
    """The rows of a details file with only what the metrics read: the texts are
    dropped, except the reference of a row without the metric fields (it is scored as
    an empty prediction against it)."""
    if not path.is_file():
        return []
    out = []
    for _, row in iter_details(path):
        slim = {k: row.get(k) for k in ("index", "replica", "status", "correct")}
        slim.update({k: row[k] for k in keys if k in row})
        if not keys <= slim.keys():
            slim["reference"] = row.get("reference")
        out.append(slim)
    return out


def format_text(result: dict[str, Any], max_changed: int = 200) -> str:
    """The human-readable comparison (``max_changed`` samples listed per pair, 0 = all)."""
    lines = [f"A: {result['a']}", f"B: {result['b']}"]
    if not result["pairs"]:
        lines.append("no (model, dataset) has results in both work directories")
    for p in result["pairs"]:
        lines += ["", f"{p['model']} / {p['dataset']}: " + pairing_header(p["pairing"])]
        if not p["pairing"]["by"]:
            continue  # nothing is the same sample in both runs: no figure to give
        lines += pairing_notes(p["pairing"])
        unmatched = p["unmatched_a"] + p["unmatched_b"]
        if unmatched:
            lines.append(f"  rows scored in one run only (left out): {p['unmatched_a']} "
                         f"in A, {p['unmatched_b']} in B")
        for side in ("a", "b"):
            if pending := p.get(f"pending_{side}"):
                lines.append(f"  {side.upper()} is INCOMPLETE (pending: "
                             + ", ".join(f"{n} {status}" for status, n in pending.items())
                             + "): the figures below are over the samples both runs "
                             "scored, not its result")
        if p.get("metrics_not_compared"):
            lines.append(f"  metrics not compared: {p['metrics_not_compared']}; scores "
                         "computed with different settings are different metrics")
        if not p["paired"]:
            continue
        for name, d in (p.get("metrics") or {}).items():
            ci = d["ci95"]
            ci_text = f"95% CI {ci[0]:+.2f} to {ci[1]:+.2f}" if ci else "no interval"
            lines.append(f"  {name} A {d['a']:.2f}  B {d['b']:.2f}  difference "
                         f"{d['difference']:+.2f} ({ci_text}, paired bootstrap)")
        if (p.get("metrics") or p.get("metrics_not_compared")) and p["accuracy_a"] is None:
            continue  # no per-sample verdicts (BLEU): nothing changed verdict
        ci = p["ci95"]
        ci_text = f"95% CI {ci[0]:+.2f} to {ci[1]:+.2f}" if ci else "no samples in common"
        lines.append(f"  accuracy A {p['accuracy_a']:.2f}%  B {p['accuracy_b']:.2f}%  "
                     f"difference {p['difference']:+.2f} points ({ci_text}, paired)")
        lines.append(f"  fixed {p['fixed']}  broken {p['broken']}  unchanged {p['unchanged']}")
        lines += _changed_table(p["changed"], max_changed, bool(p["pairing"]["moved"]))
    for side in ("a", "b"):
        if result[f"only_in_{side}"]:
            lines.append(f"\nonly in {side.upper()}: {', '.join(result[f'only_in_{side}'])}")
    return "\n".join(lines)


def _changed_table(changed: list[dict[str, Any]], max_changed: int,
                   moved: bool) -> list[str]:
    if not changed:
        return []
    shown = changed if max_changed <= 0 else changed[:max_changed]
    rows = [["index", *(["B index"] if moved else []), "replica", "A answer", "A",
             "B answer", "B"]]
    for c in shown:
        rows.append([str(c["index"]), *([str(c["b_index"])] if moved else []),
                     str(c["replica"]), _short(c["a_pred"]), _mark(c["a_correct"]),
                     _short(c["b_pred"]), _mark(c["b_correct"])])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = ["  " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip()
           for r in rows]
    if len(shown) < len(changed):
        out.append(f"  … and {len(changed) - len(shown)} more (--max-changed 0 lists all)")
    return out


def _short(pred: Any, width: int = 32) -> str:
    text = json.dumps(pred, ensure_ascii=False, default=str)
    return text if len(text) <= width else text[:width - 1] + "…"


def _mark(correct: bool) -> str:
    return "right" if correct else "wrong"
