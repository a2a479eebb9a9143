"""``harness report`` from the command line, and the pointer to it after ``harness run``."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import anyio

from harness.testing import FakeOpenAI

from .helpers import arith_reply, write_arith, write_config

ROOT = Path(__file__).resolve().parent.parent


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "harness", *args]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


async def test_run_points_at_the_report_and_the_command_writes_it(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 12)
    cfg = write_config(tmp_path / "cfg.py", data)
    work = tmp_path / "my work"  # a space: the printed command must be quoted
    async with FakeOpenAI(responder=arith_reply) as srv:
        result = await anyio.run_process(
            cli("run", str(cfg), "-w", str(work), "-q", "--model-base-url", srv.base_url,
                "--model", "fake-model"), env=env(), check=False)
    assert result.returncode == 0, result.stderr.decode()
    line = next(x for x in result.stdout.decode().splitlines() if x.startswith("report: "))
    command = shlex.split(line.removeprefix("report: "))
    assert command == ["python", "-m", "harness", "report", str(work)]
    result = await anyio.run_process(cli(*command[3:]), env=env(), check=False)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode().strip() == f"report: {work / 'report.html'}"
    html = (work / "report.html").read_text(encoding="utf-8")
    assert "arith · fake-model" in html and 'id="report-data"' in html


async def test_output_and_sample_cap_options(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 12)
    cfg = write_config(tmp_path / "cfg.py", data)
    async with FakeOpenAI(responder=arith_reply) as srv:
        await anyio.run_process(cli("run", str(cfg), "-w", str(tmp_path / "w"), "-q",
                                    "--model-base-url", srv.base_url, "--model", "fake-model"),
                                env=env())
    out = tmp_path / "pages" / "r.html"
    result = await anyio.run_process(cli("report", str(tmp_path / "w"), "-o", str(out),
                                         "--max-samples", "5"), env=env(), check=False)
    assert result.returncode == 0, result.stderr.decode()
    assert "embeds 5 of 12 samples" in out.read_text(encoding="utf-8")
    assert not (tmp_path / "w" / "report.html").exists()


async def test_report_of_a_directory_without_results_exits_2(tmp_path):
    result = await anyio.run_process(cli("report", str(tmp_path)), env=env(), check=False)
    assert result.returncode == 2
    assert b"no results found" in result.stderr
