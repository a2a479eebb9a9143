"""``harness run --event-loop``: the CLI runs on uvloop where it is installed, on
asyncio's loop when asked, and scores the same either way."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest

from harness.testing import FakeOpenAI

from .helpers import arith_reply, expected_correct, write_arith, write_config

ROOT = Path(__file__).resolve().parent.parent

# Runs ``harness.cli.main`` with the real ``evaluate`` wrapped so that it reports the
# class of the loop it runs on; ``block`` hides a module as if it were not installed.
PROBE = """
import asyncio, sys
if sys.argv[1] == "block-uvloop":
    sys.modules["uvloop"] = None
import harness.api, harness.cli
real = harness.api.evaluate
async def evaluate(*args, **kwargs):
    loop = type(asyncio.get_running_loop())
    print("LOOP", loop.__module__ + "." + loop.__qualname__, file=sys.stderr)
    return await real(*args, **kwargs)
harness.api.evaluate = evaluate
sys.exit(harness.cli.main(sys.argv[2:]))
"""


async def _run(tmp_path: Path, name: str, *flags: str, block_uvloop: bool = False):
    data = write_arith(tmp_path / "a.jsonl", 12)
    cfg = write_config(tmp_path / "cfg.py", data)
    work = tmp_path / name
    async with FakeOpenAI(responder=arith_reply) as srv:
        result = await anyio.run_process(
            [sys.executable, "-c", PROBE, "block-uvloop" if block_uvloop else "-",
             "run", str(cfg), "-w", str(work), "-q", "--model-base-url", srv.base_url,
             "--model", "fake-model", *flags],
            env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    err = result.stderr.decode()
    loops = [line.split()[1] for line in err.splitlines() if line.startswith("LOOP ")]
    return result.returncode, err, loops, work


def _correct(work: Path) -> int:
    saved = json.loads((work / "results" / "fake-model" / "arith.json").read_text())
    return saved["correct"]


@pytest.mark.parametrize(("flags", "loop"), [
    ((), "uvloop.Loop"),
    (("--event-loop", "uvloop"), "uvloop.Loop"),
    (("--event-loop", "asyncio"), "asyncio.unix_events._UnixSelectorEventLoop"),
])
async def test_run_uses_the_loop_asked_for_and_scores_the_same(tmp_path, flags, loop):
    pytest.importorskip("uvloop")
    code, err, loops, work = await _run(tmp_path, "w", *flags)
    assert code == 0, err
    assert loops == [loop]
    assert _correct(work) == expected_correct(12)


async def test_without_uvloop_the_default_falls_back_and_asking_for_it_exits_2(tmp_path):
    code, err, loops, work = await _run(tmp_path, "default", block_uvloop=True)
    assert code == 0, err
    assert loops == ["asyncio.unix_events._UnixSelectorEventLoop"]
    assert _correct(work) == expected_correct(12)

    code, err, loops, work = await _run(tmp_path, "asked", "--event-loop", "uvloop",
                                        block_uvloop=True)
    assert code == 2
    assert "--event-loop uvloop: uvloop is not installed" in err
    assert loops == [] and not work.exists()  # nothing started, nothing written
