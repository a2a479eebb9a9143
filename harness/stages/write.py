"""The store writer: one task owns the store's writes, committing fresh predictions and
verdicts in batches (what is already queued, up to ``batch_size``, per transaction)."""

from __future__ import annotations

from collections.abc import Callable

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream as ObjectReceiveStream

from ..records import StoreWrite
from ..store import Store
from .streams import drain


async def write_store(receive: ObjectReceiveStream[StoreWrite], store: Store,
                      batch_size: int,
                      committed: Callable[[list[StoreWrite]], None] | None = None) -> None:
    """Commit everything received, to the end of the stream even when the run is
    cancelled. ``committed`` is told of each batch once it is in the store."""
    async with receive:
        try:
            await _commit_all(receive, store, batch_size, committed)
        except anyio.get_cancelled_exc_class():
            # What is queued, and what the stages still send as they stop (a reply that
            # arrived with the cancellation, sent shielded), was paid for too; every
            # sender is being cancelled, so the stream ends once they have stopped.
            with anyio.CancelScope(shield=True):
                await _commit_all(receive, store, batch_size, committed)
            raise


async def _commit_all(receive: ObjectReceiveStream[StoreWrite], store: Store,
                      batch_size: int,
                      committed: Callable[[list[StoreWrite]], None] | None) -> None:
    """Commit what ``receive`` brings until it ends, a batch per transaction."""
    async for first in receive:
        batch = [first, *drain(receive, batch_size - 1)]
        # A received reply is a paid-for request: finish committing it even if the run
        # is being cancelled.
        with anyio.CancelScope(shield=True):
            await store.write_completions(batch)
        if committed is not None:
            committed(batch)
