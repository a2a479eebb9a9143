"""A prediction key asked at most once per run, however many samples share it.

Two samples share a prediction key when they send the same model the same request:
one dataset scored two ways (rules only, and a cascade), or a benchmark with repeated
questions. The read stage looks each batch up in the store before the model callers
reach it, so a second sample queued while the first was still queued or in flight finds
nothing stored and would be asked again: paid twice, and the second reply would replace
the first in the store, so a rerun would score the first dataset from a reply it never
saw. ``Calls`` makes the callers share: the second waits for the first's call and takes
its reply; once the first is done, it takes that reply from memory until the store
writer has committed it (``committed``), and from the store after.

Which keys were asked is kept as bits (two per key, one MiB in all, whatever the run's
size), so a key may look asked when it was not; that costs one store lookup before its
call, never a wrong reply.
"""

from __future__ import annotations

from collections.abc import Iterable

import anyio

from ..records import Completion, Sample, StoreWrite
from ..store import Store

#: Bits of the table of asked keys (one MiB).
_BITS = 1 << 23
_MASK = _BITS - 1


class _Waiter:
    """A sample waiting for the call another sample of the same key is making."""

    __slots__ = ("event", "completion")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.completion: Completion | None = None


class Calls:
    """The model calls of one run by prediction key (see the module docstring), shared by
    every model caller of the run."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._asked = bytearray(_BITS // 8)
        #: Key → the samples waiting for its call in flight (``None``: none yet).
        self._in_flight: dict[str, list[_Waiter] | None] = {}
        #: Key → its reply, from the call's end until the store writer commits it.
        self._uncommitted: dict[str, Completion] = {}

    async def reuse(self, sample: Sample) -> Completion | None:
        """``sample``'s completion from a call this run already made for its key (waiting
        for it while in flight), or ``None``: the caller asks the model, then calls
        :meth:`finish`."""
        key = sample.key
        h = hash(key)
        first, second = h & _MASK, (h >> 23) & _MASK
        asked = self._asked
        if not (asked[first >> 3] >> (first & 7)) & (asked[second >> 3] >> (second & 7)) & 1:
            asked[first >> 3] |= 1 << (first & 7)
            asked[second >> 3] |= 1 << (second & 7)
            self._in_flight[key] = None
            return None
        if key in self._in_flight:
            waiter = _Waiter()
            waiters = self._in_flight[key]
            if waiters is None:
                waiters = self._in_flight[key] = []
            waiters.append(waiter)
            await waiter.event.wait()
            done = waiter.completion
            if done is not None and done.status == "ok":
                return Completion(sample, "ok", done.text, done.finish_reason, None, 0, 0, 0,
                                  True, done.reasoning)
        elif (done := self._uncommitted.get(key)) is not None:
            return Completion(sample, "ok", done.text, done.finish_reason, None, 0, 0, 0, True,
                              done.reasoning)
        else:
            hit = (await self._store.lookup_predictions([key])).get(key)
            if hit is not None:
                return Completion(sample, "ok", hit[0], hit[1], None, hit[2], hit[3], 0, True,
                                  hit[4])
        # The first call failed, or the bits matched a key never asked: ask.
        if key in self._in_flight:  # another waiter of a failed call asks first
            return await self.reuse(sample)
        self._in_flight[key] = None
        return None

    def finish(self, key: str, completion: Completion | None) -> None:
        """The call for ``key`` is over (``None``: it raised); its waiters take it."""
        if completion is not None and completion.status == "ok":
            self._uncommitted[key] = completion
        for waiter in self._in_flight.pop(key, None) or ():
            waiter.completion = completion
            waiter.event.set()

    def committed(self, batch: Iterable[StoreWrite]) -> None:
        """The store writer committed ``batch``: its replies are read from the store now."""
        if self._uncommitted:
            for item in batch:
                if isinstance(item, Completion):
                    self._uncommitted.pop(item.sample.key, None)
