"""MATH-500 rule scoring of realistic replies, with and without the math fast path.

The shipped ``datasets/math500.py`` config's rule stage (``harness.scoring.Scorer``:
``math_postprocess_v2``, then ``MATHVerifyEvaluator``, math-verify in a ``WorkerPool`` of
one worker per core, warmed as the pipeline warms it, untimed) scores the same replies
(``harness.testing.math_pairs.reply_pairs``: 60 % a boxed right answer, 10 % a right
answer in prose, 10 % bare, 20 % the boxed answer of another problem) twice:

1. ``math-verify only``: ``MATHVerifyEvaluator(fast=False)``, every check in a worker;
2. ``fast path``: as shipped; checks ``math_fast`` decides never reach a worker.

``pool.size × pool.depth`` tasks pull replies from one iterator and await
``scorer.score`` (what the pipeline's score stage runs). Reported: checks/s, CPU per
check in the parent and in the workers, how many checks the fast path decided, and the
verdicts that differ between the two runs (must be 0).

    python bench/bench_math_fast.py                 # 1000 replies, --repeat 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402
from bench_rules import _children_cpu  # noqa: E402

TARGET = 3.0


async def score_all(replies: list[tuple[str, str]], fast: bool, workers: int) -> dict[str, Any]:
    """Score every reply through the math500 config's rule stage."""
    from harness.config import load_config
    from harness.evaluators.math_fast import fast_detail
    from harness.progress import Progress
    from harness.records import Completion, Sample
    from harness.stages.score import Scorer

    spec = load_config(bl.ROOT / "datasets" / "math500.py").datasets[0]
    spec.evaluator.fast = fast
    scorer = Scorer({spec.abbr: spec}, "eval", workers, Progress())
    assert scorer.pool is not None
    correct: list[bool | None] = [None] * len(replies)
    shared = iter(enumerate(replies))

    async def puller() -> None:
        for i, (reply, gold) in shared:
            sample = Sample(spec.abbr, "bench", i, 0, {"problem": "", "answer": gold}, gold, (),
                            key=str(i))
            result = await scorer.score(Completion(sample, "ok", reply))
            correct[i] = result.correct

    async with anyio.create_task_group() as tg:
        scorer.start(tg)
        await scorer.pool.warm()
        try:
            before, cpu0 = _children_cpu(), time.process_time()
            start = time.perf_counter()
            async with anyio.create_task_group() as pullers:
                for _ in range(scorer.parallelism):
                    pullers.start_soon(puller)
            wall = time.perf_counter() - start
            cpu_main, after = time.process_time() - cpu0, _children_cpu()
        finally:
            await scorer.aclose()
    from harness.postprocessors import math_postprocess_v2
    decided = sum(fast and fast_detail(math_postprocess_v2(r), g) is not None
                  for r, g in replies)
    return {"wall": wall, "correct": correct, "cpu_main": cpu_main, "decided": decided,
            "cpu_workers": sum(t - before.get(pid, 0.0) for pid, t in after.items())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000, help="replies (default 1000)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=int, default=3)
    bl.common_args(parser)
    args = parser.parse_args()

    from harness.testing.math_pairs import math500_answers, reply_pairs

    replies = reply_pairs(math500_answers(), args.count)
    bg = bl.busy_cores()
    runs: dict[str, list[dict[str, Any]]] = {"math-verify only": [], "fast path": []}
    for _ in range(args.repeat):  # interleaved, so load from elsewhere hits both alike
        for name, fast in (("math-verify only", False), ("fast path", True)):
            before = bl.children()
            try:
                runs[name].append(anyio.run(score_all, replies, fast, args.workers))
            finally:
                bl.kill_children(keep=before)
    base = runs["math-verify only"]
    ratios = sorted(s["wall"] / f["wall"] for s, f in zip(base, runs["fast path"], strict=True))
    rows = []
    for name, results in runs.items():
        results = sorted(results, key=lambda r: r["wall"])
        r = results[(len(results) - 1) // 2]
        n = len(r["correct"])
        rows.append({"run": name, "checks": n, "wall s": r["wall"],
                     "wall range s": f"{results[0]['wall']:.2f}-{results[-1]['wall']:.2f}",
                     "checks/s": n / r["wall"],
                     "CPU ms / check (parent + workers)":
                         f"{1000 * r['cpu_main'] / n:.3f} + {1000 * r['cpu_workers'] / n:.3f}",
                     "decided by the fast path": r["decided"],
                     "verdicts differing": sum(a != b for a, b in
                                               zip(r["correct"], base[0]["correct"], strict=True))})
    speedup = statistics.median(ratios)
    bl.emit("math-fast", {"count": args.count, "workers": args.workers, "repeat": args.repeat,
                          "cores": os.cpu_count(), "bg_busy_cpus": bg},
            ["run", "checks", "wall s", "wall range s", "checks/s",
             "CPU ms / check (parent + workers)", "decided by the fast path",
             "verdicts differing"], rows, as_json=args.json,
            extra={"speedup": speedup, "speedup_runs": ratios, "target": TARGET},
            notes=[f"\nfast path: {speedup:.2f}× the checks/s of math-verify alone (median of "
                   f"{len(ratios)} interleaved pairs, range {ratios[0]:.2f}-{ratios[-1]:.2f}; "
                   f"target ≥ {TARGET}×: {'met' if speedup >= TARGET else 'NOT met'})"])


if __name__ == "__main__":
    main()
