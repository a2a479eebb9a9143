"""harness's WorkerPool against anyio.to_process and pebble on the same math-verify checks.

The 500 (prediction, gold) pairs of ``bench_rules.py`` (MATH-500 answers), scored by
``MATHVerifyEvaluator(fast=False).score_sample`` through three pools of ``--workers``
processes, each warmed with ``evaluator.warm_up`` (math-verify imports and the parser
cache warm-up, untimed), ``2 × workers`` tasks pulling from one iterator:

1. ``harness WorkerPool``: ``pool.warm(warm_up)`` in every worker, calls keyed by the
   reference (a worker keeps the references it parsed), ``timeout=`` kills a hung worker;
2. ``anyio.to_process``: ``run_sync(score_sample, cancellable=True)`` under
   ``move_on_after(timeout)`` (a cancelled call kills its worker); anyio cannot address
   a worker, so the warm-up is ``workers`` concurrent ``run_sync(warm_up)`` calls (each
   idle worker takes one) and there is no routing by reference;
3. ``pebble.ProcessPool`` (spawn context, as an adapter in an async process would use):
   ``initializer=warm_up`` in every worker, ``schedule(..., timeout=)`` (pebble kills a
   worker past its timeout), futures awaited with ``asyncio.wrap_future``; the run starts
   once every worker has answered a call (so has run its initializer); no routing.

The backends run interleaved, ``--repeat`` rounds of A B C, each in a fresh event loop
with fresh workers, so load from elsewhere on a shared machine hits them alike. Every
figure is the median over the rounds with its range; ``checks/s`` moves with the load,
the CPU figures (parent CPU per check, worker CPU per check, from ``/proc``) much less.
Each round also records ``other busy CPUs``: CPUs busy in ``/proc/stat`` during the run
minus this benchmark's own CPU (parent and workers), i.e. the load from elsewhere.

Every check runs through ``score_checked``, which also reports whether its worker had
run the warm-up before (``cold checks`` must be 0: a timed check must never pay the
imports). ``--hang`` adds one check that math-verify's alarms cannot stop (alarms pushed
to an hour, ``10^{10^{10^{10^{10}}}}`` against ``1``) in the middle, with a ``--timeout``
s limit: each pool must report exactly it as a timeout, run the checks after it in a
warm replacement, and finish the rest.

    python bench/bench_pool.py --repeat 5
    python bench/bench_pool.py --hang --count 100 --timeout 3 --repeat 2
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402
from bench_rules import PATHOLOGICAL, _children_cpu, build_pairs  # noqa: E402

#: Set in a worker once it has run ``warm_up_marked``.
_warmed = False


def warm_up_marked(evaluator: Any) -> int:
    """``evaluator.warm_up()``, then mark this process warm; its pid."""
    global _warmed
    evaluator.warm_up()
    _warmed = True
    return os.getpid()


def score_checked(evaluator: Any, pred: str, gold: str) -> tuple[bool, dict[str, Any]]:
    """Whether this worker had been warmed before this check, and the check's detail."""
    return _warmed, evaluator.score_sample(pred, gold, {})


def _evaluator(hang: bool) -> Any:
    from harness.evaluators.math_verify import MATHVerifyEvaluator

    kwargs = {"parse_timeout": 3600, "verify_timeout": 3600} if hang else {}
    return MATHVerifyEvaluator(fast=False, **kwargs)


def _functions() -> tuple[Any, Any]:
    """The two worker functions, from the module ``bench_pool`` (not ``__main__``), so a
    worker started by any of the pools can unpickle them."""
    import bench_pool

    return bench_pool.warm_up_marked, bench_pool.score_checked


def _busy_jiffies() -> tuple[int, int]:
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    return sum(fields[:8]) - fields[3] - fields[4], sum(fields[:8])


async def _drive(pairs: list[tuple[str, str]], tasks: int, check: Any) -> dict[str, Any]:
    """Run ``check(pred, gold)`` (``None`` for a timeout, else ``(warm, detail)``) for
    every pair from ``tasks`` pullers; timings."""
    correct: list[bool | None] = [None] * len(pairs)
    timeouts, cold = [], 0
    shared = iter(enumerate(pairs))

    async def puller() -> None:
        nonlocal cold
        for i, (pred, gold) in shared:
            result = await check(pred, gold)
            if result is None:
                timeouts.append(i)
            else:
                cold += not result[0]
                correct[i] = bool(result[1]["correct"])

    jiffies0 = _busy_jiffies()
    before, cpu0, start = _children_cpu(), time.process_time(), time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(tasks):
            tg.start_soon(puller)
    wall, cpu_main, after = time.perf_counter() - start, time.process_time() - cpu0, _children_cpu()
    jiffies1 = _busy_jiffies()
    # Workers alive at both ends (a killed worker's CPU time is lost; a new one counts
    # from zero).
    cpu_workers = sum(t - before.get(pid, 0.0) for pid, t in after.items())
    cpus = os.cpu_count() or 1
    busy = cpus * (jiffies1[0] - jiffies0[0]) / max(1, jiffies1[1] - jiffies0[1])
    return {"wall": wall, "cpu_main": cpu_main, "correct": correct, "timeouts": timeouts,
            "cold": cold, "cpu_workers": cpu_workers,
            "other_busy": max(0.0, busy - (cpu_main + cpu_workers) / wall)}


# noqa below: ``timeout`` is a per-check limit passed through, not a cancel scope.
async def run_harness(pairs, workers, timeout, hang) -> dict[str, Any]:  # noqa: ASYNC109
    from harness.workers import WorkerPool, WorkerTimeout

    warm_up, score = _functions()
    evaluator = _evaluator(hang)
    pool = WorkerPool(workers)
    await pool.warm(functools.partial(warm_up, evaluator))

    async def check(pred: str, gold: str) -> Any:
        try:
            return await pool.run(score, evaluator, pred, gold, timeout=timeout, key=gold)
        except WorkerTimeout:
            return None

    try:
        return await _drive(pairs, 2 * workers, check)
    finally:
        await pool.aclose()


# noqa below: ``timeout`` is a per-check limit passed through, not a cancel scope.
async def run_anyio(pairs, workers, timeout, hang) -> dict[str, Any]:  # noqa: ASYNC109
    from anyio import to_process

    warm_up, score = _functions()
    evaluator = _evaluator(hang)
    limiter = anyio.CapacityLimiter(workers)
    async with anyio.create_task_group() as tg:
        for _ in range(workers):
            tg.start_soon(lambda: to_process.run_sync(warm_up, evaluator, limiter=limiter))

    async def check(pred: str, gold: str) -> Any:
        with anyio.move_on_after(timeout):
            return await to_process.run_sync(score, evaluator, pred, gold,
                                              cancellable=True, limiter=limiter)
        return None

    return await _drive(pairs, 2 * workers, check)


# noqa below: ``timeout`` is a per-check limit passed through, not a cancel scope.
async def run_pebble(pairs, workers, timeout, hang) -> dict[str, Any]:  # noqa: ASYNC109
    from concurrent.futures import TimeoutError as FutureTimeout

    import pebble

    warm_up, score = _functions()
    evaluator = _evaluator(hang)
    pool = pebble.ProcessPool(max_workers=workers, initializer=warm_up,
                              initargs=(evaluator,),
                              context=multiprocessing.get_context("spawn"))
    try:
        # A worker takes calls only after its initializer: wait until each has answered.
        pids: set[int] = set()
        while len(pids) < workers:
            pids |= set(await asyncio.gather(*(asyncio.wrap_future(pool.schedule(os.getpid))
                                               for _ in range(workers))))

        async def check(pred: str, gold: str) -> Any:
            future = pool.schedule(score, (evaluator, pred, gold), timeout=timeout)
            try:
                return await asyncio.wrap_future(future)
            except FutureTimeout:
                return None

        return await _drive(pairs, 2 * workers, check)
    finally:
        pool.stop()
        pool.join(5)


BACKENDS = {"harness WorkerPool": run_harness, "anyio.to_process": run_anyio,
            "pebble.ProcessPool": run_pebble}
HARNESS = "harness WorkerPool"


def _spread(values: list[float], digits: int = 2) -> str:
    """``median (min-max)``."""
    return (f"{statistics.median(values):.{digits}f} "
            f"({min(values):.{digits}f}-{max(values):.{digits}f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=20.0,
                        help="per-check limit (default 20 s, MATHVerifyEvaluator.timeout)")
    parser.add_argument("--hang", action="store_true",
                        help="add one check math-verify's alarms cannot stop")
    bl.common_args(parser)
    args = parser.parse_args()

    pairs = build_pairs(args.count)
    hung = None
    if args.hang:
        hung = len(pairs) // 2
        pairs.insert(hung, (PATHOLOGICAL, "1"))
    # Started once here, so that killing each round's leftover children spares it.
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()
    bg = bl.busy_cores()
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in BACKENDS}
    for _ in range(args.repeat):  # interleaved, so load from elsewhere hits all alike
        for name, backend in BACKENDS.items():
            before = bl.children()
            try:
                runs[name].append(anyio.run(backend, pairs, args.workers, args.timeout,
                                            args.hang))
            finally:
                bl.kill_children(keep=before)
            print(f"# round {len(runs[name])} {name}: {len(pairs) / runs[name][-1]['wall']:.1f} "
                  f"checks/s, other busy CPUs {runs[name][-1]['other_busy']:.2f}",
                  file=sys.stderr, flush=True)
    reference = runs[HARNESS][0]["correct"]
    n = len(pairs)
    rows = []
    for name, results in runs.items():
        rows.append({
            "pool": name, "checks": n,
            "checks/s": _spread([n / r["wall"] for r in results], 1),
            "parent CPU ms / check": _spread([1000 * r["cpu_main"] / n for r in results]),
            "worker CPU ms / check": _spread([1000 * r["cpu_workers"] / n for r in results]),
            "other busy CPUs": _spread([r["other_busy"] for r in results]),
            "timeouts": "/".join(str(len(r["timeouts"])) for r in results),
            "timed out other than the hung check": sum(
                sum(i != hung for i in r["timeouts"]) for r in results),
            "cold checks": sum(r["cold"] for r in results),
            "verdicts differing": sum(
                sum(a != b for a, b in zip(r["correct"], reference, strict=True) if a is not None)
                for r in results)})
    # Per round (the backends ran back to back): harness checks/s over the other's.
    ratios = {name: [o["wall"] / h["wall"] for h, o in zip(runs[HARNESS], results, strict=True)]
              for name, results in runs.items() if name != HARNESS}
    notes = ["\nharness checks/s / other checks/s per round (above 1: harness faster): "
             + "; ".join(f"{k}: " + ", ".join(f"{v:.2f}" for v in vs)
                         + f" (median {statistics.median(vs):.2f}, harness faster in "
                         f"{sum(v > 1 for v in vs)} of {len(vs)})"
                         for k, vs in ratios.items())]
    bl.emit("pool", {"count": args.count, "workers": args.workers, "repeat": args.repeat,
                     "timeout": args.timeout, "hang": args.hang, "bg_busy_cpus": bg},
            ["pool", "checks", "checks/s", "parent CPU ms / check", "worker CPU ms / check",
             "other busy CPUs", "timeouts", "timed out other than the hung check",
             "cold checks", "verdicts differing"], rows,
            as_json=args.json, extra={"harness_over": ratios, "runs": {
                k: [{kk: vv for kk, vv in r.items() if kk != "correct"} for r in v]
                for k, v in runs.items()}},
            notes=notes)


if __name__ == "__main__":
    main()
