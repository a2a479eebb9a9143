"""Harness's own cost per sample in CPU instructions: a number this noisy machine cannot blur.

Wall and CPU times of the same command vary by ±10 % here from one run to the next, more
than most single optimizations change them. Instruction counts under valgrind's
callgrind do not: this script runs the pipeline in-process with an *instant* transport
(every request answered at once with a canned reply, no network, no server), under
callgrind, at two sizes, and reports

    instructions per sample = (instructions at N2 - instructions at N1) / (N2 - N1)

for a first run (predict, extract, score, store, details) and for a rerun of the same
work directory (every prediction read from the store and re-scored). Start-up and
imports cancel out in the difference. Use it to compare two versions of the code: a
change that saves 5 % shows as 5 % here, every time.

What it leaves out: HTTP (the transport is instant) and time spent waiting for the GIL
or the disk. Python runs about 50× slower under callgrind; the defaults take about two
minutes. Needs valgrind (``apt-get install valgrind``).

    python bench/bench_instructions.py                  # -n 500 1500 -c 256
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import benchlib as bl

#: The canned reply of the instant transport (the same answer ``bench_pipeline`` uses).
REPLY = {"choices": [{"message": {"role": "assistant", "content": "The answer is 42."},
                      "finish_reason": "stop"}],
         "usage": {"prompt_tokens": 10, "completion_tokens": 5}}

#: The name the child registers the instant transport under, and the config's model uses.
INSTANT = "instant"

#: The config's model: nothing listens at its address, the instant transport answers.
MODEL = (f"models = [dict(abbr='fake-model', path='fake-model', "
         f"openai_api_base='http://127.0.0.1:9/v1', transport={INSTANT!r})]\n")


def child(config: Path, work: Path, concurrency: int, rerun: bool) -> None:
    """Run ``config`` in this process with an instant transport (twice with ``rerun``)."""
    import anyio

    import harness
    from harness.testing import MockTransport
    from harness.transport import TRANSPORTS

    # The config's model names this transport: every request is answered at once.
    TRANSPORTS.register(INSTANT)(lambda spec, concurrency: MockTransport(lambda _: REPLY))

    async def main() -> None:
        for _ in range(2 if rerun else 1):
            await harness.evaluate(config, work_dir=work, concurrency=concurrency)

    anyio.run(main)


def instructions(config: Path, work: Path, concurrency: int, rerun: bool) -> int:
    """Instructions callgrind counts for one child run (work directory removed first)."""
    shutil.rmtree(work, ignore_errors=True)
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", bl.PY,
           __file__, "--child", str(config), str(work), str(concurrency)]
    if rerun:
        cmd.append("--rerun")
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=bl.ROOT, check=True)
    match = re.search(r"Collected : (\d+)", out.stderr)
    if match is None:
        raise SystemExit(f"no instruction count in valgrind's output:\n{out.stderr[-2000:]}")
    return int(match.group(1))


def main() -> None:
    if "--child" in sys.argv:
        config, work, concurrency = sys.argv[2:5]
        child(Path(config), Path(work), int(concurrency), "--rerun" in sys.argv)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, nargs=2, default=[500, 1500], metavar=("N1", "N2"),
                        help="the two sizes (default 500 1500)")
    parser.add_argument("-c", type=int, default=256, help="concurrency (default 256)")
    bl.common_args(parser)
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("needs valgrind: apt-get install valgrind")
    small, large = sorted(args.n)
    counts: dict[tuple[int, bool], int] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for n in (small, large):
            data = bl.write_arith(tmp / f"data{n}.jsonl", n)
            config = bl.write_simple_config(tmp / f"cfg{n}.py", data)
            config.write_text(config.read_text() + MODEL)
            for rerun in (False, True):
                counts[(n, rerun)] = instructions(config, tmp / f"work{n}", args.c, rerun)
    per_first = (counts[(large, False)] - counts[(small, False)]) / (large - small)
    # A child with --rerun runs first and rerun; the rerun's share is the difference.
    per_both = (counts[(large, True)] - counts[(small, True)]) / (large - small)
    rows = [{"run": "first run", "instructions per sample": round(per_first)},
            {"run": "rerun", "instructions per sample": round(per_both - per_first)}]
    bl.emit("instructions", {"N": f"{small},{large}", "C": args.c, "revision": bl.revision()},
            ["run", "instructions per sample"], rows, as_json=args.json,
            extra={"counts": {f"{n}{'+rerun' if r else ''}": v for (n, r), v in counts.items()}})


if __name__ == "__main__":
    main()
