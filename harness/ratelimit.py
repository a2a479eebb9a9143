"""Steady pacing under requests-per-minute and tokens-per-minute limits.

Virtual scheduling (GCRA) rather than a token bucket: a bucket lets a full minute's
budget out at once and then starves, which is exactly the burst that earns 429s. Here
every request gets a *slot*, the earliest time that keeps two clocks honest::

    slot = max(now, request clock, token clock, pause end, previous slot)
    request clock = slot + 60 / rpm                  # slots at least 60/rpm apart
    token clock   = slot + tokens * 60 / tpm         # a request's tokens space the next one

Only the first request after idle goes at once (a burst of one). Over any 60-second
window [t, t+60) at most ``rpm`` requests are granted, and at most ``tpm`` tokens plus
one request's worth when costs vary (the token cost is paid after the slot, so a single
request larger than ``tpm`` is allowed and pushes the following ones out).

Waiters are served first come, first served: the slot is *reserved* under a lock
before the caller sleeps, so concurrent callers get successive slots without polling.

Cancellation: a cancelled waiter's slot stays reserved, so it becomes idle time and can
never be filled by a later caller while callers reserved behind it still wait (which
would put two requests closer than the limit allows). The one exception is harmless:
when nothing at all has happened since its reservation (no later caller, no
``settle``/``pause``), the limiter is put back exactly as before the call.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio

__all__ = ["PACING_MARGIN", "RateLimitStats", "RateLimiter", "pacer"]

#: Fraction of an RPM/TPM limit actually used: exact pacing plus network jitter can put
#: one request too many into a provider's window and earn a 429 (measured in bench/).
PACING_MARGIN = 0.97


@dataclass
class RateLimitStats:
    """Counters of one limiter: requests granted, total seconds waited, 429 pauses."""

    requests: int = 0
    waited: float = 0.0
    pauses: int = 0


@dataclass(eq=False)
class _Reservation:
    """One waiter's slot, and the limiter state to restore if it is withdrawn."""

    slot: float
    version: int
    previous: tuple[float, float, float]


class RateLimiter:
    """Paces calls to stay under ``rpm`` requests and ``tpm`` tokens per minute.

    ``None`` limits are unlimited. ``clock`` and ``sleep`` are injectable so that tests
    run on virtual time; ``clock`` must be monotonic and use seconds.
    """

    def __init__(
        self,
        rpm: float | None = None,
        tpm: float | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = anyio.sleep,
    ) -> None:
        self.rpm = _positive_or_none("rpm", rpm)
        self.tpm = _positive_or_none("tpm", tpm)
        self.stats = RateLimitStats()
        self._clock = clock
        self._sleep = sleep
        self._request_interval = 60.0 / self.rpm if self.rpm else 0.0
        self._token_interval = 60.0 / self.tpm if self.tpm else 0.0
        self._next_request = -math.inf
        self._tokens_paid_at = -math.inf
        self._last_slot = -math.inf
        self._paused_until = -math.inf
        # Bumped by every change of state, so a withdrawn reservation knows whether
        # restoring the state from before it is still exact.
        self._version = 0
        self._pending: deque[_Reservation] = deque()
        self._lock = anyio.Lock()

    async def acquire(self, tokens: int = 0) -> float:
        """Wait for this request's slot and return it (in ``clock`` units).

        ``tokens`` is the request's estimated cost (prompt plus expected completion);
        correct it with ``settle`` once the reply reports real usage.
        """
        if tokens < 0:
            raise ValueError(f"tokens must be >= 0, got {tokens}")
        arrival = self._clock()
        async with self._lock:  # FIFO: anyio's lock wakes waiters in arrival order
            reservation = self._reserve(tokens)
        try:
            await self._wait_for(reservation)
        except BaseException:
            self._withdraw(reservation)
            raise
        self._pending.remove(reservation)
        self.stats.requests += 1
        self.stats.waited += max(0.0, self._clock() - arrival)
        return reservation.slot

    def settle(self, estimated: int, actual: int) -> None:
        """Correct the token account once a reply reports its real token usage.

        An over-estimate brings later slots forward, an under-estimate pushes them out.
        A refund never places a slot before one already reserved (slots stay in order).
        """
        if estimated < 0 or actual < 0:
            raise ValueError(f"token counts must be >= 0, got {estimated=} {actual=}")
        if not self._token_interval or actual == estimated:
            return
        self._tokens_paid_at += (actual - estimated) * self._token_interval
        self._version += 1

    def pause(self, seconds: float) -> None:
        """Grant no slot before ``now + seconds``: ``harness.retry.RetryPolicy`` calls it
        for every 429 (``RetryPolicy.rate_limit_pause``).

        Waiters already holding slots inside the pause are moved out together, keeping
        their spacing, so the end of a pause is not a burst.
        """
        if seconds < 0:
            raise ValueError(f"pause must be >= 0 seconds, got {seconds}")
        until = self._clock() + seconds
        self._paused_until = max(self._paused_until, until)
        self.stats.pauses += 1
        self._version += 1
        if self._pending and self._pending[0].slot < until:
            self._shift(until - self._pending[0].slot)

    def _reserve(self, tokens: int) -> _Reservation:
        """Take the next slot and move both clocks past it (no await: atomic)."""
        previous = (self._next_request, self._tokens_paid_at, self._last_slot)
        slot = max(self._clock(), self._next_request, self._tokens_paid_at,
                   self._paused_until, self._last_slot)
        self._next_request = slot + self._request_interval
        self._tokens_paid_at = slot + tokens * self._token_interval
        self._last_slot = slot
        self._version += 1
        reservation = _Reservation(slot, self._version, previous)
        self._pending.append(reservation)
        return reservation

    async def _wait_for(self, reservation: _Reservation) -> None:
        """Sleep until the slot; loop because ``pause`` may move it while we sleep."""
        while (delay := reservation.slot - self._clock()) > 0:
            await self._sleep(delay)

    def _withdraw(self, reservation: _Reservation) -> None:
        """Forget a cancelled waiter's slot; give it back only if that leaves no hole."""
        self._pending.remove(reservation)
        if reservation.version == self._version:
            self._next_request, self._tokens_paid_at, self._last_slot = reservation.previous
            self._version -= 1  # the state is the one before it; an earlier waiter may undo too

    def _shift(self, delta: float) -> None:
        """Move every pending slot and both clocks ``delta`` seconds later."""
        for reservation in self._pending:
            reservation.slot += delta
        self._next_request += delta
        self._tokens_paid_at += delta
        self._last_slot += delta


def _positive_or_none(name: str, value: float | None) -> float | None:
    """Validate a limit: ``None`` (unlimited) or a positive number."""
    if value is None:
        return None
    if not value > 0:
        raise ValueError(f"{name} must be a positive number or None, got {value!r}")
    return float(value)


def pacer(rpm: float | None, tpm: float | None) -> RateLimiter | None:
    """The limiter for an endpoint limited to ``rpm``/``tpm`` (paced at
    ``PACING_MARGIN`` of them), or ``None`` when neither limit is set."""
    if not rpm and not tpm:
        return None
    return RateLimiter(rpm and rpm * PACING_MARGIN, tpm and tpm * PACING_MARGIN)
