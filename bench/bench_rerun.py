"""A finished run costs nothing to rerun, and the judge sees exactly the rule failures.

One fake server inside this benchmark's event loop answers both the model
(``fake-model``: by ``a % 4`` right, right in a form the rule cannot read, or wrong) and
the judge (``judge-model``), and counts the requests for each as they arrive.
``python -m harness run`` (cascade config: exact match after gsm8k extraction, then the
judge for the rule failures) runs as a child process, twice on the same work directory:

- first run: wall time, model requests, judge requests, rule failures from the results
  JSON (``cascade_stats.llm_evaluated`` and ``total_samples - rule_correct``); target
  judge requests = rule failures exactly;
- rerun, the same command: model and judge requests sent (target 0 and 0) and wall time
  (target < 2 s, interpreter start-up included).

``--profile`` adds one more rerun under ``py-spy record`` (saved with its summary in
``bench/results/``, see ``bench/profile_summary.py``).

    python bench/bench_rerun.py            # N = 10,000
    python bench/bench_rerun.py -n 2000 --reruns 3
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import benchlib as bl
import profile_summary
from fakes import TimedServer

TARGET_RERUN_S = 2.0


def responder(body: dict[str, Any]) -> str:
    """Model and judge on one server, told apart by the model name."""
    return bl.fake_judge(body) if bl.is_judge(body) else bl.cascade_reply(body)


async def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    server = TimedServer(responder, models=("fake-model", bl.JUDGE_MODEL), record=False)
    rows = []
    async with server:
        with tempfile.TemporaryDirectory() as tmp_name:
            tmp = Path(tmp_name)
            data = bl.write_arith(tmp / "data.jsonl", args.n)
            judge = {"concurrency": args.judge_concurrency}
            if args.judge_rpm:
                judge["rpm"] = args.judge_rpm
            cfg = bl.write_judge_config(tmp / "cascade_cfg.py", data, server.base_url,
                                        mode=args.mode, judge=judge)
            work = tmp / "work"
            cmd = bl.harness_run(cfg, work, "-c", str(args.c))
            for i in range(1 + args.reruns + bool(args.profile)):
                mark = len(server.log)
                profiled = args.profile and i == 1 + args.reruns
                if profiled:
                    bl.RESULTS.mkdir(parents=True, exist_ok=True)
                    profile = bl.RESULTS / (f"rerun-n{args.n}-{args.mode}-"
                                            f"{time.strftime('%Y%m%d-%H%M%S')}.pyspy.txt")
                    m = await bl.ameasure([
                        shutil.which("py-spy") or "py-spy", "record", "--idle", "--threads",
                        "-r", "200", "-f", "raw", "-o", str(profile), "--", *cmd])
                    summary = profile_summary.summarize(profile, 15, 200)
                    text = io.StringIO()
                    with contextlib.redirect_stdout(text):
                        profile_summary.print_summary(summary)
                    profile.with_suffix(".summary.md").write_text(text.getvalue())
                else:
                    m = await bl.ameasure(cmd)
                result = bl.read_results(work)[0]
                cascade = result.get("cascade_stats") or {}
                judge_stats = result.get("judge_stats") or {}
                failures = cascade.get("total_samples", 0) - cascade.get("rule_correct", 0)
                judge_requests = server.count(bl.JUDGE_MODEL, mark)
                db = sum(p.stat().st_size for p in work.glob("harness.db*")) / 2**20
                name = "first" if i == 0 else f"rerun {i}" if args.reruns > 1 else "rerun"
                rows.append({
                    "run": name + (" under py-spy" if profiled else ""),
                    "db MiB": db,
                    "wall s": m["wall"], "CPU s": m["cpu"], "peak RSS MiB": m["rss_mib"],
                    "model requests": server.count("fake-model", mark),
                    "judge requests": judge_requests,
                    "rule failures": failures,
                    "llm_evaluated": cascade.get("llm_evaluated"),
                    "judge requests = rule failures": judge_requests == failures if i == 0
                    else None,
                    "expected rule failures": bl.expected_rule_failures(args.n),
                    "cached predictions": result.get("cached_predictions"),
                    "judge cache hits": judge_stats.get("cache_hits"),
                    "accuracy": result.get("accuracy")})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10_000, help="samples (default 10000)")
    parser.add_argument("-c", type=int, default=64, help="model concurrency (default 64)")
    parser.add_argument("--mode", choices=["cascade", "parallel"], default="cascade")
    parser.add_argument("--judge-concurrency", type=int, default=8)
    parser.add_argument("--judge-rpm", type=float, default=None,
                        help="judge rpm (default: unlimited)")
    parser.add_argument("--reruns", type=int, default=1, help="reruns after the first run")
    parser.add_argument("--profile", action="store_true",
                        help="one more rerun under py-spy; profile and summary saved in "
                             "bench/results/ (not part of the targets)")
    bl.common_args(parser)
    args = parser.parse_args()
    bg = bl.busy_cores()
    rows = asyncio.run(run(args))
    first = rows[0]
    reruns = [r for r in rows[1:] if "py-spy" not in r["run"]]
    ok_first = first["judge requests"] == first["rule failures"]
    ok_rerun = all(r["model requests"] == 0 and r["judge requests"] == 0
                   and r["wall s"] < TARGET_RERUN_S for r in reruns)
    params = {"N": args.n, "C": args.c, "mode": args.mode, "bg_busy_cpus": bg}
    columns = ["run", "wall s", "CPU s", "peak RSS MiB", "db MiB", "model requests",
               "judge requests", "rule failures", "llm_evaluated", "judge requests = rule failures",
               "expected rule failures", "cached predictions", "judge cache hits", "accuracy"]
    bl.emit("rerun", params, columns, rows, as_json=args.json,
            extra={"ok_first": ok_first, "ok_rerun": ok_rerun},
            notes=[f"\nfirst run: judge requests = rule failures: "
                   f"{'met' if ok_first else 'NOT met'}; rerun: 0 model, 0 judge requests, "
                   f"< {TARGET_RERUN_S:g} s: {'met' if ok_rerun else 'NOT met'}"])


if __name__ == "__main__":
    main()
