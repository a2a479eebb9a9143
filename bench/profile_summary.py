"""Where the time goes, from a ``py-spy record -f raw --idle --threads`` profile.

Prints the top functions by own time (leaf frames, line numbers dropped) and a top-level
breakdown of the main thread, where the event loop runs, by category: HTTP client,
socket I/O, extraction/scoring, store, details writing, streams/event loop, imports, idle.

    python bench/profile_summary.py bench/results/pipeline-n10000-c64-....txt [--top 15]

It also charges each busy sample (any thread) to a pipeline stage (:data:`STAGES`): the
outermost frame of a ``harness/stages/`` module in its stack, i.e. the stage task whose
coroutine the event loop was running (the model stage's inline scoring is the model
stage's, a judge call's HTTP client work the judge stage's). Samples outside every
stage task (event-loop callbacks such as socket reads, set-up) are "no stage".

A sample is put in a category by walking its stack from the leaf towards the root: the
first frame whose file belongs to a category decides. Frames of the standard library and
of anyio/asyncio helpers (locks, cancel scopes, tasks) are "neutral" and charge their
caller, so ``json.dumps`` called by the store is store time and a cancel scope entered by
the model client is HTTP-client time. What nothing claims is the event loop itself.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

#: (category, file-path prefixes), checked in this order for each frame.
CATEGORIES: list[tuple[str, tuple[str, ...]]] = [
    ("socket I/O (asyncio transports)", ("asyncio/selector_events.py", "asyncio/sslproto.py",
                                        "asyncio/transports.py")),
    ("HTTP client (openai SDK / httpx2 / aiohttp)", (
        "openai/", "httpx2/", "httpx/", "httpcore/", "aiohttp/", "multidict/", "yarl/",
        "propcache/", "aiohappyeyeballs/", "pydantic/", "pydantic_core/", "h11/",
        "tenacity/", "harness/client.py", "harness/retry.py")),
    ("extraction / scoring", (
        "harness/postprocessors/", "harness/evaluators/", "harness/stages/score.py",
        "harness/judge/verdict.py", "math_verify/", "sympy/", "latex2sympy2_extended/")),
    ("judge (pacing, prompts, runner)", ("harness/judge/",)),
    ("store (aiosqlite / SQLite)", ("aiosqlite/", "sqlite3/", "harness/store.py")),
    ("details writing / results", ("harness/results.py", "harness/report/")),
    ("keys (canonical JSON + sha256)", ("harness/keys.py",)),
    ("progress display", ("harness/progress/", "rich/")),
    ("streams (anyio memory object streams)", ("anyio/streams/memory.py",)),
    ("pipeline orchestration (harness)", ("harness/pipeline.py", "harness/api.py",
                                          "harness/dataset.py", "harness/prompt.py",
                                          "harness/validate.py", "harness/records.py")),
]
#: Pipeline stage of a ``harness/stages/`` module (see :func:`stage_of`).
STAGES: dict[str, str] = {
    "harness/stages/generate.py": "model (generate: calls, inline scoring)",
    "harness/stages/judge.py": "judge (lookup, ask)",
    "harness/stages/read.py": "read (stored predictions)",
    "harness/stages/score.py": "score (rule worker pool)",
    "harness/stages/write.py": "store writer",
    "harness/stages/collect.py": "collect (results, details)",
}
NO_STAGE = "no stage (event-loop callbacks, socket reads, set-up, other threads)"
IMPORTS = "imports (module loading, also lazy ones inside the run)"
OUTSIDE = "outside the event loop (config, set-up, shutdown)"
LOOP = "event loop itself (asyncio/anyio scheduling)"
IDLE = "idle (waiting in epoll / queues)"

#: Leaf frames that mean "this thread is waiting, not working".
IDLE_LEAVES = re.compile(
    r"^(\w+\.)?select \(selectors\.py|^_worker \(concurrent/futures/thread\.py"
    r"|^_connection_worker_thread \(aiosqlite/core\.py:59\)"
    r"|^(Condition\.|Event\.)?wait \(threading\.py"
    r"|^(\w+\.)?get \(queue\.py|^_wait_for_tstate_lock \(threading\.py")

_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")


def parse(path: Path) -> list[tuple[str, list[str], int]]:
    """``(thread, frames root→leaf, samples)`` per line of a raw (collapsed) profile."""
    out = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        thread = frames[0]
        frames = [f for f in frames[1:] if not f.startswith(("thread (", "process ("))]
        out.append((thread, frames, int(count)))
    return out


def frame_file(frame: str) -> tuple[str, str]:
    """``(function, file)`` of ``'func (file:line)'``."""
    m = _FRAME.match(frame)
    return (m.group("func"), m.group("file")) if m else (frame, "")


SQLITE_CALL = "SQLite call in the aiosqlite thread (C code: CPU, disk, or waiting for the GIL)"


def classify(frames: list[str]) -> str:
    """The category of one stack (root→leaf)."""
    return classify_detail(frames)[0]


def classify_detail(frames: list[str]) -> tuple[str, str]:
    """The category of one stack (root→leaf) and the package (first path component, or
    the harness module) of the frame that decided it."""
    if not frames:
        return OUTSIDE, ""
    leaf = frames[-1]
    if IDLE_LEAVES.match(leaf):
        return IDLE, ""
    if leaf.startswith("_connection_worker_thread (aiosqlite/core.py"):
        return SQLITE_CALL, "aiosqlite"
    if any("importlib._bootstrap" in f for f in frames):
        return IMPORTS, ""
    if not any(f.startswith("BaseEventLoop.run_forever") for f in frames):
        return OUTSIDE, ""
    for frame in reversed(frames):
        _, file = frame_file(frame)
        for name, prefixes in CATEGORIES:
            if file.startswith(prefixes):
                return name, _package(file)
    return LOOP, ""


def stage_of(frames: list[str]) -> str:
    """The pipeline stage of one stack (root→leaf): its outermost stage-module frame."""
    for frame in frames:
        stage = STAGES.get(frame_file(frame)[1])
        if stage is not None:
            return stage
    return NO_STAGE


def _package(file: str) -> str:
    parts = file.split("/")
    if parts[0] == "harness":
        return "/".join(parts[:2]) if len(parts) > 1 else file
    return parts[0]


def summarize(path: Path, top: int = 15, rate: float | None = None) -> dict[str, Any]:
    """Own time per function (all threads, idle leaves left out) and the main thread's
    breakdown by category, as sample counts and percentages."""
    rows = parse(path)
    main_tids = {_tid(t) for t, _, _ in rows if "MainThread" in t}
    own: Counter[str] = Counter()
    main: Counter[str] = Counter()
    detail: Counter[tuple[str, str]] = Counter()
    inclusive: Counter[str] = Counter()
    threads: Counter[str] = Counter()
    busy_other: Counter[str] = Counter()
    stages: Counter[str] = Counter()
    for thread, frames, n in rows:
        category, package = classify_detail(frames)
        if category != IDLE:
            stages[stage_of(frames)] += n
        is_main = _tid(thread) in main_tids
        threads[thread] += n
        if is_main:
            main[category] += n
            detail[category, package] += n
        elif category != IDLE:
            busy_other[_thread_name(thread)] += n
        if is_main and category != IDLE and frames:
            func, file = frame_file(frames[-1])
            own[f"{func} ({file})"] += n
            seen = set()
            for frame in frames:
                func, file = frame_file(frame)
                if file.startswith("harness/") and (func, file) not in seen:
                    seen.add((func, file))
                    inclusive[f"{func} ({file})"] += n
    total_own = sum(own.values()) or 1
    total_main = sum(main.values()) or 1
    result = {
        "profile": str(path),
        "samples_main_thread": sum(main.values()),
        "samples_busy_main_thread": total_own,
        "top_own": [{"function": f, "samples": n, "pct_busy": 100 * n / total_own,
                     "pct_main": 100 * n / total_main}
                    for f, n in own.most_common(top)],
        "top_inclusive_harness": [
            {"function": f, "samples": n, "pct_main": 100 * n / total_main}
            for f, n in inclusive.most_common() if n < 0.9 * total_own][:top],
        "main_thread": [{"category": c, "samples": n, "pct": 100 * n / total_main,
                         "by_package": [{"package": p, "samples": k,
                                         "pct": 100 * k / total_main}
                                        for (c2, p), k in detail.most_common()
                                        if c2 == c and p]}
                        for c, n in main.most_common()],
        "other_threads_busy": [{"thread": t, "samples": n} for t, n in busy_other.most_common()],
        "samples_busy_all_threads": sum(stages.values()),
        "by_stage": [{"stage": s, "samples": n} for s, n in stages.most_common()],
    }
    if rate:
        result["rate_hz"] = rate
        result["main_thread_seconds"] = sum(main.values()) / rate
    return result


def _tid(thread: str) -> str:
    m = re.match(r"(?:process \(\d+\)[^;]*?)?thread \((\d+)\)", thread)
    return m.group(1) if m else thread


def _thread_name(thread: str) -> str:
    return re.sub(r"^thread \(\d+\): ", "", thread)


def print_summary(summary: dict[str, Any]) -> None:
    """The two tables, in markdown."""
    print(f"\nProfile {summary['profile']}: {summary['samples_main_thread']} main-thread "
          f"samples, {summary['samples_busy_main_thread']} of them busy (not idle)")
    print("\nTop functions by own time (leaf frame), main thread:\n")
    print("| # | function (file) | samples | % of busy | % of all main-thread samples |")
    print("|---|---|---|---|---|")
    for i, row in enumerate(summary["top_own"], 1):
        print(f"| {i} | `{row['function']}` | {row['samples']} | {row['pct_busy']:.1f} | "
              f"{row['pct_main']:.1f} |")
    print("\nharness functions by inclusive time (themselves and what they call), main thread "
          "(those in over 90 % of the busy samples, the CLI's entry frames, left out):\n")
    print("| function (file) | samples | % of main-thread samples |")
    print("|---|---|---|")
    for row in summary["top_inclusive_harness"]:
        print(f"| `{row['function']}` | {row['samples']} | {row['pct_main']:.1f} |")
    print("\nMain thread (event loop) by category, % of its samples (≈ wall time):\n")
    print("| category | samples | % | by package of the deciding frame (% of main thread) |")
    print("|---|---|---|---|")
    for row in summary["main_thread"]:
        parts = ", ".join(f"{p['package']} {p['pct']:.1f}" for p in row["by_package"][:8])
        print(f"| {row['category']} | {row['samples']} | {row['pct']:.1f} | {parts} |")
    if summary["other_threads_busy"]:
        print("\nOther threads, samples not idle: " + ", ".join(
            f"{r['thread']} {r['samples']}" for r in summary["other_threads_busy"])
              + " (the aiosqlite thread's are mostly its SQLite calls, C code that may be "
                "waiting for the disk or the GIL rather than using CPU)")
    busy = summary["samples_busy_all_threads"] or 1
    print("\nBusy samples (all threads) by pipeline stage (the outermost `harness/stages/` "
          "frame):\n")
    print("| stage | samples | % of busy |")
    print("|---|---|---|")
    for row in summary["by_stage"]:
        print(f"| {row['stage']} | {row['samples']} | {100 * row['samples'] / busy:.1f} |")


#: The main-thread categories a bare HTTP client has too: what ``against_floor`` compares.
TRANSPORT = (CATEGORIES[0][0], CATEGORIES[1][0], LOOP)


def against_floor(harness: dict[str, Any], floor: dict[str, Any]) -> dict[str, Any]:
    """Busy main-thread samples of a harness profile against a floor client's (same N,
    rate and server): harness's HTTP client, socket I/O and event loop (``TRANSPORT``)
    against the floor's whole busy main thread, and the rest of harness's apart."""
    transport = sum(r["samples"] for r in harness["main_thread"] if r["category"] in TRANSPORT)
    floor_busy = floor["samples_busy_main_thread"] or 1
    return {"floor_profile": floor["profile"], "floor_busy": floor_busy,
            "harness_busy": harness["samples_busy_main_thread"],
            "harness_transport": transport,
            "harness_rest": harness["samples_busy_main_thread"] - transport,
            "rest_by_category": [
                {"category": r["category"], "samples": r["samples"]}
                for r in harness["main_thread"]
                if r["category"] not in (*TRANSPORT, IDLE)]}


def print_against_floor(cmp: dict[str, Any]) -> None:
    """``against_floor``'s figures, in markdown."""
    floor = cmp["floor_busy"]
    print(f"\nAgainst the floor client ({cmp['floor_profile']}), busy main-thread samples "
          "(≈ CPU time at the same rate):\n")
    print("| main thread | samples | × the floor's |")
    print("|---|---|---|")
    print(f"| floor client, all of it | {floor} | 1.00 |")
    print(f"| harness, all of it | {cmp['harness_busy']} | {cmp['harness_busy'] / floor:.2f} |")
    print(f"| harness: HTTP client, socket I/O, event loop | {cmp['harness_transport']} | "
          f"{cmp['harness_transport'] / floor:.2f} |")
    rest = ", ".join(f"{r['category'].split(' (')[0]} {r['samples']}"
                     for r in cmp["rest_by_category"])
    print(f"| harness: the rest ({rest}) | {cmp['harness_rest']} | "
          f"{cmp['harness_rest'] / floor:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", type=Path)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--rate", type=float, default=None, help="sampling rate, Hz")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    summary = summarize(args.profile, args.top, args.rate)
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print_summary(summary)


if __name__ == "__main__":
    main()
