"""CPU-bound rule checks in worker processes, each under a hard time limit.

math-verify's own timeouts use ``signal.alarm``, which only works in a main thread; in
worker processes (anyio's process pool, one worker per core) they work. A check that
hangs anyway is cancelled at ``timeout`` and, because the call is ``cancellable``, its
worker process is killed and a fresh one takes its place: one timeout, never a stalled
pipeline.
"""

from __future__ import annotations

import os
from typing import Any, Callable

import anyio
import anyio.to_process


class WorkerTimeout(Exception):
    """A check ran past its time limit; its worker process was killed."""


_tuned = False


def _in_worker(fn: Callable[..., Any], *args: Any) -> Any:
    """Run ``fn(*args)`` in a worker; the first call in each worker process tunes its GC
    (after the imports of that call; see ``harness.gc_tuning``). Also covers a worker
    started to replace one killed by a timeout."""
    global _tuned
    result = fn(*args)
    if not _tuned:
        from .gc_tuning import tune_gc

        tune_gc()
        _tuned = True
    return result


class WorkerPool:
    """At most ``size`` worker processes running checks concurrently."""

    def __init__(self, size: int | None = None) -> None:
        self.size = size or os.cpu_count() or 1
        self.limiter = anyio.CapacityLimiter(self.size)
        # Handed to anyio, which then never waits: waiting for a worker happens on
        # ``limiter`` *before* the time limit starts, so a queued check is not timed.
        self._inner = anyio.CapacityLimiter(self.size)
        self.timeouts = 0

    async def run(self, fn: Callable[..., Any], *args: Any, timeout: float) -> Any:
        """``fn(*args)`` in a worker; ``WorkerTimeout`` if it takes over ``timeout`` s."""
        async with self.limiter:
            with anyio.move_on_after(timeout) as scope:
                return await anyio.to_process.run_sync(_in_worker, fn, *args,
                                                       cancellable=True, limiter=self._inner)
        if scope.cancelled_caught:
            self.timeouts += 1
            raise WorkerTimeout(f"rule check exceeded {timeout:g} s; its worker was killed")
        raise AssertionError("unreachable")  # pragma: no cover

    async def warm(self, warm_up: Callable[[], Any]) -> None:
        """Start every worker and run ``warm_up`` there (math-verify's is one small
        check, which imports sympy and compiles its parsers: seconds that must not be
        charged to the first samples' time limits)."""
        async with anyio.create_task_group() as tg:
            for _ in range(self.size):
                tg.start_soon(self._warm_one, warm_up)

    async def _warm_one(self, warm_up: Callable[[], Any]) -> None:
        async with self.limiter:
            await anyio.to_process.run_sync(_in_worker, warm_up, limiter=self._inner)
