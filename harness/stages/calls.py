"""A request asked at most once per run, however many samples share it.

Two samples share a prediction key when they send the model the same request: one
dataset scored two ways (rules only, and a cascade), or a benchmark with repeated
questions; and then, in a cascade, the same judge prompt too. The read stage (and the
judge's lookup) looks each batch up in the store before the callers reach it, so a
second sample queued while the first was still queued or in flight finds nothing
stored and would be asked again: paid twice, and each sample scored by a reply of its
own while the store keeps one, so a rerun would score one of them from a reply it never
saw. ``Shared`` makes the callers share: the second waits for the first's call and
takes its result; once the first is done, it takes that result from memory until the
store writer has committed it (``Calls.committed``), and from the store after.

Which keys were asked is kept as bits (two per key, one MiB in all, whatever the run's
size), so a key may look asked when it was not; that costs one store lookup before its
call, never a wrong result.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Generic, TypeVar

import anyio

from ..outcomes import FINAL_VERDICTS
from ..records import Completion, StoreWrite, VerdictRecord
from ..store import Store

T = TypeVar("T")

#: Bits of a table of asked keys (one MiB).
_BITS = 1 << 23
_MASK = _BITS - 1

#: What a prediction's samples share: its text, finish reason and reasoning.
Reply = tuple[str | None, str | None, str | None]


class _Waiter(Generic[T]):
    """A sample waiting for the call another sample of the same key is making."""

    __slots__ = ("event", "result")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.result: T | None = None


class Shared(Generic[T]):
    """The calls of one kind (model or judge) by key, shared by every caller of the run;
    ``stored`` reads a key's result from the store."""

    def __init__(self, stored: Callable[[str], Awaitable[T | None]]) -> None:
        self._stored = stored
        self._asked = bytearray(_BITS // 8)
        #: Key → the samples waiting for its call in flight (``None``: none yet).
        self._in_flight: dict[str, list[_Waiter[T]] | None] = {}
        #: Key → its result, from the call's end until the store writer commits it.
        self._uncommitted: dict[str, T] = {}

    def claim(self, key: str) -> bool:
        """Whether ``key`` is asked for the first time this run (most keys): then the
        caller makes the call and calls :meth:`finish`; otherwise it calls :meth:`reuse`.
        Not a coroutine, so the common case costs no await."""
        h = hash(key)
        first, second = h & _MASK, (h >> 23) & _MASK
        asked = self._asked
        if (asked[first >> 3] >> (first & 7)) & (asked[second >> 3] >> (second & 7)) & 1:
            return False
        asked[first >> 3] |= 1 << (first & 7)
        asked[second >> 3] |= 1 << (second & 7)
        self._in_flight[key] = None
        return True

    async def reuse(self, key: str, accept: Callable[[T], bool] | None = None) -> T | None:
        """For a key :meth:`claim` found asked: the result that call got (waiting for it
        while in flight), or ``None``: the caller makes the call, then calls
        :meth:`finish`. A result ``accept`` refuses (an unparsed verdict for a judge
        allowed more re-asks) is ``None`` too."""
        result: T | None
        if key in self._in_flight:
            waiter: _Waiter[T] = _Waiter()
            waiters = self._in_flight[key]
            if waiters is None:
                waiters = self._in_flight[key] = []
            waiters.append(waiter)
            await waiter.event.wait()
            result = waiter.result
        elif (done := self._uncommitted.get(key)) is not None:
            result = done
        else:
            result = await self._stored(key)
        if result is not None and (accept is None or accept(result)):
            return result
        # The first call got nothing usable, or the bits matched a key never asked.
        if key in self._in_flight:  # another waiter of a failed call asks first
            return await self.reuse(key, accept)
        self._in_flight[key] = None
        return None

    def finish(self, key: str, result: T | None) -> None:
        """The call for ``key`` is over with ``result`` (``None``: nothing the others can
        use, such as a failure); its waiters take it."""
        if result is not None:
            self._uncommitted[key] = result
        for waiter in self._in_flight.pop(key, None) or ():
            waiter.result = result
            waiter.event.set()

    def committed(self, key: str, result: object = None) -> None:
        """``key``'s result (``result``, if given) is in the store now. A given one
        leaves a later call's result in memory: the store holds that one only once its
        own write is committed."""
        if result is None or self._uncommitted.get(key) is result:
            self._uncommitted.pop(key, None)


class Calls:
    """The run's shared model calls (``predictions``) and judge calls (``verdicts``)."""

    def __init__(self, store: Store) -> None:
        async def reply(key: str) -> Reply | None:
            hit = (await store.lookup_predictions([key])).get(key)
            return None if hit is None else (hit.text, hit.finish_reason, hit.reasoning)

        async def verdict(key: str) -> VerdictRecord | None:
            return (await store.lookup_verdicts([key])).get(key)

        self.predictions: Shared[Reply] = Shared(reply)
        self.verdicts: Shared[VerdictRecord] = Shared(verdict)

    def committed(self, batch: Iterable[StoreWrite]) -> None:
        """The store writer committed ``batch``: its results are read from the store now.
        A failure's row holds no result: a retry's reply kept in memory stays there."""
        for item in batch:
            if isinstance(item, Completion):
                if item.status == "ok":
                    self.predictions.committed(item.sample.key)
            elif isinstance(item, VerdictRecord) and item.status in FINAL_VERDICTS:
                self.verdicts.committed(item.key, item)
