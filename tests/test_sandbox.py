"""The sandbox's outcomes: what a program's end maps to, and how a failing sandbox is
told apart from a failing program."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import anyio
import pytest

from harness.errors import ConfigError
from harness.sandbox import Limits, SandboxUnavailable, check_bwrap, resolve, run_program
from harness.sandbox import run as run_module


async def test_a_program_that_exits_zero_passed_and_its_output_is_kept():
    run = await run_program("print('hello from the sandbox')")
    assert (run.outcome, run.exit_code, run.stdout) == ("passed", 0, "hello from the sandbox\n")


async def test_a_failing_assertion_is_a_failure_with_the_traceback_in_stderr():
    run = await run_program("assert 1 + 1 == 3, 'arithmetic is broken'")
    assert run.outcome == "failed" and run.exit_code == 1
    assert "AssertionError: arithmetic is broken" in run.stderr


async def test_a_main_guarded_block_does_not_run():
    # As in HumanEval's and OpenCompass's references, which exec the program: a reply's
    # demo under the guard (unittest.main(), input()) must not decide its outcome.
    run = await run_program("if __name__ == '__main__':\n    raise SystemExit(3)\n"
                            "print(__name__)")
    assert (run.outcome, run.stdout) == ("passed", "program\n")


@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
async def test_a_traceback_shows_only_the_programs_lines(sandbox):
    run = await run_program("def f():\n    return 1 / 0\n\nf()\n", sandbox=sandbox)
    frames = re.findall(r'File "([^"]*)", line (\d+)', run.stderr)
    assert [(Path(name).name, line) for name, line in frames] == [("program.py", "4"),
                                                                  ("program.py", "2")]
    assert "return 1 / 0" in run.stderr and "ZeroDivisionError" in run.stderr


async def test_a_non_zero_exit_is_a_failure_naming_the_status():
    run = await run_program("import sys; sys.exit(7)")
    assert (run.outcome, run.reason) == ("failed", "exit status 7")


async def test_cpu_time_past_the_limit_is_a_timeout():
    run = await run_program("while True: pass", Limits(cpu_time=1, wall_time=20))
    assert (run.outcome, run.reason) == ("timeout", "CPU time limit")


async def test_wall_clock_past_the_limit_is_a_timeout():
    run = await run_program("import time; time.sleep(60)", Limits(wall_time=1))
    assert (run.outcome, run.reason) == ("timeout", "wall-clock limit")


async def test_the_tail_keeps_the_end_of_the_output():
    run = await run_program("print('a' * 10000 + 'THE END')", Limits(tail=100))
    assert run.stdout.endswith("THE END\n") and len(run.stdout) == 100


async def test_a_sandbox_that_cannot_run_python_is_a_sandbox_error_not_a_failure(monkeypatch):
    monkeypatch.setattr(run_module, "python_executable", lambda: "/nonexistent/python3")
    run = await run_program("print(1)")
    assert run.outcome == "sandbox_error"
    assert "failed before the program ran" in run.reason


async def test_a_python_that_cannot_start_under_the_limits_is_a_sandbox_error():
    # Under 10 MB of address space the interpreter aborts before any line of the program
    # runs: that says nothing about the program (it was scored a failure).
    run = await run_program("print(1)", Limits(memory=10_000_000))
    assert run.outcome == "sandbox_error"
    assert "failed before the program ran" in run.reason


@pytest.mark.parametrize("source", ["import os\nos.abort()\n", "x = bytearray(1 << 30)\n"],
                         ids=["abort", "out-of-memory"])
async def test_a_program_that_crashes_its_own_python_is_its_own_failure(source):
    run = await run_program(source, Limits(memory=256 << 20))
    assert run.outcome == "failed"


async def test_a_program_printing_what_bwrap_prints_is_still_the_programs_failure():
    # Only the launcher's marker decides: a program cannot pass itself off as a
    # sandbox failure (which would leave it unscored and retried forever).
    run = await run_program("import sys; print('bwrap: Creating new namespace failed', "
                            "file=sys.stderr); sys.exit(1)")
    assert run.outcome == "failed"


def test_without_bwrap_harness_refuses_and_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv(run_module.UNSAFE_ENV, raising=False)
    check_bwrap.cache_clear()
    try:
        with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap"):
            resolve(None)
    finally:
        check_bwrap.cache_clear()


def test_unsandboxed_execution_needs_the_opt_in_and_warns(monkeypatch, caplog):
    monkeypatch.setattr(run_module._Uids, "warned", False)
    monkeypatch.setenv(run_module.UNSAFE_ENV, "1")
    with caplog.at_level(logging.WARNING):
        assert resolve(None) == "none"
    assert "WITHOUT a sandbox" in caplog.text
    monkeypatch.setenv(run_module.UNSAFE_ENV, "0")
    assert resolve(None) == "bwrap"


async def test_the_unsafe_mode_runs_the_program_with_the_same_limits():
    run = await run_program("while True: pass", Limits(cpu_time=1, wall_time=20),
                            sandbox="none")
    assert run.outcome == "timeout"


def test_a_limit_must_be_positive():
    with pytest.raises(ConfigError, match="field 'memory': must be positive"):
        Limits(memory=0)


@pytest.mark.parametrize("field,value", [
    # RLIMIT_CPU counts whole seconds: 0.5 was cut to 0, a timeout for every program.
    ("cpu_time", 0.5), ("cpu_time", 1.9),
    # NaN passes every comparison: anyio refused it as a deadline for every program.
    ("wall_time", float("nan")), ("wall_time", float("inf")), ("cpu_time", float("inf")),
    ("memory", float("nan")), ("processes", 2.5),
    # Past what setrlimit takes, every launch failed instead of the config's load.
    ("memory", 1 << 70), ("cpu_time", 10 ** 20),
], ids=repr)
def test_a_limit_that_no_program_could_run_under_is_refused_naming_it(field, value):
    with pytest.raises(ConfigError, match=f"field '{field}'"):
        Limits(**{field: value})


def test_a_whole_number_written_as_a_float_is_read_as_that_number():
    limits = Limits(cpu_time=2.0, memory=1e9)
    assert (limits.cpu_time, limits.memory) == (2, 10 ** 9)
    assert isinstance(limits.cpu_time, int) and isinstance(limits.memory, int)


async def test_a_run_that_would_execute_code_without_bwrap_exits_2_before_any_request(
        tmp_path):
    from .test_cli import cli, env

    result = await anyio.run_process(
        cli("run", "humaneval", "--limit", "1", "-w", str(tmp_path / "w"),
            "--model-base-url", "http://127.0.0.1:9/v1", "--model", "m"),
        env=env(PATH=str(tmp_path)), check=False)
    assert result.returncode == 2  # could not start: not 1 (samples pending)
    assert b"apt-get install bubblewrap" in result.stderr
    assert not (tmp_path / "w" / "harness.db").exists()
