"""Worker processes: a hung check is one timeout; waiting for a worker is not timed;
a crash, an exception or a cancelled caller costs only its own call; warming the workers
up does not hold back the model requests.

The tests wait on events, never on sleeps: a call tells the test it has started in its
worker by writing to a named pipe (``_announced``), a call can be held there until the test
lets it go (``_hold``), and ``anyio.wait_all_tasks_blocked`` says when a call just made is
waiting in its worker's pipe (``run`` blocks only once the call is sent)."""

from __future__ import annotations

import asyncio
import functools
import multiprocessing
import os
import select
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

import harness
from harness.testing import FakeOpenAI
from harness.workers import (
    INLINE_SEND_LIMIT,
    MAX_WARM_UP_CRASHES,
    WorkerCrashed,
    WorkerPool,
    WorkerTimeout,
)

from .helpers import arith_dataset, arith_reply, expected_correct, model_cfg

#: How long a held call waits for the test before it gives up (a guard, so a failing test
#: ends instead of hanging; never reached when the test passes).
HOLD_GUARD = 60.0


class Fifo:
    """A named pipe between the test and worker calls, which the test waits on without
    polling: a call writes to it when it starts, or blocks reading it until released."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path = str(path)
        # Read-write: opening it does not wait for a writer, a worker's open for either
        # end does not block, and the test never reads an end of file.
        self.fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)

    async def wait(self) -> None:
        """Until a worker call has written to the pipe (consumes one write)."""
        loop = asyncio.get_running_loop()
        ready = loop.create_future()
        loop.add_reader(self.fd, lambda: ready.done() or ready.set_result(None))
        try:
            with anyio.fail_after(HOLD_GUARD):
                await ready
        finally:
            loop.remove_reader(self.fd)
        os.read(self.fd, 1)

    def set(self) -> None:
        """Release one call blocked in ``_hold``."""
        os.write(self.fd, b"x")


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Callable[[], Fifo]]:
    """A factory of named pipes under ``tmp_path``, closed after the test."""
    made: list[Fifo] = []

    def make() -> Fifo:
        made.append(Fifo(tmp_path / f"fifo-{len(made)}"))
        return made[-1]

    yield make
    for pipe in made:
        os.close(pipe.fd)


def _this_module() -> None:
    """A warm-up that imports this module in the worker (the functions below come from
    it), so no timed call pays for that import."""


def _announce(started: str) -> None:
    with open(started, "wb") as pipe:
        pipe.write(b"x")


def _announced(started: str, fn: Callable[..., Any], *args: Any) -> Any:
    """Tell the test this call has started in its worker, then ``fn(*args)``."""
    _announce(started)
    return fn(*args)


def _hold(started: str, go: str) -> bool:
    """Tell the test this call has started, then wait until it sets ``go``; whether it
    did (else the guard ran out)."""
    _announce(started)
    fd = os.open(go, os.O_RDONLY | os.O_NONBLOCK)
    try:
        return bool(select.select([fd], [], [], HOLD_GUARD)[0])
    finally:
        os.close(fd)


def _hold_then(started: str, go: str, fn: Callable[..., Any], *args: Any) -> Any:
    """``_hold``, then ``fn(*args)``."""
    _hold(started, go)
    return fn(*args)


async def test_hung_check_is_killed_as_one_timeout_and_the_pool_goes_on():
    pool = WorkerPool(1)
    await pool.warm(int)
    with pytest.raises(WorkerTimeout):
        await pool.run(time.sleep, 60, timeout=0.5)
    assert await pool.run(abs, -3, timeout=30) == 3
    assert pool.timeouts == 1
    await pool.aclose()


async def test_a_check_waiting_for_a_busy_worker_is_not_charged_that_wait(fifo):
    pool = WorkerPool(1)
    await pool.warm(_this_module)
    results = {}
    started = fifo()

    async def slow():
        results["slow"] = await pool.run(_announced, started.path, time.sleep, 2.0,
                                         timeout=30)

    async with anyio.create_task_group() as tg:
        tg.start_soon(slow)
        await started.wait()  # slow runs in the only worker
        # Queued behind a 2 s check with a 1 s limit: only its own run is timed.
        results["quick"] = await pool.run(abs, -1, timeout=1.0)
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
    ((time.sleep, 60), WorkerTimeout, 1, 2.0),  # hangs: killed at its 2 s limit
    ((_exit_now,), WorkerCrashed, 0, 30.0),  # its worker dies: seen at once, whatever the limit
])
async def test_a_check_queued_behind_a_failing_one_is_sent_again(first, error, timeouts,
                                                                 limit, fifo):
    """With one worker, the second call waits in the worker's pipe behind the first; when
    the first hangs or kills its worker, the second runs in the replacement."""
    pool = WorkerPool(1)
    await pool.warm(_this_module)
    failed = []
    started, go = fifo(), fifo()

    async def failing():
        with pytest.raises(error):
            await pool.run(_hold_then, started.path, go.path, *first, timeout=limit)
        failed.append(error)

    assert await _queued_behind(pool, failing, started, go.set) == 7
    assert failed == [error] and pool.timeouts == timeouts
    await pool.aclose()


async def _queued_behind(pool: WorkerPool, first: Any, started: Fifo,
                         release: Callable[[], None]) -> Any:
    """Start ``first`` (a coroutine function whose call writes to ``started``); once its
    call runs in the worker, queue a quick call behind it, then ``release()`` (which makes
    the first call fail); the quick call's result."""
    queued = []

    async def later():
        queued.append(await pool.run(abs, -7, timeout=30))

    async with anyio.create_task_group() as tg:
        tg.start_soon(first)
        await started.wait()
        tg.start_soon(later)
        await anyio.wait_all_tasks_blocked()  # later's call waits in the worker's pipe
        release()
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


async def test_a_large_call_waits_for_an_idle_worker_without_blocking_the_loop(fifo):
    """A payload too large for the pipe's buffer is not written to a busy worker from
    the event loop (which would block it until the worker reads): the loop keeps
    running, so the test can release the busy worker."""
    pool = WorkerPool(1)
    await pool.warm(_this_module)
    results = {}
    started, go = fifo(), fifo()
    big = b"x" * (40 * INLINE_SEND_LIMIT)

    async def held():
        results["held"] = await pool.run(_hold, started.path, go.path, timeout=2 * HOLD_GUARD)

    async def large():
        results["large"] = await pool.run(_length, big, timeout=30)

    async with anyio.create_task_group() as tg:
        tg.start_soon(held)
        await started.wait()  # the only worker is busy until released
        tg.start_soon(large)
        # A write from the loop would block it here until the held call gave up.
        await anyio.wait_all_tasks_blocked()
        go.set()
    # Released by the test, not by the guard; then the large call ran.
    assert results == {"held": True, "large": len(big)}
    await pool.aclose()


async def test_a_cancelled_caller_costs_its_worker_not_the_calls_behind_it(fifo):
    pool = WorkerPool(1)
    await pool.warm(_this_module)
    pid = await pool.run(os.getpid, timeout=30)
    cancelled = []
    started = fifo()
    scope = anyio.CancelScope()

    async def cancelled_caller():
        with scope:
            await pool.run(_announced, started.path, time.sleep, 60, timeout=90)
        cancelled.append(scope.cancelled_caught)

    assert await _queued_behind(pool, cancelled_caller, started, scope.cancel) == 7
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
    pids.add(await pool.run(os.getpid, timeout=30))


async def test_calls_with_one_key_share_a_worker_unless_another_worker_would_idle(fifo):
    pool = WorkerPool(2)
    await pool.warm(_this_module)
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
    started, go = fifo(), fifo()

    async def long_call():
        other["long"] = await pool.run(_hold_then, started.path, go.path, os.getpid,
                                       timeout=2 * HOLD_GUARD, key=a)

    async with anyio.create_task_group() as tg:
        tg.start_soon(long_call)
        await started.wait()
        # Sent to a's busy worker, this would wait until the long call's guard ran out.
        other["pid"] = await pool.run(os.getpid, timeout=30, key=a)
        go.set()
    assert {other["pid"]} == by_key[b] and {other["long"]} == by_key[a]
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


def _warm_up_held_if(flag: str, started: str, go: str) -> None:
    if os.path.exists(flag):
        _hold(started, go)


async def test_a_check_goes_to_a_warm_worker_rather_than_wait_out_a_replacements_warm_up(
        tmp_path, fifo):
    """A replacement worker runs the warm-ups first (seconds with math-verify): a check
    keyed to it goes to the warm worker that has room instead of queueing behind them."""
    flag = tmp_path / "hold-warm-ups"
    warm_started, warm_go, started, go = fifo(), fifo(), fifo(), fifo()
    pool = WorkerPool(2, depth=3)  # room on the replacement beside its warm-up and one call
    await pool.warm(functools.partial(_warm_up_held_if, str(flag), warm_started.path,
                                      warm_go.path))
    flag.touch()  # from now on a new worker's warm-up is held until warm_go
    results = {}
    keyed_done = anyio.Event()
    # The replacement is the pool's second worker: a key mapped to it (by hash).
    key = next(k for k in (f"key-{i}" for i in range(100)) if hash(k) % 2 == 1)

    async def busy():
        results["warm"] = await pool.run(_hold_then, started.path, go.path, os.getpid,
                                         timeout=2 * HOLD_GUARD)

    async def keyed():
        results["keyed"] = await pool.run(os.getpid, timeout=30, key=key)
        keyed_done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(busy)
        await started.wait()  # one worker busy; the other hangs and is killed
        with pytest.raises(WorkerTimeout):
            await pool.run(time.sleep, 60, timeout=0.5)
        # Starts the replacement (the warm worker is busy); this call waits behind its
        # warm-up.
        tg.start_soon(lambda: pool.run(abs, -1, timeout=30))
        await warm_started.wait()
        tg.start_soon(keyed)
        await anyio.wait_all_tasks_blocked()
        go.set()
        await keyed_done.wait()  # behind the held warm-up, this would wait for its guard
        warm_go.set()
    assert results["keyed"] == results["warm"]
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


async def test_cancelling_a_waiting_caller_leaves_the_running_check_alone(fifo):
    pool = WorkerPool(1)
    await pool.warm(_this_module)
    pid = await pool.run(os.getpid, timeout=30)
    front = {}
    started, go = fifo(), fifo()

    async def running():
        front["pid"] = await pool.run(_hold_then, started.path, go.path, os.getpid,
                                      timeout=2 * HOLD_GUARD)

    async with anyio.create_task_group() as tg:
        tg.start_soon(running)
        await started.wait()
        async with anyio.create_task_group() as waiting:
            waiting.start_soon(lambda: pool.run(abs, -1, timeout=30))
            await anyio.wait_all_tasks_blocked()  # queued behind the running call
            waiting.cancel_scope.cancel()
        go.set()
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
    started = tmp_path / "started"
    os.mkfifo(started)
    script = tmp_path / "parent.py"
    script.write_text(
        "import os, sys, time, anyio, anyio.to_thread\n"
        "from harness.workers import WorkerPool\n"
        "def hang(path):\n"
        "    with open(path, 'wb') as pipe:\n"
        "        pipe.write(b'x')\n"
        "    time.sleep(60)\n"
        "async def main():\n"
        "    started = os.open(sys.argv[1], os.O_RDWR)\n"
        "    pool = WorkerPool(1)\n"
        "    print(await pool.run(os.getpid, timeout=30), flush=True)\n"
        "    async with anyio.create_task_group() as tg:\n"
        "        tg.start_soon(lambda: pool.run(hang, sys.argv[1], timeout=120))\n"
        "        await anyio.to_thread.run_sync(os.read, started, 1)  # the check hangs\n"
        "        os._exit(130)\n"
        "if __name__ == '__main__':\n"
        "    anyio.run(main)\n")
    done = subprocess.run([sys.executable, str(script), str(started)], capture_output=True,
                          text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 130, done.stderr
    pid = int(done.stdout.split()[0])
    try:
        exited = os.pidfd_open(pid)  # readable once the process has ended
    except ProcessLookupError:
        return  # already gone
    try:
        assert select.select([exited], [], [], HOLD_GUARD)[0], "the worker outlived its parent"
    finally:
        os.close(exited)

_warmed_here = False


class WarmsAfterTheFirstRequest(harness.BaseEvaluator):
    """A worker evaluator whose warm-up ends only once the model has been asked something
    (the fake server writes to ``flag``): a pipeline that finished warming its workers
    before sending the first request would wait here until the warm-up gives up."""

    needs_worker = True

    def __init__(self, flag: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.flag = flag

    def warm_up(self) -> None:
        global _warmed_here
        # ``flag`` is a named pipe the fake server writes to on every request.
        fd = os.open(self.flag, os.O_RDONLY | os.O_NONBLOCK)
        try:
            if not select.select([fd], [], [], 20)[0]:
                raise RuntimeError("no model request was sent while the workers warmed up")
        finally:
            os.close(fd)
        _warmed_here = True

    def score_sample(self, prediction: Any, reference: Any,
                     test_item: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return {"correct": str(prediction) == str(reference), "pred": prediction,
                "answer": reference, "worker_was_warm": _warmed_here}


async def test_workers_warm_up_while_the_first_model_requests_are_answered(arith, fifo):
    flag = fifo()

    def reply(body: dict[str, Any]) -> str:
        flag.set()
        return arith_reply(body)

    tmp_path = Path(flag.path).parent
    dataset = arith_dataset(arith, dict(type=WarmsAfterTheFirstRequest, flag=flag.path))
    async with FakeOpenAI(responder=reply) as srv:
        report = await harness.evaluate(datasets=[dataset], models=[model_cfg(srv.base_url)],
                                        work_dir=tmp_path / "w")
    assert report.result("arith")["correct"] == expected_correct(40)
    rows = (tmp_path / "w" / "details" / "fake" / "arith.jsonl").read_text().splitlines()
    # Every check ran after its worker's warm-up: it waited behind it in the pipe.
    assert len(rows) == 40 and all('"worker_was_warm": true' in row for row in rows)
    # The run closed its pool: no worker process outlives it.
    assert multiprocessing.active_children() == []


def _tower_at_row_5(body: dict[str, Any]) -> str:
    """Right answers to the arithmetic rows, but a power tower math-verify cannot
    finish comparing for row 5."""
    question = body["messages"][-1]["content"]
    if question.startswith("What is 5 +"):
        return "So the answer is $\\boxed{10^{10^{10^{10^{10}}}}}$."
    a = int(question.split()[2])
    return f"The answer is $\\boxed{{{2 * a + 1}}}$."


async def _run_tower(arith, tmp_path, **limits):
    """The arithmetic run, scored by math-verify on whole replies under ``limits``, with
    a pathological tower at row 5; its result and details lines."""
    dataset = arith_dataset(arith, dict(type=harness.MATHVerifyEvaluator, **limits))
    dataset["eval_cfg"].pop("pred_postprocessor")  # math-verify reads the whole reply
    async with FakeOpenAI(responder=_tower_at_row_5) as srv:
        report = await harness.evaluate(datasets=[dataset], models=[model_cfg(srv.base_url)],
                                        work_dir=tmp_path / "w")
    rows = (tmp_path / "w" / "details" / "fake" / "arith.jsonl").read_text().splitlines()
    return report.result("arith"), rows


async def test_a_check_that_hangs_is_one_timeout_sample_and_the_run_finishes(arith, tmp_path):
    """math-verify's own alarms pushed out to an hour (as for a hang inside C code): the
    pool's limit stops the one pathological check; every other sample is scored."""
    result, rows = await _run_tower(arith, tmp_path, parse_timeout=3600,
                                    verify_timeout=3600, timeout=2)
    assert result["counts"] == {"ok": 39, "timeout": 1}
    assert result["correct"] == 39
    assert '"status": "timeout"' in rows[5] and "exceeded 2 s" in rows[5]


async def test_a_check_math_verifys_own_limit_cuts_short_is_a_timeout_not_wrong(arith,
                                                                                 tmp_path):
    """math-verify ends a comparison at its limit as "unequal" and only logs it: that
    sample is a timeout, as if the pool had stopped it, not a wrong answer."""
    result, rows = await _run_tower(arith, tmp_path, verify_timeout=1, timeout=60)
    assert result["counts"] == {"ok": 39, "timeout": 1}
    assert result["correct"] == 39  # the other 39 scored as before, none lost to wrong
    assert '"status": "timeout"' in rows[5] \
        and "math-verify's time limit cut the comparison short" in rows[5]


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
