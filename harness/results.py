"""Per-(model, dataset) aggregation, results JSON, details JSONL and the summary table.

Memory holds counters only; details are streamed to ``details/MODEL/DATASET.jsonl`` as
results arrive and put in sample order at the end (only offsets are kept to do that).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from .records import SCORED_STATUSES, SampleResult


@dataclass
class Accumulator:
    """Running counts for one model on one dataset."""

    model: str
    dataset: str
    mode: str
    details_path: Path | None = None
    judge_mode: str | None = None  # None, 'judge', 'cascade' or 'parallel'
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
    _fh: TextIO | None = None
    _offsets: list[tuple[int, int, int, int]] = field(default_factory=list)

    def open(self) -> None:
        """Start a fresh details file (every run rewrites it from all samples)."""
        if self.details_path is not None:
            self.details_path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.details_path.with_suffix(".jsonl.part"), "w", encoding="utf-8")

    def add(self, result: SampleResult) -> None:
        """Count one result and append its details row."""
        self.total += 1
        self.cached += result.cached
        self.by_status[result.status] = self.by_status.get(result.status, 0) + 1
        if result.status in SCORED_STATUSES:
            self.scored += 1
            self.correct += bool(result.correct)
            self.rule_correct += bool(result.rule_correct)
        if result.judge_status is not None:
            self.llm_evaluated += 1
            self.llm_correct += bool(result.judge_correct)
            self.unparsed += result.judge_status == "unparsed"
            self.judge_errors += result.judge_status == "error"
            self.judge_cached += result.judge_cached
        if self._fh is not None:
            line = json.dumps(result.to_json(), ensure_ascii=False, default=str) + "\n"
            offset = self._fh.tell()
            self._fh.write(line)
            self._offsets.append((result.index, result.replica, offset, len(line.encode())))

    def close(self) -> None:
        """Finish the details file in (index, replica) order."""
        if self._fh is None or self.details_path is None:
            return
        part = Path(self._fh.name)
        self._fh.close()
        self._fh = None
        self._offsets.sort()
        with open(part, "rb") as src, open(self.details_path, "wb") as dst:
            for _, _, offset, size in self._offsets:
                src.seek(offset)
                dst.write(src.read(size))
        os.unlink(part)
        self._offsets.clear()

    def summary(self) -> dict[str, Any]:
        """The results JSON for this model and dataset."""
        failed_extract = self.by_status.get("extract_failed", 0)
        out: dict[str, Any] = {
            "model": self.model, "dataset": self.dataset, "mode": self.mode,
            "total": self.total, "scored": self.scored, "correct": self.correct,
            "counts": dict(sorted(self.by_status.items())), "cached_predictions": self.cached,
        }
        if self.mode != "infer":
            out["accuracy"] = 100.0 * self.correct / self.scored if self.scored else None
            out["accuracy_ci95"] = wilson_interval(self.correct, self.scored)
            out["extract_rate"] = (100.0 * (self.scored - failed_extract) / self.scored
                                   if self.scored else None)
        if self.judge_mode is not None:
            out["judge_mode"] = self.judge_mode
            out["cascade_stats"] = self.cascade_stats()
        if self.details_path is not None:
            out["details"] = str(self.details_path)
        return out

    def cascade_stats(self) -> dict[str, Any]:
        """The seed's ``cascade_stats``, plus ``unparsed`` and ``judge_error`` counts.

        ``llm_evaluated`` counts samples the judge was asked about (cached verdicts
        included); ``llm_accuracy`` is over the readable verdicts among them.
        """
        pct = lambda a, b: 100.0 * a / b if b else 0.0  # noqa: E731
        readable = self.llm_evaluated - self.unparsed - self.judge_errors
        return {
            "total_samples": self.scored, "rule_correct": self.rule_correct,
            "rule_accuracy": pct(self.rule_correct, self.scored),
            "llm_evaluated": self.llm_evaluated, "llm_correct": self.llm_correct,
            "llm_accuracy": pct(self.llm_correct, readable),
            "final_correct": self.correct, "final_accuracy": pct(self.correct, self.scored),
            "parallel_mode": self.judge_mode == "parallel",
            "unparsed": self.unparsed, "judge_error": self.judge_errors,
            "judge_cached": self.judge_cached,
        }


def wilson_interval(successes: int, n: int, z: float = 1.959963984540054) -> list[float] | None:
    """95% Wilson score interval for a proportion, in percent (``None`` when n = 0)."""
    if n == 0:
        return None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return [round(100 * max(0.0, centre - half), 2), round(100 * min(1.0, centre + half), 2)]


def write_json(path: Path, data: Any) -> None:
    """Write JSON atomically (temp file + rename), so a kill never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n",
                   encoding="utf-8")
    os.replace(tmp, path)


def summary_table(summaries: list[dict[str, Any]]) -> str:
    """A plain-text table: one row per dataset, one column per model."""
    models = list(dict.fromkeys(s["model"] for s in summaries))
    datasets = list(dict.fromkeys(s["dataset"] for s in summaries))
    cell = {(s["dataset"], s["model"]): _cell(s) for s in summaries}
    header = ["dataset", *models]
    rows = [[d, *(cell.get((d, m), "-") for m in models)] for d in datasets]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*header), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*r) for r in rows]
    return "\n".join(lines)


def _cell(s: dict[str, Any]) -> str:
    failed = s["total"] - s["scored"]
    if s.get("accuracy") is None:
        text = f"{s['total']} predicted" if s["mode"] == "infer" else "n/a"
    else:
        text = f"{s['accuracy']:.2f} ({s['correct']}/{s['scored']}, extract {s['extract_rate']:.0f}%)"
    cascade = s.get("cascade_stats")
    if cascade and s.get("judge_mode") in ("cascade", "parallel"):
        # The seed asks for both layers, so results compare with pure-rule runs.
        gain = cascade["final_accuracy"] - cascade["rule_accuracy"]
        text += f" = rule {cascade['rule_accuracy']:.2f} + judge {gain:.2f}"
    if cascade and cascade["unparsed"]:
        text += f" [{cascade['unparsed']} unparsed]"
    if cascade and cascade["judge_error"]:
        text += f" [{cascade['judge_error']} judge errors]"
    return text + (f" [{failed} unscored]" if failed and s["mode"] != "infer" else "")
