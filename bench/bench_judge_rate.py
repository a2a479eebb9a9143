"""Judge pacing: sustained judge request rate under ``rpm=R``, and recovery from a 429 storm.

Two fake servers run inside this benchmark's own event loop (``harness.testing.FakeOpenAI``,
latency 0): one answers the model (``fake-model``), one the judge (``judge-model``) and
records the arrival time and status of every judge request. ``python -m harness run``
runs as a child process with a judge-only config (``GenericLLMEvaluator``, every sample
judged) or a cascade config (``--mode cascade``: only rule failures, half the samples).

- ``steady``: the judge has ``rpm=R``; the judge server enforces ``R × factor`` requests
  per sliding ``--window`` seconds (429 past it). Reported: the sustained rate from the
  first to the last judge request as a fraction of R (target 0.95 R to R) and the 429s
  provoked (target 0). Enough samples for about ``--duration`` seconds of judging.
- ``storm``: no server limit, but from ``--storm-after`` s after the first judge request,
  for ``--storm`` s, every judge request gets 429 with ``Retry-After: --retry-after``.
  Reported: judge requests/s (all, and answered 200) before, during and after the storm,
  and how long after the storm the first 200 came.

    python bench/bench_judge_rate.py                         # R=600, 45 s steady + storm
    python bench/bench_judge_rate.py --rpm 1200 --duration 20 --scenario steady
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import math
import tempfile
import time
from pathlib import Path
from typing import Any

import benchlib as bl
from fakes import TimedServer

from harness.testing import Fault
from harness.testing.fake_openai import FakeOpenAI


def storm_policy(server: TimedServer, after: float, length: float,
                 retry_after: float):
    """Faults: 429 + Retry-After for judge requests in [first + after, first + after + length)."""
    def policy(body: dict, attempt: int) -> Fault | None:
        if body.get("model") != bl.JUDGE_MODEL or server.first_judge is None:
            return None
        since = time.monotonic() - server.first_judge
        if after <= since < after + length:
            return Fault("rate_limit", retry_after=retry_after)
        return None

    return policy


async def run_scenario(args: argparse.Namespace, scenario: str, tmp: Path,
                       factor: float = 1.0) -> dict[str, Any]:
    """Run harness once against the two in-process servers; the judge server's log."""
    rpm = args.rpm
    per_second = rpm / 60
    if scenario == "steady":
        judged = math.ceil(per_second * args.duration) + 1
    else:
        judged = math.ceil(per_second * (args.storm_after + args.after)) + 1
    n = judged if args.mode == "judge" else 2 * judged  # cascade: half are rule failures
    model = FakeOpenAI(bl.cascade_reply, record=False)
    limit = None
    kwargs: dict[str, Any] = {}
    if scenario == "steady":
        limit = max(1, math.floor(rpm * args.window / 60 * factor))
        kwargs = dict(rpm_limit=limit, window=args.window)
    judge = TimedServer(bl.fake_judge, models=(bl.JUDGE_MODEL,), record=False, **kwargs)
    if scenario == "storm":
        judge.faults = storm_policy(judge, args.storm_after, args.storm, args.retry_after)
    async with model, judge:
        name = f"{scenario}-{factor:g}"
        data = bl.write_arith(tmp / f"data-{name}.jsonl", n)
        cfg = bl.write_judge_config(tmp / f"cfg_{name.replace('.', '_').replace('-', '_')}.py",
                                    data, model.base_url, mode=args.mode,
                                    judge_url=judge.base_url, judge={"rpm": rpm})
        work = tmp / f"work-{name}"
        m = await bl.ameasure(bl.harness_run(cfg, work), timeout=args.max_seconds)
    result = bl.read_results(work)[0]
    return {"n": n, "log": [e for e in judge.log if e[1] == bl.JUDGE_MODEL], "wall": m["wall"],
            "server_limit": limit, "stats": judge.stats.as_dict(),
            "judge_stats": result.get("judge_stats", {}),
            "cascade_stats": result.get("cascade_stats"), "counts": result.get("counts")}


def steady_row(args: argparse.Namespace, r: dict[str, Any]) -> dict[str, Any]:
    """Sustained rate over first..last judge request, as a fraction of R."""
    times = [t for t, _, status in r["log"]]
    ok = [t for t, _, status in r["log"] if status == 200]
    span = times[-1] - times[0] if len(times) > 1 else 0.0
    rate = (len(times) - 1) / span if span else None
    gaps = sorted(b - a for a, b in itertools.pairwise(times))
    # What a provider with a sliding window sees: the most arrivals in any window.
    most, lo = 0, 0
    for hi, t in enumerate(times):
        while times[lo] <= t - args.window:
            lo += 1
        most = max(most, hi - lo + 1)
    fraction = rate * 60 / args.rpm if rate else None
    return {"scenario": "steady", "samples": r["n"], "judge requests": len(times),
            "200s": len(ok), "429s": r["stats"]["by_status"].get("429", 0),
            "span s": span, "req/s": rate, "R/60": args.rpm / 60, "× R": fraction,
            "max in any window": f"{most}/{args.window:g}s (R: {args.rpm * args.window / 60:g})",
            "min gap s": gaps[0] if gaps else None,
            "median gap s": gaps[len(gaps) // 2] if gaps else None,
            "harness 429 retries": r["judge_stats"].get("rate_limited"),
            "judge errors": r["judge_stats"].get("errors"), "wall s": r["wall"],
            "server limit": f"{r['server_limit']}/{args.window:g}s"}


def storm_rows(args: argparse.Namespace, r: dict[str, Any]) -> list[dict[str, Any]]:
    """Judge requests/s before, during and after the storm."""
    log = r["log"]
    t0 = log[0][0]
    start, end = t0 + args.storm_after, t0 + args.storm_after + args.storm
    last = log[-1][0]
    first_ok_after = next((t for t, _, s in log if s == 200 and t >= end), None)
    rows = []
    for phase, lo, hi in [("before", t0, start), ("during", start, end), ("after", end, last)]:
        inside = [(t, s) for t, _, s in log if lo <= t < hi or (phase == "after" and t == hi)]
        length = max(hi - lo, 1e-9)
        rows.append({"scenario": "storm", "phase": phase, "from s": lo - t0, "to s": hi - t0,
                     "judge requests": len(inside),
                     "200s": sum(s == 200 for _, s in inside),
                     "429s": sum(s == 429 for _, s in inside),
                     "req/s": len(inside) / length,
                     "200/s": sum(s == 200 for _, s in inside) / length,
                     "× R (200s)": sum(s == 200 for _, s in inside) / length * 60 / args.rpm})
    rows[-1]["first 200 after storm s"] = (first_ok_after - end) if first_ok_after else None
    rows[-1]["judge errors"] = r["judge_stats"].get("errors")
    rows[-1]["harness 429 retries"] = r["judge_stats"].get("rate_limited")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", choices=["steady", "storm", "both"], default="both")
    parser.add_argument("--rpm", type=float, default=600, help="judge rpm R (default 600)")
    parser.add_argument("--mode", choices=["judge", "cascade"], default="judge",
                        help="judge-only config (default) or cascade")
    parser.add_argument("--duration", type=float, default=45,
                        help="steady: seconds of judging to aim for (default 45)")
    parser.add_argument("--window", type=float, default=10,
                        help="steady: server's sliding window s (default 10; a 60 s window "
                             "would never fill in a shorter run)")
    parser.add_argument("--factor", type=float, nargs="+", default=[1.0],
                        help="steady: server allows R × factor per window-minute; several "
                             "values give several steady runs (default 1.0)")
    parser.add_argument("--storm-after", type=float, default=10,
                        help="storm: seconds after the first judge request (default 10)")
    parser.add_argument("--storm", type=float, default=6, help="storm: length s (default 6)")
    parser.add_argument("--retry-after", type=float, default=2, help="storm: Retry-After s")
    parser.add_argument("--after", type=float, default=15,
                        help="storm: seconds of judging to aim for after the storm")
    parser.add_argument("--max-seconds", type=float, default=600,
                        help="kill a harness run that takes longer")
    bl.common_args(parser)
    args = parser.parse_args()
    bg = bl.busy_cores()
    scenarios = ["steady", "storm"] if args.scenario == "both" else [args.scenario]

    async def run_all() -> dict[str, Any]:
        out: dict[str, Any] = {}
        with tempfile.TemporaryDirectory() as tmp:
            if "steady" in scenarios:
                out["steady"] = [await run_scenario(args, "steady", Path(tmp), f)
                                 for f in args.factor]
            if "storm" in scenarios:
                out["storm"] = await run_scenario(args, "storm", Path(tmp))
        return out

    results = asyncio.run(run_all())
    params = {"R": args.rpm, "mode": args.mode, "bg_busy_cpus": bg}
    docs: dict[str, Any] = {}
    if "steady" in results:
        rows = [steady_row(args, r) for r in results["steady"]]
        notes = []
        for row in rows:
            row["ok"] = (row["× R"] is not None and 0.95 <= row["× R"] <= 1.0
                         and row["429s"] == 0)
            notes.append(f"server limit {row['server limit']}: sustained {fmt_rate(row)} "
                         f"(target 0.95-1.00 × R and 0 × 429: "
                         f"{'met' if row['ok'] else 'NOT met'})")
        steady_params = {**params, "duration": args.duration, "window": args.window}
        docs["steady"] = bl.document("judge_rate.steady", steady_params, rows, {
            "judge_stats": [r["judge_stats"] for r in results["steady"]]})
        if not args.json:
            bl.print_table(steady_params, [
                "scenario", "server limit", "samples", "judge requests", "200s", "429s",
                "span s", "req/s", "R/60", "× R", "max in any window", "min gap s",
                "median gap s", "harness 429 retries", "judge errors", "wall s"], rows,
                ["", *notes, ""], digits={"× R": 3, "req/s": 3, "min gap s": 3,
                                          "median gap s": 3})
    if "storm" in results:
        rows = storm_rows(args, results["storm"])
        storm_params = {**params, "storm_after": args.storm_after, "storm": args.storm,
                        "retry_after": args.retry_after}
        docs["storm"] = bl.document("judge_rate.storm", storm_params, rows,
                                    {"judge_stats": results["storm"]["judge_stats"]})
        if not args.json:
            bl.print_table(storm_params, [
                "scenario", "phase", "from s", "to s", "judge requests", "200s", "429s",
                "req/s", "200/s", "× R (200s)", "first 200 after storm s",
                "harness 429 retries", "judge errors"], rows, digits={"× R (200s)": 3})
    if args.json:
        bl.print_json({"bench": "judge_rate", **docs})


def fmt_rate(row: dict[str, Any]) -> str:
    if row["req/s"] is None:
        return "rate: too few judge requests"
    return f"{row['req/s']:.3f} req/s = {row['× R']:.3f} × R, {row['429s']} × 429"


if __name__ == "__main__":
    main()
