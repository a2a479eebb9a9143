"""Stream helpers every stage uses: sends and receives that skip a checkpoint when an
item can move at once, and draining what is already waiting (for batched queries).

Skipping anyio's checkpoint (a full trip round the event loop) matters at thousands of
samples a second with hundreds of workers; every caller of these awaits network I/O or
a full stream often enough to stay cancellable.
"""

from __future__ import annotations

from typing import TypeVar

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream as ObjectReceiveStream
from anyio.streams.memory import MemoryObjectSendStream as ObjectSendStream

T = TypeVar("T")


async def send(stream: ObjectSendStream[T], item: T) -> None:
    """``stream.send(item)``, without a checkpoint when the stream has room."""
    try:
        stream.send_nowait(item)
    except anyio.WouldBlock:
        await stream.send(item)


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
