"""Read what a run left in its work directory: summaries, details rows, stored verdicts.

Pure reads with the standard library only (``json``, ``sqlite3``): the report and
``compare`` never import the pipeline, so they work on a copied or archived work
directory, and while another run is writing to it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import WorkDirError
from ..paths import result_path


def load_summaries(work_dir: str | Path) -> list[dict[str, Any]]:
    """Every ``results/MODEL/DATASET.json`` of the work directory, in a stable order.

    The results files are read rather than ``summary.json`` because a work directory
    shared by several runs (different configs, ``--mode eval`` of one dataset) keeps
    the latest result of every (model, dataset), while ``summary.json`` holds the last
    run's only. ``summary.json`` is the fallback when no results files exist.
    """
    work = Path(work_dir)
    if not work.is_dir():
        raise WorkDirError(f"{work}: no such directory")
    summaries = []
    for path in sorted((work / "results").rglob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # a half-written or foreign file is not a result
        if isinstance(data, dict) and "model" in data and "dataset" in data:
            summaries.append(data)
    if not summaries and (work / "summary.json").is_file():
        summaries = list(load_run_info(work).get("results", []))
    if not summaries:
        raise WorkDirError(f"{work}: no results found (expected results/MODEL/DATASET.json "
                           "from `python -m harness run`)")
    return summaries


def results_written(work_dir: str | Path,
                    summaries: list[dict[str, Any]]) -> dict[tuple[str, str], int]:
    """When the results file of each summary was last written, in nanoseconds (none
    for a summary read from ``summary.json`` alone): which result is from the latest
    run, as a result kept from an earlier run is left as it was."""
    out = {}
    for s in summaries:
        try:
            out[(s["model"], s["dataset"])] = result_path(
                work_dir, s["model"], s["dataset"]).stat().st_mtime_ns
        except OSError:
            continue  # no results file: the summary.json fallback
    return out


def load_run_info(work_dir: str | Path) -> dict[str, Any]:
    """``summary.json`` of the last run (``{}`` when absent or unreadable)."""
    try:
        return json.loads((Path(work_dir) / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def iter_details(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(byte offset, row)`` for every readable line of a details JSONL file.

    Offsets let a caller scan a large file once, keep only small keys, and read back
    the few rows it wants with :func:`read_rows_at`.
    """
    offset = 0
    with open(path, "rb") as fh:
        for line in fh:
            start, offset = offset, offset + len(line)
            try:
                row = json.loads(line)
            except ValueError:
                continue  # a truncated last line from a killed run
            if isinstance(row, dict):
                yield start, row


def read_rows_at(path: Path, offsets: list[int]) -> list[dict[str, Any]]:
    """The rows starting at ``offsets`` (as given by :func:`iter_details`), in that order."""
    rows = []
    with open(path, "rb") as fh:
        for offset in offsets:
            fh.seek(offset)
            rows.append(json.loads(fh.readline()))
    return rows


def stored_verdict_totals(work_dir: str | Path) -> dict[str, dict[str, int]]:
    """Per judge: verdict rows, requests and tokens in ``harness.db``, over all runs.

    A rerun serves verdicts from the store and reports (almost) zero requests; what
    judging actually cost is in the store. Opened read-only, so a report never takes
    the work directory's lock or changes the database.
    """
    db = Path(work_dir) / "harness.db"
    if not db.is_file():
        return {}
    sql = ("SELECT judge, count(*), sum(requests), sum(prompt_tokens), "
           "sum(completion_tokens) FROM verdicts GROUP BY judge ORDER BY judge")
    try:
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
        try:
            rows = conn.execute(sql).fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return {}  # an older store without verdicts, or a locked one: cost is optional
    return {judge: {"verdicts": n, "requests": req or 0, "prompt_tokens": pt or 0,
                    "completion_tokens": ct or 0} for judge, n, req, pt, ct in rows}
