"""Programs per second for HumanEval's canonical solutions, sandboxed and bare.

Runs all 164 programs (prompt + canonical solution + test + check) with ``--jobs``
at a time, four ways: ``run_program`` under bubblewrap, ``run_program`` with
``sandbox='none'`` (the launcher and limits, no namespaces), a bare ``python -c
PROGRAM`` subprocess, and a bare ``python -I -S -c PROGRAM`` (no site-packages, as the
sandbox runs it: the fair baseline, since site start-up dominates a bare run). Reports
programs per second, the mean wall time per program, the sandbox's overhead against the
bare subprocess, and the CPU use of the machine while the sandboxed pass ran (busy cores,
from /proc/stat)::

    PYTHONPATH=$PWD python bench/bench_sandbox.py --jobs 2 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import anyio

from harness.evaluators import HumanEvalEvaluator
from harness.sandbox import Limits, run_program

DATA = Path(__file__).resolve().parents[1] / "datasets/data/humaneval/HumanEval.jsonl"


def _cpu() -> tuple[float, float]:
    fields = [float(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields), idle


async def _bare(program: str, flags: tuple[str, ...] = ()) -> bool:
    process = await anyio.run_process([sys.executable, *flags, "-c", program], check=False)
    return process.returncode == 0


async def _pass(programs: list[str], jobs: int, how: str) -> tuple[float, int, float]:
    limiter = anyio.CapacityLimiter(jobs)
    passed = 0

    async def one(program: str) -> None:
        nonlocal passed
        async with limiter:
            if how.startswith("bare"):
                ok = await _bare(program, ("-I", "-S") if how == "bare_isolated" else ())
            else:
                ok = (await run_program(program, Limits(),
                                        "bwrap" if how == "bwrap" else "none")).outcome == "passed"
            passed += ok

    total0, idle0 = _cpu()
    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for program in programs:
            tg.start_soon(one, program)
    elapsed = time.perf_counter() - start
    total1, idle1 = _cpu()
    busy = (os.cpu_count() or 1) * (1 - (idle1 - idle0) / max(total1 - total0, 1e-9))
    return elapsed, passed, busy


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows = [json.loads(line) for line in DATA.read_text().splitlines()]
    evaluator = HumanEvalEvaluator()
    programs = [evaluator.program(r["canonical_solution"], r) for r in rows]
    results: dict[str, list[tuple[float, int, float]]] = {}
    for _ in range(args.rounds):
        # Interleaved, so load changes hit all alike.
        for how in ("bare", "bare_isolated", "none", "bwrap"):
            results.setdefault(how, []).append(await _pass(programs, args.jobs, how))
    best = {how: min(runs) for how, runs in results.items()}
    out = {how: {"seconds": round(s, 2), "programs_per_s": round(len(programs) / s, 1),
                 "ms_per_program_per_job": round(1000 * s * args.jobs / len(programs), 1),
                 "passed": p, "busy_cores": round(b, 2)}
           for how, (s, p, b) in best.items()}
    out["overhead_vs_bare_pct"] = {
        how: round(100 * (best[how][0] / best["bare"][0] - 1), 1) for how in ("none", "bwrap")}
    out["overhead_vs_bare_isolated_pct"] = {
        how: round(100 * (best[how][0] / best["bare_isolated"][0] - 1), 1)
        for how in ("none", "bwrap")}
    out["jobs"], out["rounds"], out["programs"] = args.jobs, args.rounds, len(programs)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    anyio.run(main)
