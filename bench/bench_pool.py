"""harness's WorkerPool against anyio.to_process and pebble on the same math-verify checks.

The 500 (prediction, gold) pairs of ``bench_rules.py`` (MATH-500 answers), scored by
``MATHVerifyEvaluator(fast=False).score_sample`` through three pools of ``--workers``
processes, each warmed with ``evaluator.warm_up`` (math-verify imports and the parser
cache warm-up, untimed), ``2 × workers`` tasks pulling from one iterator:

1. ``harness WorkerPool``: ``pool.warm(warm_up)`` in every worker, calls keyed by the
   reference (a worker keeps the references it parsed), ``timeout=`` kills a hung worker;
2. ``anyio.to_process``: ``run_sync(score_sample, cancellable=True)`` under
   ``fail_after(timeout)`` (a cancelled call kills its worker); anyio cannot address a
   worker, so the warm-up is ``workers`` concurrent ``run_sync(warm_up)`` calls (each
   idle worker takes one) and there is no routing by reference;
3. ``pebble.ProcessPool``: ``initializer=warm_up`` in every worker, ``schedule(...,
   timeout=)`` (pebble kills a worker past its timeout), futures awaited with
   ``asyncio.wrap_future``; no routing by reference.

``--hang`` adds one check that math-verify's alarms cannot stop (alarms pushed to an
hour, ``10^{10^{10^{10^{10}}}}`` against ``1``) in the middle, with a ``--timeout`` s
limit: each pool must report it as a timeout and finish the rest.

    python bench/bench_pool.py                      # --repeat 3
    python bench/bench_pool.py --hang --timeout 3
"""

from __future__ import annotations

import argparse
import asyncio
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


def _evaluator(hang: bool) -> Any:
    from harness.evaluators.math_verify import MATHVerifyEvaluator

    kwargs = {"parse_timeout": 3600, "verify_timeout": 3600} if hang else {}
    return MATHVerifyEvaluator(fast=False, **kwargs)


async def _drive(pairs: list[tuple[str, str]], tasks: int, check: Any) -> dict[str, Any]:
    """Run ``check(pred, gold)`` for every pair from ``tasks`` pullers; timings."""
    correct: list[bool | None] = [None] * len(pairs)
    timeouts = 0
    shared = iter(enumerate(pairs))

    async def puller() -> None:
        nonlocal timeouts
        for i, (pred, gold) in shared:
            result = await check(pred, gold)
            if result is None:
                timeouts += 1
            else:
                correct[i] = bool(result["correct"])

    before, cpu0, start = _children_cpu(), time.process_time(), time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(tasks):
            tg.start_soon(puller)
    wall, cpu_main, after = time.perf_counter() - start, time.process_time() - cpu0, _children_cpu()
    return {"wall": wall, "cpu_main": cpu_main, "correct": correct, "timeouts": timeouts,
            "cpu_workers": sum(t - before.get(pid, 0.0) for pid, t in after.items())}


async def run_harness(pairs, workers, timeout, hang) -> dict[str, Any]:
    from harness.workers import WorkerPool, WorkerTimeout

    evaluator = _evaluator(hang)
    pool = WorkerPool(workers)
    await pool.warm(evaluator.warm_up)

    async def check(pred: str, gold: str) -> Any:
        try:
            return await pool.run(evaluator.score_sample, pred, gold, {}, timeout=timeout,
                                  key=gold)
        except WorkerTimeout:
            return None

    try:
        return await _drive(pairs, 2 * workers, check)
    finally:
        await pool.aclose()


async def run_anyio(pairs, workers, timeout, hang) -> dict[str, Any]:
    from anyio import to_process

    evaluator = _evaluator(hang)
    limiter = anyio.CapacityLimiter(workers)
    async with anyio.create_task_group() as tg:
        for _ in range(workers):
            tg.start_soon(lambda: to_process.run_sync(evaluator.warm_up, limiter=limiter))

    async def check(pred: str, gold: str) -> Any:
        with anyio.move_on_after(timeout):
            return await to_process.run_sync(evaluator.score_sample, pred, gold, {},
                                              cancellable=True, limiter=limiter)
        return None

    return await _drive(pairs, 2 * workers, check)


async def run_pebble(pairs, workers, timeout, hang) -> dict[str, Any]:
    from concurrent.futures import TimeoutError as FutureTimeout

    import pebble

    evaluator = _evaluator(hang)
    pool = pebble.ProcessPool(max_workers=workers, initializer=evaluator.warm_up)
    # The initializers run when the workers start: wait for one call per worker.
    await asyncio.gather(*(asyncio.wrap_future(pool.schedule(os.getpid))
                           for _ in range(workers)))

    async def check(pred: str, gold: str) -> Any:
        future = pool.schedule(evaluator.score_sample, (pred, gold, {}), timeout=timeout)
        try:
            return await asyncio.wrap_future(future)
        except FutureTimeout:
            return None

    try:
        return await _drive(pairs, 2 * workers, check)
    finally:
        pool.stop()
        pool.join(5)


BACKENDS = {"harness WorkerPool": run_harness, "anyio.to_process": run_anyio,
            "pebble.ProcessPool": run_pebble}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=20.0,
                        help="per-check limit (default 20 s, MATHVerifyEvaluator.timeout)")
    parser.add_argument("--hang", action="store_true",
                        help="add one check math-verify's alarms cannot stop")
    bl.common_args(parser)
    args = parser.parse_args()

    pairs = build_pairs(args.count)
    if args.hang:
        pairs.insert(len(pairs) // 2, (PATHOLOGICAL, "1"))
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
    reference = runs["harness WorkerPool"][0]["correct"]
    rows = []
    for name, results in runs.items():
        results = sorted(results, key=lambda r: r["wall"])
        r = results[(len(results) - 1) // 2]
        n = len(pairs)
        rows.append({"pool": name, "checks": n, "wall s": r["wall"],
                     "wall range s": f"{results[0]['wall']:.2f}-{results[-1]['wall']:.2f}",
                     "checks/s": n / r["wall"],
                     "parent CPU ms / check": 1000 * r["cpu_main"] / n,
                     "worker CPU ms / check": 1000 * r["cpu_workers"] / n,
                     "timeouts": r["timeouts"],
                     "verdicts differing": sum(a != b for a, b in zip(r["correct"], reference))})
    ratios = {name: statistics.median(h["wall"] / o["wall"] for h, o in
                                      zip(runs["harness WorkerPool"], results))
              for name, results in runs.items()}
    bl.emit("pool", {"count": args.count, "workers": args.workers, "repeat": args.repeat,
                     "timeout": args.timeout, "hang": args.hang, "bg_busy_cpus": bg},
            ["pool", "checks", "wall s", "wall range s", "checks/s", "parent CPU ms / check",
             "worker CPU ms / check", "timeouts", "verdicts differing"], rows,
            as_json=args.json, extra={"harness_wall_over": ratios},
            notes=["\nharness wall / other wall, median of interleaved repeats (above 1: the "
                   "other is faster): " + ", ".join(f"{k} {v:.2f}" for k, v in ratios.items())])


if __name__ == "__main__":
    main()
