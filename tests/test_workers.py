"""Worker processes: a hung check is one timeout; waiting for a worker is not timed;
warming the workers up does not hold back the model requests."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Mapping

import anyio
import pytest

import harness
from harness.testing import FakeOpenAI
from harness.workers import WorkerPool, WorkerTimeout

from .helpers import arith_dataset, arith_reply, expected_correct, model_cfg


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
    # Every check ran in a worker whose warm-up had finished: checks wait for it.
    assert len(rows) == 40 and all('"worker_was_warm": true' in row for row in rows)
