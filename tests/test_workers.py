"""Worker processes: a hung check is one timeout; waiting for a worker is not timed."""

from __future__ import annotations

import time

import anyio
import pytest

from harness.workers import WorkerPool, WorkerTimeout


async def test_hung_check_is_killed_as_one_timeout_and_the_pool_goes_on():
    pool = WorkerPool(1)
    await pool.warm(int)
    with pytest.raises(WorkerTimeout):
        await pool.run(time.sleep, 60, timeout=0.5)
    assert await pool.run(abs, -3, timeout=30) == 3
    assert pool.timeouts == 1


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
