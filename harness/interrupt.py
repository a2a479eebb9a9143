"""Graceful Ctrl-C for the command line (the library never installs signal handlers).

The first SIGINT or SIGTERM cancels the run: no new requests start, every reply and
verdict already received is committed, and the store is closed; then the CLI
prints how to resume and exits non-zero. A second signal, or cleanup that outlasts
``grace`` seconds, exits at once: SQLite's write-ahead log keeps the store consistent
even then, since every commit is atomic.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

from .errors import primary_error

T = TypeVar("T")

#: Exit code after an interrupt (128 + SIGINT), shared with the CLI.
EXIT_INTERRUPTED = 130


async def run_until_signal(fn: Callable[[], Awaitable[T]], *, grace: float = 10.0) -> T:
    """Await ``fn()``; raise ``KeyboardInterrupt`` once a signal has cancelled it."""
    interrupted = False
    result: T | None = None
    try:
        async with anyio.create_task_group() as tg:
            work = anyio.CancelScope()

            async def hard_stop() -> None:
                await anyio.sleep(grace)
                _exit_now("cleanup took too long")

            async def watch() -> None:
                nonlocal interrupted
                with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    async for _ in signals:
                        if interrupted:
                            _exit_now("second interrupt")
                        interrupted = True
                        print("\nstopping: no new requests; finishing writes "
                              "(press Ctrl-C again to exit at once)", file=sys.stderr, flush=True)
                        work.cancel()
                        tg.start_soon(hard_stop)

            tg.start_soon(watch)
            with work:
                result = await fn()
            tg.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        raise primary_error(group) from None
    if interrupted:
        raise KeyboardInterrupt
    return result  # type: ignore[return-value]


def _exit_now(why: str) -> None:
    print(f"\nexiting at once ({why}); every committed result is kept.", file=sys.stderr,
          flush=True)
    os._exit(EXIT_INTERRUPTED)
