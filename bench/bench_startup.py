"""Start-up cost: wall time of ``python -m harness --help`` and its slowest imports.

Runs ``python -m harness --help`` ``--runs`` times (after one untimed run that warms the
bytecode caches) and reports the median, min and max wall time (target: median < 0.5 s),
and the same for a bare ``python -c pass`` as the interpreter's own floor. Then runs
``python -X importtime -m harness --help`` ``--importtime-runs`` times and lists the top
imports by cumulative and by self time (median over those runs, microseconds).

    python bench/bench_startup.py
    python bench/bench_startup.py --command "run --help" --runs 20
"""

from __future__ import annotations

import argparse
import re
import shlex
import statistics
from collections import defaultdict

import benchlib as bl

TARGET_S = 0.5
_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S.*)$")


def wall_times(cmd: list[str], runs: int) -> list[float]:
    bl.measure(cmd)  # warm the bytecode caches, untimed
    return [bl.measure(cmd)["wall"] for _ in range(runs)]


def importtime(cmd: list[str], runs: int) -> dict[str, tuple[float, float, int]]:
    """module -> (median self µs, median cumulative µs, nesting depth)."""
    self_us: dict[str, list[int]] = defaultdict(list)
    cum_us: dict[str, list[int]] = defaultdict(list)
    depth: dict[str, int] = {}
    for _ in range(runs):
        err = bl.measure([bl.PY, "-X", "importtime", *cmd[1:]])["stderr"]
        for line in err.splitlines():
            m = _LINE.match(line)
            if m:
                name = m.group(4).strip()
                self_us[name].append(int(m.group(1)))
                cum_us[name].append(int(m.group(2)))
                depth[name] = (len(m.group(3)) - 1) // 2
    return {k: (statistics.median(self_us[k]), statistics.median(cum_us[k]), depth[k])
            for k in self_us}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="timed runs (default 10)")
    parser.add_argument("--command", default="--help",
                        help="arguments after `python -m harness` (default --help)")
    parser.add_argument("--importtime-runs", type=int, default=3)
    parser.add_argument("--top", type=int, default=10)
    bl.common_args(parser)
    args = parser.parse_args()
    bg = bl.busy_cores()
    cmd = [bl.PY, "-m", "harness", *shlex.split(args.command)]
    harness = wall_times(cmd, args.runs)
    floor = wall_times([bl.PY, "-c", "pass"], args.runs)
    imports = importtime(cmd, args.importtime_runs)
    total_us = sum(s for s, _, _ in imports.values())
    by_cum = sorted(imports.items(), key=lambda kv: kv[1][1], reverse=True)[:args.top]
    by_self = sorted(imports.items(), key=lambda kv: kv[1][0], reverse=True)[:args.top]
    rows = []
    for name, times in [(f"python -m harness {args.command}", harness),
                        ("python -c pass", floor)]:
        rows.append({"command": name, "runs": len(times), "median s": statistics.median(times),
                     "min s": min(times), "max s": max(times)})
    median = rows[0]["median s"]
    params = {"runs": args.runs, "bg_busy_cpus": bg}
    top_cum = [{"module": n, "cumulative ms": c / 1000, "self ms": s / 1000, "depth": d}
               for n, (s, c, d) in by_cum]
    top_self = [{"module": n, "self ms": s / 1000, "cumulative ms": c / 1000, "depth": d}
                for n, (s, c, d) in by_self]
    if args.json:
        bl.print_json(bl.document("startup", params, rows, {
            "target_s": TARGET_S, "ok": median < TARGET_S, "imports_total_ms": total_us / 1000,
            "modules_imported": len(imports), "top_cumulative": top_cum, "top_self": top_self}))
        return
    bl.print_table(params, ["command", "runs", "median s", "min s", "max s"], rows,
                   [f"\nmedian {median:.3f} s (target < {TARGET_S} s: "
                    f"{'met' if median < TARGET_S else 'NOT met'}); "
                    f"{len(imports)} modules imported, {total_us / 1000:.0f} ms of import time "
                    f"(self times summed, -X importtime, median of {args.importtime_runs})\n"])
    print(f"Top {args.top} imports by cumulative time (a package includes what it imports):\n")
    print("| # | module | cumulative ms | self ms | depth |")
    print("|---|---|---|---|---|")
    for i, r in enumerate(top_cum, 1):
        print(f"| {i} | `{r['module']}` | {r['cumulative ms']:.1f} | {r['self ms']:.1f} | "
              f"{r['depth']} |")
    print(f"\nTop {args.top} imports by self time:\n")
    print("| # | module | self ms | cumulative ms |")
    print("|---|---|---|---|")
    for i, r in enumerate(top_self, 1):
        print(f"| {i} | `{r['module']}` | {r['self ms']:.1f} | {r['cumulative ms']:.1f} |")


if __name__ == "__main__":
    main()
