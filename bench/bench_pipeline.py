"""Pipeline overhead: harness vs the floor client, on one fake server with latency L.

Starts ``harness.testing.fake_openai`` in its own process, then runs the floor client
and ``python -m harness run`` (extraction, exact-match scoring and SQLite storage on)
against it, each as a child process, and reports wall time against the physical limit
N × L / C, CPU seconds per 1,000 samples and peak RSS. Then runs harness once more on
the same work directory (a rerun: zero requests expected).

With ``--infer``, each repeat also runs ``harness run --mode infer`` on a fresh work
directory: the same requests and stored predictions with no scoring, which splits
harness's cost beyond the floor into its model path and its post-reply scoring.

With ``--profile``, one more fresh harness run (its own work directory, not part of the
table's timings) is recorded with ``py-spy record`` into ``bench/results/`` and
summarized: top functions by own time and the main thread's time by category (see
``bench/profile_summary.py``). One more floor run is recorded the same way, and the two
main threads' busy samples are compared: harness's HTTP client, socket I/O and event
loop against the floor's whole work, and what harness does beyond them (extraction,
keys, store, details) apart.

    python bench/bench_pipeline.py -n 2000 -c 64 --latency 0.1
    python bench/bench_pipeline.py -n 30000 -c 1024 --latency 0.1 --repeat 3 --infer
    python bench/bench_pipeline.py -n 10000 -c 64 --latency 0 --profile
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import benchlib as bl
import profile_summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2000, help="samples (default 2000)")
    parser.add_argument("-c", type=int, default=64, help="concurrency (default 64)")
    parser.add_argument("--latency", type=float, default=0.1,
                        help="fake server seconds per answer (default 0.1)")
    parser.add_argument("--reply", default="The answer is 42.", help="the fake model's answer")
    parser.add_argument("--profile", action="store_true",
                        help="also record a fresh harness run with py-spy into bench/results/")
    parser.add_argument("--repeat", type=int, default=1,
                        help="floor and harness runs, interleaved, each harness run on a "
                             "fresh work directory; rows are the median runs, with the "
                             "range (default 1)")
    parser.add_argument("--infer", action="store_true",
                        help="also time `--mode infer` runs (no extraction or scoring)")
    parser.add_argument("--rate", type=int, default=200, help="py-spy samples per second")
    parser.add_argument("--top", type=int, default=15, help="functions in the profile summary")
    bl.common_args(parser)
    args = parser.parse_args()
    pyspy = shutil.which("py-spy")
    if args.profile and pyspy is None:
        raise SystemExit("--profile needs py-spy: pip install py-spy")
    bg = bl.busy_cores()

    with bl.ServerProcess(latency=args.latency, reply=args.reply) as server, \
            tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        data = bl.write_arith(tmp / "data.jsonl", args.n)
        cfg = bl.write_simple_config(tmp / "bench_cfg.py", data)
        endpoint = ["--model-base-url", server.url, "--model", "fake-model", "-c", str(args.c)]
        floor_cmd = [bl.PY, "bench/floor_client.py", "--url", server.url,
                     "-n", str(args.n), "-c", str(args.c)]
        floors, firsts, infers = [], [], []
        # Interleaved, so a burst of load from elsewhere on the machine hits all alike.
        for i in range(args.repeat):
            floors.append(bl.measure(floor_cmd))
            firsts.append(bl.measure(bl.harness_run(cfg, tmp / f"work{i}", *endpoint)))
            if args.infer:
                infers.append(bl.measure(bl.harness_run(cfg, tmp / f"infer{i}", *endpoint,
                                                        "--mode", "infer")))
        floor, first = _median(floors), _median(firsts)
        infer = _median(infers) if infers else None
        # The rerun uses a finished work directory: the median run's.
        harness_cmd = bl.harness_run(cfg, tmp / f"work{firsts.index(first)}", *endpoint)
        rerun = bl.measure(harness_cmd)
        profiled = profile_path = floor_profile_path = None
        if args.profile:
            bl.RESULTS.mkdir(parents=True, exist_ok=True)
            stamp = time.strftime("%Y%m%d-%H%M%S")
            name = f"n{args.n}-c{args.c}-l{args.latency:g}-{stamp}.pyspy.txt"
            profile_path = bl.RESULTS / f"pipeline-{name}"
            floor_profile_path = bl.RESULTS / f"pipeline-floor-{name}"
            record = [pyspy, "record", "--idle", "--threads", "-r", str(args.rate), "-f",
                      "raw", "-o"]
            profiled = bl.measure([*record, str(profile_path), "--",
                                   *bl.harness_run(cfg, tmp / "work-profiled", *endpoint)])
            bl.measure([*record, str(floor_profile_path), "--", *floor_cmd])
    stats = server.stats or {}
    limit = args.n * args.latency / args.c
    rows = []
    ranges = {"floor client": floors, "harness": firsts, "harness --mode infer": infers}
    for name, m in [("floor client", floor), ("harness", first),
                    ("harness --mode infer", infer), ("harness rerun", rerun),
                    ("harness under py-spy", profiled)]:
        if m is None:
            continue
        walls = sorted(r["wall"] for r in ranges.get(name, [m]))
        rows.append({"run": name, "wall s": m["wall"],
                     "wall range s": f"{walls[0]:.2f}-{walls[-1]:.2f}",
                     "× limit": m["wall"] / limit if limit else None,
                     "× floor": m["wall"] / floor["wall"],
                     "CPU s / 1k samples": 1000 * m["cpu"] / args.n,
                     "peak RSS MiB": m["rss_mib"]})
    params = {"N": args.n, "C": args.c, "L": args.latency, "repeat": args.repeat,
              "bg_busy_cpus": bg}
    # floors + first (+ infer) runs (+ the profiled harness and floor runs); the rerun
    # sends nothing
    expected = args.n * ((2 + args.infer) * args.repeat + 2 * bool(args.profile))
    extra = {"physical_limit_s": limit, "server": stats,
             "server_requests_expected": expected}
    summary = None
    if profile_path is not None and floor_profile_path is not None:
        summary = profile_summary.summarize(profile_path, args.top, args.rate)
        extra["profile"] = summary
        extra["against_floor"] = profile_summary.against_floor(
            summary, profile_summary.summarize(floor_profile_path, args.top, args.rate))
    notes = [f"\nphysical limit N×L/C = {limit:.2f} s; server saw {stats.get('total', '?')} "
             f"requests (expected {expected}: the rerun must send none); statuses "
             f"{stats.get('by_status')}"]
    bl.emit("pipeline", params, ["run", "wall s", "wall range s", "× limit", "× floor",
                                 "CPU s / 1k samples", "peak RSS MiB"], rows,
            as_json=args.json, extra=extra,
            notes=notes)
    if summary is not None:
        import contextlib
        import io

        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            profile_summary.print_summary(summary)
            profile_summary.print_against_floor(extra["against_floor"])
        profile_path.with_suffix(".summary.md").write_text(text.getvalue())
        if not args.json:
            print(text.getvalue(), end="")
    if stats.get("total") not in (None, expected):
        print(f"WARNING: server saw {stats.get('total')} requests, expected {expected}",
              file=sys.stderr)


def _median(runs: list[dict]) -> dict:
    """The run with the median wall time (the lower middle one for an even count)."""
    return sorted(runs, key=lambda r: r["wall"])[(len(runs) - 1) // 2]


if __name__ == "__main__":
    main()
