"""What the report shows, as plain data: pure functions over a work directory.

Every sample gets one *category* (the bar it counts in) and a set of *flags* (the
filters that list it). Categories partition the samples, so the bars add up to the
total; flags overlap ("wrong" and "extraction failure" both list a reply with no
answer). ``gather`` returns one JSON-ready dict; ``harness.report.render`` turns it
into HTML and never reads the work directory itself.
"""

from __future__ import annotations

import datetime as _dt
import heapq
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..paths import details_path
from ..records import NO_ANSWER_STATUSES, SCORED_STATUSES
from .workdir import (
    iter_details,
    load_run_info,
    load_summaries,
    read_rows_at,
    results_written,
    stored_verdict_totals,
)

#: Samples embedded per (model, dataset); the rest are counted but not listed.
DEFAULT_CAP = 2000
#: Characters kept of each text (prompt message, reply, judge reply) of a sample.
TEXT_LIMIT = 10_000

#: Category → label, in bar order, for each kind of dataset.
CASCADE_BARS = {"rule_correct": "rule-correct", "judge_rescued": "judge-rescued",
                "wrong": "wrong", "unparsed": "judge unparsed", "error": "errors"}
JUDGE_BARS = {"judge_correct": "judge-correct", "wrong": "wrong",
              "unparsed": "judge unparsed", "error": "errors"}
RULE_BARS = {"correct": "correct", "wrong": "wrong", "extract_failed": "extraction failed",
             "error": "errors"}
INFER_BARS = {"unscored": "predicted (not scored)", "error": "errors"}
#: A text metric (BLEU …) scores every sample without a right/wrong verdict.
METRIC_BARS = {"scored": "scored by the metric", "extract_failed": "extraction failed",
               "error": "errors"}

#: Filter key → label; "all" lists every sample.
# "wrong" lists every sample scored wrong, whatever the bar it counts in (an extraction
# failure, an unparsed verdict), so its label says so: a "wrong 0" bar beside a
# "wrong only 20" filter read as a contradiction.
FILTERS = {"all": "all", "wrong": "scored wrong (any reason)", "rescued": "judge-rescued only",
           "disagree": "rule/judge disagreements", "extract": "extraction failures",
           "unparsed": "judge unparsed", "errors": "errors"}

def kind_of(summary: dict[str, Any]) -> str:
    """``cascade`` (rule layer + judge), ``judge`` (judge only), ``rule``, ``metric``
    (a text metric such as BLEU is the primary metric) or ``infer``."""
    if summary.get("mode") == "infer":
        return "infer"
    if summary.get("primary_metric") not in (None, "accuracy"):
        return "metric"
    mode = summary.get("judge_mode")
    if mode in ("cascade", "parallel"):
        return "cascade"
    return "judge" if mode == "judge" else "rule"


def bars_for(kind: str) -> dict[str, str]:
    """The breakdown categories (and their labels) shown for a kind of dataset."""
    return {"cascade": CASCADE_BARS, "judge": JUDGE_BARS, "infer": INFER_BARS,
            "metric": METRIC_BARS}.get(kind, RULE_BARS)


def categorize(row: dict[str, Any], kind: str) -> str:
    """The one breakdown category of a details row.

    Correct samples split by who said so (rule or judge). A wrong sample is ``unparsed``
    or ``error`` when the judge could not give a verdict, since a readable verdict
    might have rescued it; a rule-check ``timeout`` is an error although it is scored
    as wrong. Unscored samples (model error, missing …) are errors.
    """
    status = row.get("status")
    judge = _judge(row)
    if status == "judge_unparsed":
        return "unparsed"
    if status not in SCORED_STATUSES:
        return "error"
    if kind == "metric":
        return "extract_failed" if status in NO_ANSWER_STATUSES else "scored"
    if kind == "infer" or (row.get("correct") is None and kind != "judge"):
        return "unscored"
    if row.get("correct"):
        if kind == "cascade":
            return "rule_correct" if _rule_correct(row) else "judge_rescued"
        return "judge_correct" if kind == "judge" else "correct"
    if judge.get("status") == "unparsed":
        return "unparsed"
    if status == "timeout" or judge.get("status") == "error":
        return "error"
    if status in NO_ANSWER_STATUSES and kind == "rule":
        return "extract_failed"
    return "wrong"


def flags_of(row: dict[str, Any], category: str) -> list[str]:
    """The filters (besides ``all``) that list this row."""
    flags = []
    if row.get("correct") is False:
        flags.append("wrong")
    if category == "judge_rescued":
        flags.append("rescued")
    judge, rule = _judge(row), row.get("rule_evaluation")
    if (isinstance(rule, dict) and judge.get("status") == "ok"
            and bool(rule.get("correct")) != bool(judge.get("llm_correct"))):
        flags.append("disagree")
    if row.get("status") in NO_ANSWER_STATUSES:
        flags.append("extract")
    # Whatever the category: a rule-correct sample (parallel mode) may have one too.
    if category == "unparsed" or judge.get("status") == "unparsed":
        flags.append("unparsed")
    if category == "error" or judge.get("status") == "error":
        flags.append("errors")
    return flags


def priority(flags: list[str]) -> int:
    """The class a sample competes in for the cap: 0 disagreements and rescues,
    1 failures (errors, unparsed verdicts), 2 other wrong answers, 3 the rest."""
    if "disagree" in flags or "rescued" in flags:
        return 0
    if "errors" in flags or "unparsed" in flags:
        return 1
    return 2 if "wrong" in flags else 3


def share_cap(sizes: list[int], cap: int) -> list[int]:
    """How many samples of each priority class to keep under ``cap``.

    Classes 0-2 share the cap evenly (a class that needs less leaves its share to the
    others), so ten thousand rescues cannot crowd every wrong answer off the page;
    class 3 (correct, undisputed) gets what remains.
    """
    takes = [0] * len(sizes)
    remaining = cap
    interesting = sorted((n, c) for c, n in enumerate(sizes[:3]))
    for i, (n, c) in enumerate(interesting):
        takes[c] = min(n, remaining // (len(interesting) - i))
        remaining -= takes[c]
    for c in range(3, len(sizes)):
        takes[c] = min(sizes[c], remaining)
        remaining -= takes[c]
    return takes


def filters_for(kind: str) -> list[str]:
    """The filter keys that mean something for a kind of dataset."""
    if kind == "cascade":
        return ["all", "wrong", "rescued", "disagree", "extract", "unparsed", "errors"]
    if kind == "judge":
        return ["all", "wrong", "extract", "unparsed", "errors"]
    if kind == "infer":
        return ["all", "errors"]
    return ["all", "wrong", "extract", "errors"]


def sample_view(row: dict[str, Any], category: str, flags: list[str],
                limit: int = TEXT_LIMIT) -> dict[str, Any]:
    """The compact, display-ready form of one details row (texts cut at ``limit``)."""
    judge, rule = _judge(row), row.get("rule_evaluation")
    view: dict[str, Any] = {
        "index": row.get("index"), "replica": row.get("replica"),
        "status": row.get("status"), "correct": row.get("correct"), "cat": category,
        "flags": flags,
        "prompt": [{"role": str(m.get("role", "")), "content": _text(m.get("content"), limit)}
                   for m in row.get("prompt") or [] if isinstance(m, dict)],
        "reply": _text(row.get("prediction"), limit), "pred": _text(row.get("pred"), limit),
        "reasoning": _text(row.get("reasoning"), limit),
        "reference": _text(row.get("reference"), limit), "error": _text(row.get("error"), limit),
    }
    if isinstance(row.get("score"), (int, float)):
        view["score"] = row["score"]  # a text metric's per-sample value (sentence BLEU …)
    if isinstance(rule, dict):
        view["rule"] = {"correct": rule.get("correct"), "pred": _text(rule.get("pred"), limit)}
    if judge:
        view["judge"] = {"status": judge.get("status"), "verdict": judge.get("verdict"),
                         "correct": judge.get("llm_correct"), "cached": judge.get("cached"),
                         "probability": judge.get("probability"),
                         "reply": _text(judge.get("prediction"), limit),
                         "reason": _text(judge.get("reason") or judge.get("error"), limit)}
    return view


def gather_section(work_dir: str | Path, summary: dict[str, Any],
                   cap: int = DEFAULT_CAP) -> dict[str, Any]:
    """Breakdown, filter counts and the capped samples of one (model, dataset).

    The details file is read twice: once to count every sample while one heap per
    priority class keeps the class's first ``cap`` samples as small keys, once to load
    the rows ``share_cap`` picks from them. Memory stays bounded by ``cap`` whatever
    the size of the run.
    """
    kind = kind_of(summary)
    bars, keys = bars_for(kind), filters_for(kind)
    counts = dict.fromkeys(bars, 0)
    filter_counts = dict.fromkeys(keys, 0)
    # Per priority class, the first ``cap`` samples in sample order (negated: max-heaps).
    heaps: list[list[tuple[int, int, int]]] = [[], [], [], []]
    total = 0
    path = details_path(work_dir, summary["model"], summary["dataset"])
    has_details = path.is_file()
    for offset, row in iter_details(path) if has_details else ():
        total += 1
        category = categorize(row, kind)
        flags = flags_of(row, category)
        counts[category] = counts.get(category, 0) + 1
        for flag in ["all", *flags]:
            if flag in filter_counts:
                filter_counts[flag] += 1
        heap = heaps[priority(flags)]
        key = (-_int(row.get("index")), -_int(row.get("replica")), offset)
        if len(heap) < cap:
            heapq.heappush(heap, key)
        elif cap and key > heap[0]:
            heapq.heapreplace(heap, key)
    kept: list[tuple[int, int, int]] = []
    for heap, take in zip(heaps, share_cap([len(h) for h in heaps], cap), strict=True):
        kept += sorted(heap, reverse=True)[:take]
    kept.sort(reverse=True)  # back in sample order
    samples = []
    for row in read_rows_at(path, [k[2] for k in kept]) if kept else []:
        category = categorize(row, kind)
        samples.append(sample_view(row, category, flags_of(row, category)))
    return {
        "model": summary["model"], "dataset": summary["dataset"], "kind": kind,
        "judge_mode": summary.get("judge_mode"), "has_details": has_details,
        "breakdown": [{"key": k, "label": label, "count": counts.get(k, 0)}
                      for k, label in bars.items()]
        + [{"key": k, "label": k, "count": n} for k, n in counts.items() if k not in bars],
        "total_samples": total, "embedded": len(samples), "cap": cap,
        "filters": [{"key": k, "label": FILTERS[k],
                     "count": sum(k == "all" or k in s["flags"] for s in samples),
                     "total": filter_counts[k]} for k in keys],
        "samples": samples,
    }


def judge_costs(summaries: list[dict[str, Any]],
                stored: dict[str, dict[str, int]] | None = None,
                written: Mapping[tuple[str, str], int] | None = None) -> list[dict[str, Any]]:
    """One row per judge endpoint: its latest run's judge stats plus what the store holds.

    A summary's ``judge_stats`` counts the whole judge endpoint (shared by the datasets
    it judged), so each endpoint is taken once, not summed over datasets, from the
    latest result that has it (``latest_stats``); ``datasets`` are those its figures
    are of.
    """
    latest = latest_stats(summaries, "judge_stats",
                          lambda s: s["judge_stats"].get("judge", "judge"), written)
    return [{**stats, "judge": name, "stored": (stored or {}).get(name),
             "datasets": [f"{s['model']}/{s['dataset']}" for s in summaries
                          if s.get("judge_stats") == stats]}
            for name, stats in latest.items()]


def model_costs(summaries: list[dict[str, Any]],
                written: Mapping[tuple[str, str], int] | None = None) -> list[dict[str, Any]]:
    """One row per model: the call statistics of its latest run (``latest_stats``)."""
    latest = latest_stats(summaries, "call_stats", lambda s: s["model"], written)
    return [{"model": model, **stats} for model, stats in latest.items()]


def latest_stats(summaries: list[dict[str, Any]], field: str,
                 key: Callable[[dict[str, Any]], str],
                 written: Mapping[tuple[str, str], int] | None = None
                 ) -> dict[str, dict[str, Any]]:
    """``field`` (a run's whole statistics of an endpoint) of the latest results file
    that has it, per ``key`` of a summary (its model, its judge), in the order the
    summaries first name them.

    ``written`` gives when each (model, dataset) result was written
    (``workdir.results_written``). A result kept from an earlier run (a later one got
    less far on its dataset) is never rewritten, so the newest file holds the latest
    run's figures; one file's figures are taken whole, never mixed with another run's.
    """
    when = written or {}
    newest: dict[str, tuple[int, dict[str, Any]]] = {}
    for s in summaries:
        if s.get(field):
            at = when.get((s["model"], s["dataset"]), 0)
            if key(s) not in newest or at > newest[key(s)][0]:
                newest[key(s)] = (at, s[field])
    return {name: stats for name, (_, stats) in newest.items()}


def gather(work_dir: str | Path, cap: int = DEFAULT_CAP) -> dict[str, Any]:
    """Everything the report shows, for ``harness.report.render.render_html``."""
    work = Path(work_dir)
    summaries = load_summaries(work)
    info = load_run_info(work)
    written = results_written(work, summaries)
    return {
        "work_dir": str(work), "cap": cap, "text_limit": TEXT_LIMIT,
        "generated": _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "elapsed_seconds": info.get("elapsed_seconds"),
        "summaries": summaries,
        "sections": [gather_section(work, s, cap) for s in summaries],
        "judges": judge_costs(summaries, stored_verdict_totals(work), written),
        "models": model_costs(summaries, written),
    }


def _judge(row: dict[str, Any]) -> dict[str, Any]:
    judge = row.get("llm_evaluation")
    return judge if isinstance(judge, dict) else {}


def _rule_correct(row: dict[str, Any]) -> bool:
    rule = row.get("rule_evaluation")
    return bool(rule.get("correct")) if isinstance(rule, dict) else False


def _int(value: Any) -> int:
    return value if isinstance(value, int) else -1


def _text(value: Any, limit: int) -> str | None:
    """Any value as display text (non-strings as JSON), cut to ``limit`` characters."""
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                          default=str)
    if len(text) > limit:
        text = text[:limit] + f"\n… [{len(text) - limit:,} more characters not shown]"
    return text
