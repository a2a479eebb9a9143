"""Rule-check throughput: math-verify in one process vs ``harness.workers.WorkerPool``.

The same list of (prediction, gold) pairs, built from MATH-500 answers (boxed replies,
prose replies without a box, and wrong answers taken from other problems), is scored

1. ``sequential``: in a fresh process, one after another, with
   ``MATHVerifyEvaluator().score_sample`` (main thread, so math-verify's alarms work),
   after the warm-up every worker runs (``evaluator.warm_up()``, not timed) and with the
   GC settings the workers use (``harness.gc_tuning``);
2. ``pool``: through ``WorkerPool`` (one worker per core; ``pool.warm(evaluator.warm_up)``
   first, as the pipeline does, not timed), ``--tasks`` concurrent tasks (default
   2 × workers) pulling from one shared iterator and awaiting
   ``pool.run(evaluator.score_sample, pred, gold, {}, timeout=..., key=gold)`` (keyed by
   the reference, as the pipeline calls it).

Then the pathological case: one prediction (default ``\\boxed{10^{10^{10^{10^{10}}}}}``
against gold ``1``, which math-verify needs well over a minute to compare) is put in the
middle of the list, and the pool run is repeated twice:

3. ``pool + pathological, math-verify alarms on``: the evaluator as shipped
   (``verify_timeout=5``) and the pipeline's per-check limit ``MATHVerifyEvaluator.timeout``
   (20 s): math-verify's own alarm stops the comparison, no worker is killed;
4. ``pool + pathological, hang``: math-verify's alarms pushed out to an hour (a check
   the alarm cannot stop, as a hang inside C code would be) and a pool limit of
   ``--timeout`` s: the worker is killed and replaced, the sample is one timeout, and the
   run continues.

    python bench/bench_rules.py                    # 500 pairs, one worker per core
    python bench/bench_rules.py --count 300 --timeout 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

import anyio
import benchlib as bl

DATA = bl.ROOT / "datasets" / "data" / "math500" / "test.jsonl"
PATHOLOGICAL = r"\boxed{10^{10^{10^{10^{10}}}}}"
TARGET_SPEEDUP = 1.7
SOLO = "pool, 1 worker (CPU per check alone)"


def build_pairs(count: int, path: Path = DATA) -> list[tuple[str, str]]:
    """``count`` (prediction, gold) pairs from MATH-500 answers, cycling through them
    (``harness.testing.math_pairs.reply_pairs``: boxed right answers, prose, bare
    answers, boxed answers of another problem). Up to 500 pairs every problem comes once
    (301 distinct answers: a repeated one is parsed once per process, and the pool routes
    checks by reference); past that caches favour the single process more, so keep
    ``count`` ≤ 500 for a fair speedup."""
    from harness.testing.math_pairs import math500_answers, reply_pairs

    return reply_pairs(math500_answers(path), count)


def run_sequential(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """Score every pair in this process's main thread."""
    from harness.evaluators.math_verify import MATHVerifyEvaluator
    from harness.gc_tuning import tune_gc

    evaluator = MATHVerifyEvaluator()
    start = time.perf_counter()
    # Imports math-verify and runs the same warm-up as every pool worker, not timed.
    evaluator.warm_up()
    # The GC settings every pool worker runs with (harness.gc_tuning), so the speedup
    # measures parallelism alone.
    tune_gc()
    warm = time.perf_counter() - start
    cpu0, start = time.process_time(), time.perf_counter()
    correct = [bool(evaluator.score_sample(p, g, {})["correct"]) for p, g in pairs]
    wall = time.perf_counter() - start
    return {"wall": wall, "correct": correct, "timeouts": 0, "warm": warm,
            "cpu_main": time.process_time() - cpu0, "cpu_workers": 0.0}


def run_sequential_fresh(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """:func:`run_sequential` in a fresh process (in its main thread), so that no sympy
    or math-verify cache is warm from an earlier repeat."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as ex:
        return ex.submit(run_sequential, pairs).result()


# noqa below: ``timeout`` is the pool's per-check limit passed through, not a cancel scope.
async def run_pool(pairs: list[tuple[str, str]], workers: int, tasks: int, timeout: float,  # noqa: ASYNC109
                   evaluator_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """Score every pair through a ``WorkerPool`` warmed as the pipeline warms it
    (``pool.warm(evaluator.warm_up)``, not timed); per-sample results and timings."""
    from harness.evaluators.math_verify import MATHVerifyEvaluator
    from harness.workers import WorkerPool, WorkerTimeout

    evaluator = MATHVerifyEvaluator(**(evaluator_kwargs or {}))
    pool = WorkerPool(workers)
    start = time.perf_counter()
    await pool.warm(evaluator.warm_up)
    warm_s = time.perf_counter() - start
    correct: list[bool | None] = [None] * len(pairs)
    seconds = [0.0] * len(pairs)
    timed_out: list[int] = []
    shared = iter(enumerate(pairs))

    async def puller() -> None:
        for i, (pred, gold) in shared:
            t = time.perf_counter()
            try:
                detail = await pool.run(evaluator.score_sample, pred, gold, {}, timeout=timeout,
                                        key=gold)
                correct[i] = bool(detail["correct"])
            except WorkerTimeout:
                timed_out.append(i)
            seconds[i] = time.perf_counter() - t

    try:
        workers_cpu0, cpu0 = _children_cpu(), time.process_time()
        start = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for _ in range(tasks):
                tg.start_soon(puller)
        wall = time.perf_counter() - start
        cpu_main = time.process_time() - cpu0
        # Workers alive at both ends (a killed worker's CPU time is lost; a new one
        # counts from zero).
        workers_cpu1 = _children_cpu()
    finally:
        await pool.aclose()
    cpu_workers = sum(t - workers_cpu0.get(pid, 0.0) for pid, t in workers_cpu1.items())
    slow = sorted(range(len(pairs)), key=seconds.__getitem__, reverse=True)[:3]
    return {"wall": wall, "correct": correct, "timeouts": pool.timeouts, "warm": warm_s,
            "cpu_main": cpu_main, "cpu_workers": cpu_workers,
            "timed_out": timed_out, "slowest": [(i, round(seconds[i], 2)) for i in slow]}


def _children_cpu() -> dict[int, float]:
    """CPU seconds (user + system) so far of each child process of this one."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for pid in bl.children():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[pid] = (int(fields[11]) + int(fields[12])) / tick
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=500,
                        help="pairs (default 500: every MATH-500 answer once)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="worker processes (default: one per core)")
    parser.add_argument("--tasks", type=int, default=None,
                        help="concurrent tasks pulling pairs (default 2 × workers)")
    parser.add_argument("--timeout", type=float, default=5.0,
                        help="pool time limit per check in the hang scenario (default 5 s)")
    parser.add_argument("--pathological", default=PATHOLOGICAL,
                        help="the slow prediction (gold: --pathological-gold)")
    parser.add_argument("--pathological-gold", default="1")
    parser.add_argument("--repeat", type=int, default=3,
                        help="repeat every scenario, report the median run (default 3)")
    parser.add_argument("--no-pathological", action="store_true",
                        help="only the sequential and pool runs")
    bl.common_args(parser)
    args = parser.parse_args()
    tasks = args.tasks or 2 * args.workers

    from harness.evaluators.math_verify import MATHVerifyEvaluator

    pairs = build_pairs(args.count)
    bg = bl.busy_cores()
    limit = MATHVerifyEvaluator.timeout
    bad = list(pairs)
    bad.insert(len(bad) // 2, (args.pathological, args.pathological_gold))
    hang = {"parse_timeout": 3600, "verify_timeout": 3600}
    scenarios = [("pool (warmed as the pipeline does)", pairs, limit, None, args.workers)]
    if args.workers > 1:
        # The same pool with one worker: its CPU per check, next to the full pool's,
        # shows what running checks side by side costs on this machine's cores.
        scenarios.append((SOLO, pairs, limit, None, 1))
    if not args.no_pathological:
        scenarios += [("pool + pathological, math-verify alarms on", bad, limit, None,
                       args.workers),
                      ("pool + pathological, hang (alarms off)", bad, args.timeout, hang,
                       args.workers)]
    # Every repeat runs every scenario, interleaved, so a burst of load from elsewhere
    # hits all of them alike; each row is the scenario's run with the median wall time.
    walls: dict[str, list[float]] = {}
    chosen: dict[str, list[dict[str, Any]]] = {}
    for _ in range(args.repeat):
        chosen.setdefault("sequential", []).append(run_sequential_fresh(pairs))
        for name, items, timeout, kwargs, workers in scenarios:
            # One event loop per scenario: anyio keeps its worker processes per event
            # loop, so each scenario starts from fresh workers.
            before = bl.children()
            try:
                result = anyio.run(run_pool, items, workers, 2 * workers if workers != args.workers
                                   else tasks, timeout, kwargs)
            finally:
                bl.kill_children(keep=before)
            chosen.setdefault(name, []).append(result)
    runs: list[tuple[str, dict[str, Any], float | None]] = []
    for name, timeout in [("sequential", None), *((s[0], s[2]) for s in scenarios)]:
        results = sorted(chosen[name], key=lambda r: r["wall"])
        walls[name] = [r["wall"] for r in results]
        runs.append((name, results[(len(results) - 1) // 2], timeout))
    seq = runs[0][1]

    base = seq["wall"]
    pool_wall = runs[1][1]["wall"]
    rows = []
    for name, r, timeout in runs:
        n = len(r["correct"])
        mismatches = None
        if name.startswith("pool (") or name == SOLO:
            mismatches = sum(a != b for a, b in zip(r["correct"], seq["correct"], strict=True))
        elif name != "sequential":
            # drop the pathological sample, then compare with the sequential run
            mid = len(pairs) // 2
            rest = r["correct"][:mid] + r["correct"][mid + 1:]
            mismatches = sum(a != b for a, b in zip(rest, seq["correct"], strict=True))
        rows.append({"run": name, "pairs": n, "pool timeout s": timeout,
                     "wall s": r["wall"],
                     "wall range s": f"{walls[name][0]:.2f}-{walls[name][-1]:.2f}",
                     "samples/s": n / r["wall"],
                     "speedup": base / r["wall"] * n / len(pairs),
                     "extra s vs pool": (r["wall"] - pool_wall) if "patho" in name else None,
                     "CPU s / 1k (main + workers)":
                         f"{1000 * r['cpu_main'] / n:.2f} + {1000 * r['cpu_workers'] / n:.2f}",
                     "timeouts": r["timeouts"], "correct": sum(bool(c) for c in r["correct"]),
                     "mismatches vs sequential": mismatches,
                     "warm-up s": r["warm"], "slowest (index, s)": r.get("slowest")})
    # The headline: each repeat's sequential and pool runs ran back to back, so their
    # ratio shares the machine's state of the moment; the median of those ratios is
    # steadier here than the ratio of the two median rows (also shown, per row).
    pool_name = scenarios[0][0]
    paired = sorted(s["wall"] / p["wall"]
                    for s, p in zip(chosen["sequential"], chosen[pool_name], strict=True))
    speedup = statistics.median(paired)
    # The best a pool of N workers can do here: N × (a check's CPU alone) / (a check's CPU
    # with N running at once). Shared caches and memory bandwidth make the second larger.
    ceiling = None
    if SOLO in chosen:
        solo = next(r for name, r, _ in runs if name == SOLO)
        full = runs[1][1]
        ceiling = (args.workers * (solo["cpu_workers"] / len(solo["correct"]))
                   / (full["cpu_workers"] / len(full["correct"])))
    params = {"count": args.count, "workers": args.workers, "tasks": tasks,
              "cores": os.cpu_count(), "repeat": args.repeat, "bg_busy_cpus": bg,
              "pathological": args.pathological}
    extra = {"speedup": speedup, "speedup_runs": paired, "parallel_ceiling": ceiling,
             "target_speedup": TARGET_SPEEDUP, "ok": speedup >= TARGET_SPEEDUP,
             "pathological_index": len(pairs) // 2}
    columns = ["run", "pairs", "pool timeout s", "wall s", "wall range s", "samples/s",
               "speedup", "extra s vs pool", "CPU s / 1k (main + workers)", "timeouts",
               "correct", "mismatches vs sequential", "warm-up s", "slowest (index, s)"]
    bl.emit("rules", params, columns, rows, as_json=args.json, extra=extra,
            notes=[f"\npool speedup over sequential on {args.workers} workers: {speedup:.2f}× "
                   f"(median over {len(paired)} repeats of sequential wall / pool wall, "
                   f"range {paired[0]:.2f}-{paired[-1]:.2f}; target ≥ {TARGET_SPEEDUP}×: "
                   f"{'met' if speedup >= TARGET_SPEEDUP else 'NOT met'}). The 'speedup' "
                   f"column compares median rows. 'extra s vs pool' compares with the plain "
                   f"pool run."
                   + (f"\nparallel ceiling on this machine: {ceiling:.2f}× ({args.workers} × a "
                      f"check's worker CPU alone / with {args.workers} checks at once)"
                      if ceiling else "")])


if __name__ == "__main__":
    main()
