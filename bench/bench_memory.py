"""Memory stays flat: peak RSS of ``python -m harness run`` at N and 10 × N samples.

One fake server process (latency 0, a short fixed reply) and, for each size, a fresh
work directory and one ``python -m harness run`` child (exact match after gsm8k
extraction, SQLite store and per-sample details on, as in ``bench_pipeline``). Peak RSS
is the child's own ``ru_maxrss`` from ``os.wait4``. The pipeline's streams are bounded,
so the ratio of the largest to the smallest run's peak should stay ≤ 1.3×.

    python bench/bench_memory.py                      # N = 10,000 and 100,000, C = 256
    python bench/bench_memory.py --sizes 2000 20000   # quicker
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import benchlib as bl

#: Issue 18: peak RSS at N=100,000 within 1.3× of N=10,000's.
TARGET_RATIO = 1.3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000],
                        help="sample counts, smallest first (default 10000 100000)")
    parser.add_argument("-c", type=int, default=256, help="concurrency (default 256)")
    parser.add_argument("--latency", type=float, default=0.0, help="fake server latency s")
    parser.add_argument("--reply", default="The answer is 42.", help="the fake model's answer")
    bl.common_args(parser)
    args = parser.parse_args()
    sizes = sorted(args.sizes)
    bg = bl.busy_cores()

    runs = []
    with bl.ServerProcess(latency=args.latency, reply=args.reply) as server, \
            tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for n in sizes:
            data = bl.write_arith(tmp / f"data-{n}.jsonl", n)
            cfg = bl.write_simple_config(tmp / f"cfg_{n}.py", data)
            work = tmp / f"work-{n}"
            m = bl.measure(bl.harness_run(cfg, work, "--model-base-url", server.url,
                                          "--model", "fake-model", "-c", str(args.c)))
            total = sum(r["total"] for r in bl.read_results(work))
            details = sum(p.stat().st_size for p in (work / "details").rglob("*.jsonl"))
            db = sum(p.stat().st_size for p in work.glob("harness.db*"))
            runs.append({"N": n, "wall s": m["wall"], "samples/s": n / m["wall"],
                         "CPU s / 1k samples": 1000 * m["cpu"] / n,
                         "peak RSS MiB": m["rss_mib"], "samples in results": total,
                         "details MiB": details / 2**20, "db MiB": db / 2**20})
            (tmp / f"data-{n}.jsonl").unlink()
    base = runs[0]["peak RSS MiB"]
    for row in runs:
        row["RSS ratio"] = row["peak RSS MiB"] / base
    ratio = runs[-1]["RSS ratio"]
    params = {"C": args.c, "L": args.latency, "reply": repr(args.reply), "bg_busy_cpus": bg}
    extra = {"ratio": ratio, "target_ratio": TARGET_RATIO, "ok": ratio <= TARGET_RATIO,
             "server": server.stats}
    bl.emit("memory", params, ["N", "wall s", "samples/s", "CPU s / 1k samples",
                               "peak RSS MiB", "RSS ratio", "samples in results",
                               "details MiB", "db MiB"],
            runs, as_json=args.json, extra=extra,
            notes=[f"\npeak RSS ratio N={sizes[-1]} / N={sizes[0]}: {ratio:.2f}× "
                   f"(target ≤ {TARGET_RATIO}×: {'met' if ratio <= TARGET_RATIO else 'NOT met'})"
                   f"; server {server.stats}"])


if __name__ == "__main__":
    main()
