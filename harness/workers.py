"""CPU-bound rule checks in worker processes, each check under a hard time limit.

math-verify's own timeouts use ``signal.alarm``, which only works in a process's main
thread; a worker process runs every check in its main thread, so they work there. A
check that hangs anyway is stopped at ``timeout``: its worker is killed, a fresh one
takes its place, and the sample is one timeout, never a stalled pipeline.

Why not ``anyio.to_process``: it hands a worker one call at a time, so after every check
the worker sleeps until the parent has read the result and sent the next call, and it
cannot warm a replacement worker. Here each worker holds up to ``depth`` calls: while it
runs one, the next waits in its pipe, so it goes from check to check without sleeping;
the parent reads replies in an event-loop callback and times calls with loop timers
(the measurements are in ``bench/README.md``). A call's time limit starts when the
parent sees the worker start it (the reply before it arrived), never while it waits.

Why not ``pebble.ProcessPool`` either: its warm-ups are fixed at construction, a warm-up
that raises or kills its worker leaves the whole pool broken for good with the error only
logged in the worker, and it cannot route a reference's checks to one worker; here
``warm`` raises a warm-up's error, and workers that keep dying in their warm-up fail the
waiting calls and the pool recovers (``bench/bench_pool.py``, ``bench/README.md``).

The pool runs on asyncio (the event loop's ``add_reader`` watches the workers' pipes),
like the rest of harness.
"""

from __future__ import annotations

import asyncio
import math
import os
import pickle
import signal
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

#: Calls each worker holds at once: one running, the rest waiting in its pipe.
DEPTH = 2
#: Workers dying one after another during their warm-up before calls give up.
MAX_WARM_UP_CRASHES = 3
#: A call pickled larger than this is sent from a thread, and only to an idle worker, so
#: a full pipe never blocks the event loop (a busy worker does not read its pipe).
INLINE_SEND_LIMIT = 32 * 1024


class WorkerTimeout(Exception):
    """A check ran past its time limit; its worker process was killed."""


class WorkerCrashed(Exception):
    """A worker process died (killed from outside, out of memory, a crash in C code)
    while running a check."""


def _serve(conn: Connection) -> None:
    """A worker process: run each pickled ``(fn, args)`` received on ``conn`` and send
    back ``(ok, value)``; exit when the parent closes its end (or dies)."""
    # Ctrl-C reaches the whole process group; the parent decides when workers stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _exit_with_parent()
    tuned = False
    while True:
        try:
            request = conn.recv_bytes()
        except (EOFError, OSError):
            return
        try:
            fn, args = pickle.loads(request)
            reply: tuple[bool, Any] = (True, fn(*args))
        except Exception as exc:  # noqa: BLE001 - every failure goes back to the caller
            reply = (False, exc)
        except BaseException as exc:  # noqa: BLE001 - SystemExit, a timeout signal, ...
            # Re-raised in the parent, these would end the whole run, not one sample.
            reply = (False, RuntimeError(f"{type(exc).__name__}: {exc}"))
        try:
            payload = pickle.dumps(reply, pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 - an unpicklable result or exception
            payload = pickle.dumps((False, RuntimeError(
                f"the worker could not send back {type(reply[1]).__name__}: {exc}")))
        try:
            conn.send_bytes(payload)
        except OSError:  # the parent is gone (killed, say): nothing left to do
            return
        if not tuned:
            # After the first call (the warm-up, whose imports are then frozen); see
            # harness.gc_tuning. Also in a worker that replaced a killed one.
            from .gc_tuning import tune_gc

            tune_gc()
            tuned = True


def _exit_with_parent() -> None:
    """Exit when the parent process dies, even in the middle of a hung check (a worker
    otherwise notices only at its next read, and keeps the parent's stdout open)."""
    import multiprocessing
    import threading
    from multiprocessing.connection import wait

    parent = multiprocessing.parent_process()
    if parent is None:  # pragma: no cover - always set in a spawned worker
        return

    def watch() -> None:
        wait([parent.sentinel])
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


@dataclass(eq=False)
class _Call:
    """One ``fn(*args)`` on its way through a worker."""

    payload: bytes
    timeout: float
    #: A warm-up (untimed; a worker that dies during it counts toward ``_warm_crashes``).
    warm: bool = False
    done: bool = False
    ok: bool = False
    value: Any = None
    #: The worker holding it (``None`` before it is sent, or after its worker was lost
    #: before starting it: then its caller sends it again).
    worker: _Worker | None = None
    #: Fires at the time limit, from when the worker starts the call.
    timer: asyncio.TimerHandle | None = None
    #: Set whenever ``done`` or ``worker`` changes; replaced after each set. An asyncio
    #: event: it is set from event-loop callbacks, outside any task, where anyio cannot
    #: tell which library runs it.
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def notify(self) -> None:
        """Wake whoever waits on this call."""
        self.changed.set()
        self.changed = asyncio.Event()

    def finish(self, ok: bool, value: Any) -> None:
        """Record the outcome (the first one counts) and wake the caller."""
        if self.done:
            return
        if self.timer is not None:
            self.timer.cancel()
        self.ok, self.value, self.done = ok, value, True
        self.notify()


class _Worker:
    """One worker process and the calls it holds, oldest (running) first."""

    def __init__(self, pool: WorkerPool) -> None:
        import multiprocessing  # imported here: most runs start no worker process

        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(child,), daemon=True,
                                   name="harness-rule-worker")
        self.process.start()
        child.close()
        self.calls: deque[_Call] = deque()
        self.sending = anyio.Lock()
        self.alive = True
        self.pool = pool
        self.loop = asyncio.get_running_loop()
        self.loop.add_reader(self.conn.fileno(), self._readable)

    def send_now(self, call: _Call) -> None:
        """Hold ``call`` and write it to the worker's pipe; the caller makes sure the
        write cannot block (a small payload, or an empty pipe)."""
        self.hold(call)
        self.conn.send_bytes(call.payload)

    def hold(self, call: _Call) -> None:
        """Record ``call`` as sent; it starts now if nothing runs before it."""
        self.calls.append(call)
        call.worker = self
        if len(self.calls) == 1:
            self._started(call)

    @property
    def warming(self) -> bool:
        """Whether a warm-up is still among its calls (a replacement's take seconds)."""
        return any(call.warm for call in self.calls)

    def _started(self, call: _Call) -> None:
        if call.timeout != math.inf:
            call.timer = self.loop.call_later(call.timeout, self.pool._expire, self, call)

    def _readable(self) -> None:
        """The event loop saw data (or EOF) on the pipe: one reply, read whole (the
        worker writes it at once). The loop calls again while more is waiting, so no
        ``poll`` here: it builds a selector per call."""
        try:
            reply = self.conn.recv_bytes()
        except (EOFError, OSError):
            self.pool._lost(self, crashed=True)
            return
        if not self.calls:  # pragma: no cover - a reply nobody asked for
            return
        call = self.calls.popleft()
        if self.calls:
            self._started(self.calls[0])
        try:
            ok, value = pickle.loads(reply)
        except Exception as exc:  # noqa: BLE001 - e.g. an exception type not importable here
            ok, value = False, RuntimeError(f"unreadable worker reply: {exc}")
        if call.warm:
            self.pool._warm_crashes = 0
        call.finish(ok, value)

    def stop(self) -> None:
        """Kill the process and stop watching its pipe (idempotent)."""
        if not self.alive:
            return
        self.alive = False
        if not self.loop.is_closed():
            self.loop.remove_reader(self.conn.fileno())
        self.process.kill()
        self.process.join(5)
        self.conn.close()


class WorkerPool:
    """At most ``size`` worker processes running checks concurrently, each fed up to
    ``depth`` calls at a time. Belongs to the event loop it is first used in."""

    def __init__(self, size: int | None = None, depth: int = DEPTH) -> None:
        self.size = size or os.cpu_count() or 1
        self.depth = depth
        self.timeouts = 0
        self._workers: list[_Worker] = []
        #: Every distinct warm-up given to ``warm``; a new worker runs them all first.
        self._warm_ups: list[bytes] = []
        #: Workers that died during a warm-up since one last finished (see ``_lost``).
        self._warm_crashes = 0
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        # Calls in workers at once; a caller past it waits here, untimed.
        self._slots: asyncio.Semaphore | None = None

    # noqa below: ``timeout`` counts from when a worker starts the call (queueing excluded)
    # and kills that worker, which a caller's cancel scope cannot express.
    async def run(self, fn: Callable[..., Any], *args: Any, timeout: float,  # noqa: ASYNC109
                  key: Hashable = None) -> Any:
        """``fn(*args)`` in a worker; ``WorkerTimeout`` if it runs over ``timeout`` s
        (counted from when the worker starts it), ``WorkerCrashed`` if its worker dies;
        ``fn``'s own exception if it raises. Calls with the same ``key`` go to the same
        worker while that keeps every worker busy (so its caches serve them)."""
        self._check_loop()
        call = _Call(pickle.dumps((fn, args), pickle.HIGHEST_PROTOCOL), timeout)
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.size * self.depth)
        async with self._slots:
            try:
                while not call.done:
                    if call.worker is None:
                        await self._place(call, key)
                    else:
                        await call.changed.wait()
            finally:
                worker = call.worker
                if not call.done and worker is not None and worker.alive \
                        and worker.calls and worker.calls[0] is call:
                    # Cancelled while it runs: replace the worker rather than let the
                    # calls behind it wait out its time limit; they are sent again by
                    # their callers. A cancelled call still waiting in a pipe is left
                    # there: it runs under its own timer and its reply is dropped.
                    self._lost(worker, crashed=False)
        if call.ok:
            return call.value
        raise call.value

    def start(self, *warm_ups: Callable[[], Any]) -> None:
        """Start every worker with ``warm_ups`` first in its pipe, so every check sent to
        it waits behind them, untimed (math-verify's imports sympy and builds its parser
        caches: seconds no sample's time limit should pay). A worker started later, to
        replace a killed one, runs every warm-up first too. A warm-up given twice runs
        once. Returns at once; ``warm`` also waits for them."""
        self._check_loop()
        for warm_up in warm_ups:
            payload = pickle.dumps((warm_up, ()), pickle.HIGHEST_PROTOCOL)
            if payload in self._warm_ups:
                continue
            self._warm_ups.append(payload)
            for worker in self._workers:
                worker.send_now(_Call(payload, math.inf, warm=True))  # small: cannot block
        while len(self._workers) < self.size:
            self._start()

    async def warm(self, *warm_ups: Callable[[], Any]) -> None:
        """``start``, then wait until every worker has run its warm-ups; an error of a
        warm-up itself is raised."""
        self.start(*warm_ups)
        calls = [call for worker in self._workers for call in worker.calls if call.warm]
        for call in calls:
            while not call.done and call.worker is not None and call.worker.alive:
                await call.changed.wait()
            # A worker that died meanwhile is replaced when next needed (and runs the
            # warm-ups first).
            if call.done and not call.ok and not isinstance(call.value, WorkerCrashed):
                raise call.value

    async def aclose(self) -> None:
        """Kill every worker (a running check is abandoned); later calls fail."""
        self._closed = True
        workers, self._workers = self._workers, []
        for worker in workers:
            self._lost(worker, crashed=False)

    def _check_loop(self) -> None:
        if self._closed:
            raise RuntimeError("the worker pool is closed")
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        elif loop is not self._loop:
            raise RuntimeError("a WorkerPool belongs to the event loop it was first used "
                               "in; create one per event loop")

    def _start(self) -> _Worker:
        """Start a worker; its first calls are the warm-ups, if any."""
        worker = _Worker(self)
        self._workers.append(worker)
        for payload in self._warm_ups:
            worker.send_now(_Call(payload, math.inf, warm=True))  # small: cannot block
        return worker

    async def _place(self, call: _Call, key: Hashable) -> None:
        """Send ``call`` to the worker ``key`` maps to if it has room and no other worker
        is idle, else to the least loaded one, starting a worker while there are fewer
        than ``size``. A worker still warming up comes last while a warm one has room, so
        a check does not wait out a replacement's warm-up beside a worker that could run
        it now."""
        if self._closed:
            raise RuntimeError("the worker pool is closed")
        workers = self._workers
        depth = self.depth
        least = min(workers, key=lambda w: (len(w.calls) >= depth, w.warming, len(w.calls)),
                    default=None)
        if least is None or (least.calls and len(workers) < self.size):
            worker = self._start()
        elif key is None:
            worker = least
        else:
            worker = workers[hash(key) % len(workers)]
            if len(worker.calls) >= depth or (worker.calls and not least.calls) \
                    or (worker.warming and not least.warming):
                worker = least
        await self._send(worker, call)

    async def _send(self, worker: _Worker, call: _Call) -> None:
        """Hold ``call`` on ``worker`` and write it to the pipe; a big payload waits for
        an idle worker and is written from a thread. The call is held before it is
        written, so its reply always finds it."""
        try:
            if len(call.payload) <= INLINE_SEND_LIMIT and not worker.sending.locked():
                worker.send_now(call)  # a few small calls fit in the pipe's buffer
                return
            async with worker.sending:
                while worker.calls and worker.alive:  # until the worker reads its pipe
                    await worker.calls[-1].changed.wait()
                if worker.alive:
                    worker.hold(call)
                    await anyio.to_thread.run_sync(worker.conn.send_bytes, call.payload)
                # else: call.worker stays None and its caller places it again
        except OSError:
            # The worker died and the reader has not seen it yet: replies may still be
            # waiting in the pipe, so the reader settles its calls at EOF. This call
            # never reached it: its caller places it again, on another worker.
            if call in worker.calls:
                worker.calls.remove(call)
                if call.timer is not None:
                    call.timer.cancel()
                    call.timer = None
                call.worker = None
            if worker in self._workers:
                self._workers.remove(worker)

    def _expire(self, worker: _Worker, call: _Call) -> None:
        """A call's time limit passed while its worker ran it."""
        if call.done or not worker.alive:
            return
        self.timeouts += 1
        call.finish(False, WorkerTimeout(
            f"rule check exceeded {call.timeout:g} s; its worker was killed"))
        self._lost(worker, crashed=False)

    def _lost(self, worker: _Worker, *, crashed: bool) -> None:
        """Take ``worker`` out of the pool and kill it, then wake every call it held:
        after a crash the running call fails with ``WorkerCrashed``; every other call
        not finished goes back to its caller to be sent again, unless workers keep
        dying during their warm-up (then nothing would ever run: they fail too)."""
        worker.stop()
        if worker in self._workers:
            self._workers.remove(worker)
        calls = list(worker.calls)
        worker.calls.clear()
        if crashed and calls and calls[0].warm:
            self._warm_crashes += 1
        hopeless = self._warm_crashes >= MAX_WARM_UP_CRASHES
        for i, call in enumerate(calls):
            if call.timer is not None:
                call.timer.cancel()
                call.timer = None
            if crashed and i == 0:
                call.finish(False, WorkerCrashed(_CRASHED))
            elif hopeless and not call.done:
                call.finish(False, WorkerCrashed(
                    f"{self._warm_crashes} rule workers in a row died during their warm-up"))
            elif not call.done:
                call.worker = None
                call.notify()


_CRASHED = "the rule worker process died during this check"
