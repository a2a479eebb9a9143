"""The command line, as a user runs it: subprocesses against the fake server."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import sys
from pathlib import Path

import anyio
import pytest

from harness.testing import FakeOpenAI, Fault

from .helpers import (
    arith_reply,
    count_stored,
    expected_correct,
    write_arith,
    write_config,
)

ROOT = Path(__file__).resolve().parent.parent


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "harness", *args]


def env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), **extra}


async def test_help_lists_the_run_command():
    result = await anyio.run_process(cli("--help"), env=env())
    assert b"run" in result.stdout


async def run_arith(tmp_path, rows: int, *flags: str, **extra_env: str):
    """``harness run`` of ``rows`` arithmetic questions against a fake server, into
    ``tmp_path / 'w'``, with ``flags`` after the endpoint flags."""
    data = write_arith(tmp_path / "a.jsonl", rows)
    cfg = write_config(tmp_path / "cfg.py", data)
    async with FakeOpenAI(responder=arith_reply) as srv:
        return await anyio.run_process(
            cli("run", str(cfg), "-w", str(tmp_path / "w"), "-q", "--model-base-url",
                srv.base_url, "--model", "fake-model", *flags),
            env=env(**extra_env), check=False)


async def test_run_with_flags_prints_summary_and_writes_results(tmp_path):
    result = await run_arith(tmp_path, 20, "--api-key-env", "MY_KEY",
                             MY_KEY="sk-planted-secret-key-000")
    assert result.returncode == 0, result.stderr.decode()
    out = result.stdout.decode()
    assert "arith" in out and f"{100 * expected_correct(20) / 20:.2f}" in out
    saved = json.loads((tmp_path / "w" / "results" / "fake-model" / "arith.json").read_text())
    assert saved["correct"] == expected_correct(20)
    for path in (tmp_path / "w").rglob("*"):
        if path.is_file():
            assert b"sk-planted-secret-key-000" not in path.read_bytes(), path
    assert b"sk-planted-secret-key-000" not in result.stdout + result.stderr


async def test_without_details_the_cli_points_to_none(tmp_path):
    result = await run_arith(tmp_path, 2, "--no-dump-eval-details")
    assert not (tmp_path / "w" / "details").exists()
    assert b"results: " in result.stdout and b"details: " not in result.stdout


async def test_model_name_is_discovered_from_the_endpoint(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 4)
    cfg = write_config(tmp_path / "cfg.py", data)
    async with FakeOpenAI(responder=arith_reply, models=("served-name",)) as srv:
        result = await anyio.run_process(
            cli("run", str(cfg), "-w", str(tmp_path / "w"), "-q"),
            env=env(HARNESS_MODEL_BASE_URL=srv.base_url), check=False)
    assert result.returncode == 0, result.stderr.decode()
    assert srv.requests[0]["model"] == "served-name"


async def test_config_error_exits_2_naming_the_field(tmp_path):
    cfg = write_config(tmp_path / "cfg.py", tmp_path / "absent.jsonl")
    result = await anyio.run_process(cli("run", str(cfg), "-q"), env=env(), check=False)
    assert result.returncode == 2
    assert b"datasets[0].path" in result.stderr


async def test_failed_samples_exit_1_with_a_resume_hint(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 4)
    cfg = write_config(tmp_path / "cfg.py", data)
    def fail_two(body, attempt):
        return Fault("server_error") if "What is 2 " in str(body) else None

    async with FakeOpenAI(responder=arith_reply, faults=fail_two) as srv:
        result = await anyio.run_process(
            cli("run", str(cfg), "-w", str(tmp_path / "w"), "-q", "--model-base-url",
                srv.base_url, "--model", "fake-model", "--max-attempts", "1"),
            env=env(), check=False)
    assert result.returncode == 1
    assert b"run the same command again" in result.stderr


def _stored_indices(db: Path) -> set[int]:
    con = sqlite3.connect(db)
    try:
        return {r[0] for r in con.execute("SELECT idx FROM predictions WHERE status='ok'")}
    finally:
        con.close()


async def test_sigkill_midway_then_resume_loses_nothing_and_repeats_only_in_flight(tmp_path):
    n, concurrency = 200, 8
    data = write_arith(tmp_path / "a.jsonl", n)
    cfg = write_config(tmp_path / "cfg.py", data)
    async with FakeOpenAI(responder=arith_reply, latency=0.02) as srv:
        args = ["--model-base-url", srv.base_url, "--model", "fake-model",
                "-c", str(concurrency), "-q"]
        work = tmp_path / "killed"
        proc = await anyio.open_process(cli("run", str(cfg), "-w", str(work), *args), env=env())
        async with proc:
            with anyio.fail_after(60):
                while count_stored(work / "harness.db") < n // 2:  # noqa: ASYNC110 - another process's SQLite file: no event to wait on
                    await anyio.sleep(0.02)
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        with anyio.fail_after(10):
            await srv.wait_idle()  # the server notices the dead connections
        stored = _stored_indices(work / "harness.db")
        sent_before_kill = len(srv.requests)
        assert len(stored) < n
        resumed = await anyio.run_process(cli("run", str(cfg), "-w", str(work), *args),
                                          env=env(), check=False)
        assert resumed.returncode == 0, resumed.stderr.decode()
        requested = [int(r["messages"][-1]["content"].split()[2]) for r in srv.requests]
        clean = await anyio.run_process(cli("run", str(cfg), "-w", str(tmp_path / "clean"),
                                            *args), env=env(), check=False)
    assert clean.returncode == 0
    assert sorted(set(requested)) == list(range(n))
    # No committed prediction is asked for again; only what was in flight at the kill
    # (at most `concurrency` calls, plus answers that had not reached a commit yet).
    after = requested[sent_before_kill:]
    assert not set(after) & stored
    repeated = len(requested) - n
    assert repeated == sent_before_kill - len(stored)
    assert repeated <= 2 * concurrency
    killed = json.loads((work / "results" / "fake-model" / "arith.json").read_text())
    fresh = json.loads((tmp_path / "clean" / "results" / "fake-model" / "arith.json").read_text())
    for key in ("total", "correct", "accuracy", "counts"):
        assert killed[key] == fresh[key]
    assert (work / "details" / "fake-model" / "arith.jsonl").read_text() == \
        (tmp_path / "clean" / "details" / "fake-model" / "arith.jsonl").read_text()
    con = sqlite3.connect(work / "harness.db")
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    con.close()


@pytest.mark.parametrize("concurrency", [None, 1000])
def test_run_collects_garbage_less_often_in_its_own_process(tmp_path: Path,
                                                            concurrency: int | None) -> None:
    """``harness run`` (and only the CLI) raises the young-generation GC threshold, the
    more the more calls it keeps in flight (``-c``), and freezes what was allocated
    before the run. A config file reports what it sees while the run loads it; this
    process keeps its own settings."""
    import gc
    import subprocess

    from harness.defaults import CONCURRENCY
    from harness.gc_tuning import YOUNG_THRESHOLD, young_threshold

    cfg = tmp_path / "gc_probe.py"
    cfg.write_text("import gc, sys\n"
                   "print('GC', gc.get_threshold()[0], gc.get_freeze_count() > 0, "
                   "file=sys.stderr)\n"
                   "datasets = []\n")
    flags = ["-c", str(concurrency)] if concurrency else []
    out = subprocess.run([sys.executable, "-m", "harness", "run", str(cfg), "-q",
                          "-w", str(tmp_path / "work"), *flags], capture_output=True, text=True)
    probe = [line.split() for line in out.stderr.splitlines() if line.startswith("GC ")]
    expected = young_threshold(concurrency or CONCURRENCY)
    assert probe == [["GC", str(expected), "True"]], out.stderr
    if concurrency:  # a thousand calls in flight keep more objects alive than the default
        assert expected > young_threshold(CONCURRENCY)
    assert YOUNG_THRESHOLD > gc.get_threshold()[0]  # importing harness changed nothing


async def test_models_sharing_an_abbr_are_each_evaluated_under_a_free_name(tmp_path):
    """``m``, ``m``, ``m-2``: the second ``m`` must not become the third's ``m-2``."""
    from .helpers import model_cfg

    data = write_arith(tmp_path / "a.jsonl", 8)
    right = FakeOpenAI(responder=lambda b: arith_reply(b, wrong_every=0))
    half = FakeOpenAI(responder=lambda b: arith_reply(b, wrong_every=2))
    none = FakeOpenAI(responder=lambda b: "no idea")
    async with right, half, none:
        models = [dict(model_cfg(right.base_url), abbr="m"),
                  dict(model_cfg(half.base_url), abbr="m"),
                  dict(model_cfg(none.base_url), abbr="m-2")]
        cfg = write_config(tmp_path / "cfg.py", data, models=models)
        result = await anyio.run_process(cli("run", str(cfg), "-w", str(tmp_path / "w"), "-q"),
                                         env=env(), check=False)
    assert result.returncode == 0, result.stderr.decode()
    assert (right.stats.total, half.stats.total, none.stats.total) == (8, 8, 8)
    correct = {m: json.loads((tmp_path / "w/results" / m / "arith.json").read_text())["correct"]
               for m in ("m", "m-3", "m-2")}
    assert correct == {"m": 8, "m-3": 4, "m-2": 0}
    assert "two models share the abbr 'm'" in result.stderr.decode()


@pytest.mark.parametrize("reuse", [["--reuse"], ["--reuse", "20250101_120000"],
                                   ["--reuse", "latest"]])
async def test_the_opencompass_reuse_command_reruns_from_the_store(tmp_path, reuse):
    """OpenCompass's `--reuse [TIMESTAMP] --mode eval` ports as written: harness reuses
    everything stored in the work directory, so the rerun sends no request."""
    data = write_arith(tmp_path / "a.jsonl", 6)
    cfg = write_config(tmp_path / "cfg.py", data)
    async with FakeOpenAI(responder=arith_reply) as srv:
        base = cli("run", str(cfg), "-w", str(tmp_path / "w"), "-q", "--model-base-url",
                   srv.base_url, "--model", "fake-model")
        first = await anyio.run_process(base, env=env(), check=False)
        assert first.returncode == 0, first.stderr.decode()
        srv.reset()
        again = await anyio.run_process([*base, *reuse, "--mode", "eval"], env=env(),
                                        check=False)
    assert again.returncode == 0, again.stderr.decode()
    assert srv.stats.total == 0
    assert f"{100 * expected_correct(6) / 6:.2f}" in again.stdout.decode()
