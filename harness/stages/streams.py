"""Stream helpers every stage uses: sends and receives that skip a checkpoint when an
item can move at once, and draining what is already waiting (for batched queries).

Skipping anyio's checkpoint (a full trip round the event loop) matters at thousands of
samples a second with hundreds of workers; every caller of these awaits network I/O or
a full stream often enough to stay cancellable.
"""

from __future__ import annotations

from typing import TypeVar

import anyio
from anyio.lowlevel import checkpoint_if_cancelled
from anyio.streams.memory import MemoryObjectReceiveStream as ObjectReceiveStream
from anyio.streams.memory import MemoryObjectSendStream as ObjectSendStream

T = TypeVar("T")


async def send(stream: ObjectSendStream[T], item: T, *, shield: bool = False) -> None:
    """``stream.send(item)``, without a checkpoint when the stream has room.

    ``shield``: a cancellation does not withdraw the item, the send waits for room
    instead; for what was paid for (a reply, a verdict), sent to the store writer, which
    takes what is sent until every sender has stopped (``write_store``) and breaks the
    stream if it fails, so the wait always ends.

    A stream whose receiving stage has stopped raises ``BrokenResourceError``, but in a
    task being cancelled the cancellation instead: that stage stopped because of it, and
    a run that is cancelled must end as a cancellation, whatever its stages were doing.
    """
    try:
        try:
            stream.send_nowait(item)
        except anyio.WouldBlock:
            with anyio.CancelScope(shield=shield):
                await stream.send(item)
    except anyio.BrokenResourceError:
        # Without a checkpoint of its own, a task resumed in the loop turn that cancelled
        # the run can get here after the receiver has stopped.
        await checkpoint_if_cancelled()
        raise


async def receive(stream: ObjectReceiveStream[T]) -> T | None:
    """The next item (without a checkpoint when one is waiting); None at end of stream."""
    try:
        return stream.receive_nowait()
    except anyio.WouldBlock:
        pass
    except anyio.EndOfStream:
        return None
    try:
        return await stream.receive()
    except anyio.EndOfStream:
        return None


def drain(stream: ObjectReceiveStream[T], limit: int | None) -> list[T]:
    """Items already waiting in ``stream`` (at most ``limit``), without blocking."""
    items: list[T] = []
    while limit is None or len(items) < limit:
        try:
            items.append(stream.receive_nowait())
        except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
            break
    return items
