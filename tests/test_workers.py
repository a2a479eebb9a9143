"""Worker processes: a hung check is one timeout; waiting for a worker is not timed;
a crash, an exception or a cancelled caller costs only its own call; warming the workers
up does not hold back the model requests."""

from __future__ import annotations

import functools
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Mapping

import anyio
import pytest

import harness
from harness.testing import FakeOpenAI
from harness.workers import (INLINE_SEND_LIMIT, MAX_WARM_UP_CRASHES, WorkerCrashed, WorkerPool,
                             WorkerTimeout)

from .helpers import arith_dataset, arith_reply, expected_correct, model_cfg


async def test_hung_check_is_killed_as_one_timeout_and_the_pool_goes_on():
    pool = WorkerPool(1)
    await pool.warm(int)
    with pytest.raises(WorkerTimeout):
        await pool.run(time.sleep, 60, timeout=0.5)
    assert await pool.run(abs, -3, timeout=30) == 3
    assert pool.timeouts == 1
    await pool.aclose()


async def test_a_check_waiting_for_a_busy_worker_is_not_charged_that_wait():
    pool = WorkerPool(1)
    await pool.warm(int)
    results = {}

    async def slow():
        results["slow"] = await pool.run(time.sleep, 2.0, timeout=30)

    async def quick(started: anyio.Event):
        await started.wait()
        # Queued behind a 2 s check with a 1 s limit: only its own run is timed.
        results["quick"] = await pool.run(abs, -1, timeout=1.0)

    started = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(slow)
        await anyio.sleep(0)  # let slow take the only worker first
        started.set()
        tg.start_soon(quick, started)
    assert results == {"slow": None, "quick": 1}
    await pool.aclose()


async def test_workers_collect_garbage_less_often_from_the_first_call_on():
    """Each worker tunes its GC after its first call (the warm-up's imports frozen),
    also a worker started to replace one killed by a timeout."""
    import gc

    from harness.gc_tuning import YOUNG_THRESHOLD

    pool = WorkerPool(1)
    await pool.warm(int)
    assert (await pool.run(gc.get_threshold, timeout=30))[0] == YOUNG_THRESHOLD
    assert await pool.run(gc.get_freeze_count, timeout=30) > 0
    with pytest.raises(WorkerTimeout):
        await pool.run(time.sleep, 60, timeout=0.5)
    await pool.run(int, timeout=30)  # the replacement's first call
    assert (await pool.run(gc.get_threshold, timeout=30))[0] == YOUNG_THRESHOLD
    assert gc.get_threshold()[0] != YOUNG_THRESHOLD  # this process is untouched
    await pool.aclose()


def _exit_now() -> None:
    os._exit(3)  # a worker dying mid-check, as in a crash in C code


def _unpicklable() -> Any:
    return lambda: None


def _length(data: bytes) -> int:
    return len(data)


@pytest.mark.parametrize("first, error, timeouts, limit", [
    ((time.sleep, 60), WorkerTimeout, 1, 1.0),  # hangs: killed at its 1 s limit
    # Its worker dies: seen at once, whatever the limit (a generous one, since the worker
    # first imports this test module to unpickle the function, slow on a busy machine).
    ((_exit_now,), WorkerCrashed, 0, 30.0),
])
async def test_a_check_queued_behind_a_failing_one_is_sent_again(first, error, timeouts,
                                                                 limit):
    """With one worker, the second call waits in the worker's pipe behind the first; when
    the first hangs or kills its worker, the second runs in the replacement."""
    pool = WorkerPool(1)
    await pool.warm(int)
    failed = []

    async def failing():
        with pytest.raises(error):
            await pool.run(*first, timeout=limit)
        failed.append(error)

    assert await _queued_behind(pool, failing) == 7
    assert failed == [error] and pool.timeouts == timeouts
    await pool.aclose()


async def _queued_behind(pool: WorkerPool, first: Any) -> Any:
    """Start ``first`` (a coroutine function) and, once its call is in the worker, a
    quick call queued behind it; the quick call's result."""
    queued = []

    async def later():
        queued.append(await pool.run(abs, -7, timeout=5))

    async with anyio.create_task_group() as tg:
        tg.start_soon(first)
        await anyio.sleep(0.1)
        tg.start_soon(later)
    return queued[0]


async def test_exceptions_and_unsendable_results_come_back_and_the_worker_stays():
    pool = WorkerPool(1)
    await pool.warm(int)
    pid = await pool.run(os.getpid, timeout=30)
    with pytest.raises(ValueError, match="invalid literal"):
        await pool.run(int, "seven", timeout=30)
    with pytest.raises(RuntimeError, match="could not send back function"):
        await pool.run(_unpicklable, timeout=30)
    assert await pool.run(os.getpid, timeout=30) == pid
    await pool.aclose()


async def test_a_large_call_waits_for_an_idle_worker_without_blocking_the_loop():
    """A payload too large for the pipe's buffer is not written to a busy worker from
    the event loop (which would block it until the worker reads); the loop keeps
    running meanwhile."""
    pool = WorkerPool(1)
    await pool.warm(int)
    ticks = 0
    slow_done = anyio.Event()

    async def ticker():
        nonlocal ticks
        while not slow_done.is_set():
            ticks += 1
            await anyio.sleep(0.01)

    async def slow():
        await pool.run(time.sleep, 1.0, timeout=30)
        slow_done.set()

    big = b"x" * (40 * INLINE_SEND_LIMIT)
    async with anyio.create_task_group() as tg:
        tg.start_soon(slow)
        await anyio.sleep(0.05)
        tg.start_soon(ticker)
        assert await pool.run(_length, big, timeout=30) == len(big)
    assert ticks >= 2
    await pool.aclose()


async def test_a_cancelled_caller_costs_its_worker_not_the_calls_behind_it():
    pool = WorkerPool(1)
    await pool.warm(int)
    pid = await pool.run(os.getpid, timeout=30)
    cancelled = []

    async def cancelled_caller():
        with anyio.move_on_after(0.5) as scope:
            await pool.run(time.sleep, 60, timeout=30)
        cancelled.append(scope.cancelled_caught)

    assert await _queued_behind(pool, cancelled_caller) == 7
    assert cancelled == [True]
    assert await pool.run(os.getpid, timeout=30) != pid  # the sleeping worker was replaced
    assert pool.timeouts == 0
    await pool.aclose()


async def test_closing_the_pool_ends_its_worker_processes():
    pool = WorkerPool(2)
    await pool.warm(int)
    pids = set()
    async with anyio.create_task_group() as tg:
        for _ in range(4):
            tg.start_soon(lambda: _collect_pid(pool, pids))
    assert pids and os.getpid() not in pids
    await pool.aclose()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


async def _collect_pid(pool: WorkerPool, pids: set[int]) -> None:
    await pool.run(time.sleep, 0.3, timeout=30)
    pids.add(await pool.run(os.getpid, timeout=30))


async def test_calls_with_one_key_share_a_worker_unless_another_worker_would_idle():
    pool = WorkerPool(2)
    await pool.warm(int)
    # Two keys the pool maps to different workers (it maps by hash).
    a = "key-0"
    b = next(k for k in (f"key-{i}" for i in range(1, 100)) if hash(k) % 2 != hash(a) % 2)
    # One call at a time (both workers idle each time): a key always lands on its worker.
    by_key = {key: {await pool.run(os.getpid, timeout=30, key=key) for _ in range(6)}
              for key in (a, b)}
    assert [len(pids) for pids in by_key.values()] == [1, 1]
    assert by_key[a] != by_key[b]
    # While a long call occupies a's worker, another call keyed a goes to the idle one.
    other = {}

    async def long_call():
        await pool.run(time.sleep, 1.0, timeout=30, key=a)

    async with anyio.create_task_group() as tg:
        tg.start_soon(long_call)
        await anyio.sleep(0.2)
        other["pid"] = await pool.run(os.getpid, timeout=30, key=a)
    assert {other["pid"]} == by_key[b]
    await pool.aclose()


_warm_log: list[str] = []


def _warm_a() -> None:
    _warm_log.append("a")


def _warm_b() -> None:
    _warm_log.append("b")


def _read_warm_log() -> list[str]:
    return _warm_log


def _crash_if_flagged(flag: str) -> None:
    if os.path.exists(flag):
        os._exit(9)


def _system_exit() -> None:
    raise SystemExit(3)


def _sleep_then_pid(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


async def test_a_replacement_runs_every_warm_up_once():
    pool = WorkerPool(1)
    await pool.warm(_warm_a)
    await pool.warm(_warm_b)
    await pool.warm(_warm_a)  # the same warm-up again: not run again
    assert await pool.run(_read_warm_log, timeout=30) == ["a", "b"]
    with pytest.raises(WorkerTimeout):
        await pool.run(time.sleep, 60, timeout=0.5)
    assert await pool.run(_read_warm_log, timeout=30) == ["a", "b"]
    await pool.aclose()


async def test_workers_that_die_in_their_warm_up_fail_the_call_instead_of_looping(tmp_path):
    flag = tmp_path / "crash"
    pool = WorkerPool(1)
    await pool.warm(functools.partial(_crash_if_flagged, str(flag)))
    flag.touch()  # from now on every new worker dies during its warm-up
    with pytest.raises(WorkerTimeout):
        await pool.run(time.sleep, 60, timeout=0.5)
    with pytest.raises(WorkerCrashed, match=f"{MAX_WARM_UP_CRASHES} rule workers in a row"):
        await pool.run(abs, -1, timeout=30)
    flag.unlink()
    assert await pool.run(abs, -1, timeout=30) == 1  # and it recovers
    await pool.aclose()


async def test_a_check_raising_system_exit_is_an_error_of_that_check_only():
    pool = WorkerPool(1)
    await pool.warm(int)
    pid = await pool.run(os.getpid, timeout=30)
    with pytest.raises(RuntimeError, match="SystemExit: 3"):
        await pool.run(_system_exit, timeout=30)
    assert await pool.run(os.getpid, timeout=30) == pid
    await pool.aclose()


async def test_cancelling_a_waiting_caller_leaves_the_running_check_alone():
    pool = WorkerPool(1)
    await pool.warm(int)
    pid = await pool.run(os.getpid, timeout=30)
    front = {}

    async def running():
        front["pid"] = await pool.run(_sleep_then_pid, 1.0, timeout=30)

    async with anyio.create_task_group() as tg:
        tg.start_soon(running)
        await anyio.sleep(0.2)
        with anyio.move_on_after(0.2):
            await pool.run(abs, -1, timeout=30)  # queued behind, then cancelled
    assert front == {"pid": pid}  # it finished in the worker it started in
    assert await pool.run(os.getpid, timeout=30) == pid
    await pool.aclose()


def test_a_pool_refuses_a_second_event_loop():
    pool = WorkerPool(1)

    async def use() -> int:
        return await pool.run(abs, -4, timeout=30)

    try:
        assert anyio.run(use) == 4
        with pytest.raises(RuntimeError, match="event loop"):
            anyio.run(use)
    finally:
        for worker in pool._workers:
            worker.process.kill()
            worker.process.join(5)


def test_a_worker_exits_when_its_parent_dies_mid_check(tmp_path):
    """The parent exits hard (a second Ctrl-C, SIGKILL) while a check hangs: the worker
    must not outlive it."""
    script = tmp_path / "parent.py"
    script.write_text(
        "import os, time, anyio\n"
        "from harness.workers import WorkerPool\n"
        "async def main():\n"
        "    pool = WorkerPool(1)\n"
        "    print(await pool.run(os.getpid, timeout=30), flush=True)\n"
        "    async with anyio.create_task_group() as tg:\n"
        "        tg.start_soon(lambda: pool.run(time.sleep, 60, timeout=120))\n"
        "        await anyio.sleep(0.5)\n"
        "        os._exit(130)\n"
        "if __name__ == '__main__':\n"
        "    anyio.run(main)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    assert done.returncode == 130, done.stderr
    pid = int(done.stdout.split()[0])
    deadline = time.monotonic() + 10
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(pid)


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"

_warmed_here = False


class WarmsAfterTheFirstRequest(harness.BaseEvaluator):
    """A worker evaluator whose warm-up ends only once the model has been asked something
    (the fake server creates ``flag``): a pipeline that finished warming its workers
    before sending the first request would wait here until the warm-up gives up."""

    needs_worker = True

    def __init__(self, flag: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.flag = flag

    def warm_up(self) -> None:
        global _warmed_here
        deadline = time.monotonic() + 20
        while not os.path.exists(self.flag):
            if time.monotonic() > deadline:
                raise RuntimeError("no model request was sent while the workers warmed up")
            time.sleep(0.02)
        _warmed_here = True

    def score_sample(self, prediction: Any, reference: Any,
                     test_item: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return {"correct": str(prediction) == str(reference), "pred": prediction,
                "answer": reference, "worker_was_warm": _warmed_here}


async def test_workers_warm_up_while_the_first_model_requests_are_answered(arith, tmp_path):
    flag = tmp_path / "first-request"

    def reply(body: dict[str, Any]) -> str:
        flag.touch()
        return arith_reply(body)

    dataset = arith_dataset(arith, dict(type=WarmsAfterTheFirstRequest, flag=str(flag)))
    async with FakeOpenAI(responder=reply) as srv:
        report = await harness.evaluate(datasets=[dataset], models=[model_cfg(srv.base_url)],
                                        work_dir=tmp_path / "w")
    assert report.result("arith")["correct"] == expected_correct(40)
    rows = (tmp_path / "w" / "details" / "fake" / "arith.jsonl").read_text().splitlines()
    # Every check ran after its worker's warm-up: it waited behind it in the pipe.
    assert len(rows) == 40 and all('"worker_was_warm": true' in row for row in rows)
    # The run closed its pool: no worker process outlives it.
    assert multiprocessing.active_children() == []


async def test_a_check_that_hangs_is_one_timeout_sample_and_the_run_finishes(arith, tmp_path):
    """math-verify's own alarms pushed out to an hour (as for a hang inside C code): the
    pool's limit stops the one pathological check; every other sample is scored."""
    def reply(body: dict[str, Any]) -> str:
        question = body["messages"][-1]["content"]
        if question.startswith("What is 5 +"):
            return "So the answer is $\\boxed{10^{10^{10^{10^{10}}}}}$."
        a = int(question.split()[2])
        return f"The answer is $\\boxed{{{2 * a + 1}}}$."

    evaluator = dict(type=harness.MATHVerifyEvaluator, parse_timeout=3600,
                     verify_timeout=3600, timeout=2)
    dataset = arith_dataset(arith, evaluator)
    dataset["eval_cfg"].pop("pred_postprocessor")  # math-verify reads the whole reply
    async with FakeOpenAI(responder=reply) as srv:
        report = await harness.evaluate(datasets=[dataset], models=[model_cfg(srv.base_url)],
                                        work_dir=tmp_path / "w")
    result = report.result("arith")
    assert result["counts"] == {"ok": 39, "timeout": 1}
    assert result["correct"] == 39
    rows = (tmp_path / "w" / "details" / "fake" / "arith.jsonl").read_text().splitlines()
    assert '"status": "timeout"' in rows[5] and "exceeded 2 s" in rows[5]


async def test_a_call_sent_to_a_worker_that_just_died_is_placed_again():
    """The worker dies between two calls, before the event loop notices: the write
    fails, and the call goes to a replacement instead of failing."""
    pool = WorkerPool(1)
    await pool.warm(int)
    pid = await pool.run(os.getpid, timeout=30)
    os.kill(pid, 9)
    pool._workers[0].process.join(5)  # gone, and the event loop has not run since
    assert await pool.run(os.getpid, timeout=30) != pid
    await pool.aclose()
    with pytest.raises(RuntimeError, match="closed"):
        await pool.run(os.getpid, timeout=30)
