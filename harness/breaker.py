"""A circuit breaker per endpoint: a dead endpoint stops the run in seconds, with its cause.

Retries make a run ride out a flaky server, but against a server that is down every
call spends all its attempts, one sample after another: thousands of attempts and
minutes before the run ends, with the cause buried in the details. The breaker watches
every attempt on one endpoint. It opens when the endpoint has failed ``failures`` times
in a row **and** for at least ``seconds`` without a single success; then every later
attempt raises :class:`~harness.errors.EndpointDownError` at once, which stops the run
(what is stored stays stored).

What counts: connection errors, timeouts, 5xx and malformed replies. A 429 does not (the
server is up and asking us to slow down: the retry policy and the pacer honour it), nor
does an empty or cut-short reply (the model's own answer, as far as the server knows).
Both thresholds must be met, so a burst of concurrent failures in a short outage, or a
20% fault rate, never trips it.

Some requests fail for reasons of their own (a prompt that crashes the server), and at
the end of a run they may be the only ones left, failing in a row. So before opening,
the breaker *probes*: it sends again the last request the endpoint answered. An answer
means the endpoint is up (the streak starts over, and the failing calls end as failed
samples as usual); a failure, or no answer ever received, opens it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Awaitable, Callable

from .errors import EndpointDownError

#: Failure kinds (``retry.classify``) that say the endpoint may be down.
DOWN_KINDS = frozenset({"connection", "timeout", "server_error", "bad_response"})


@dataclass(frozen=True)
class BreakerPolicy:
    """When a breaker opens: ``failures`` failed attempts in a row, spread over at least
    ``seconds`` with no success."""

    failures: int = 10
    seconds: float = 10.0


#: Sends again the last request the endpoint gave a usable reply to; ``True`` if it gives
#: one again, ``False`` if not, ``None`` if no request ever got one.
Probe = Callable[[], Awaitable["bool | None"]]


async def _no_probe() -> bool | None:
    return None


class CircuitBreaker:
    """The breaker of one endpoint, shared by every call to it."""

    def __init__(self, endpoint: str, policy: BreakerPolicy = BreakerPolicy(),
                 probe: Probe = _no_probe,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.endpoint = endpoint
        self.policy = policy
        self._probe = probe
        self._clock = clock
        self._streak = 0
        self._since: float | None = None
        self._cause = ""
        self._probing = False
        self.open = False

    def check(self) -> None:
        """Raise ``EndpointDownError`` if the breaker is open (before an attempt)."""
        if self.open:
            raise self._error()

    def success(self) -> None:
        """An attempt got a usable answer: the endpoint is up."""
        self._streak, self._since = 0, None

    async def failure(self, kind: str, cause: str) -> None:
        """An attempt failed with ``kind``; open the breaker if the endpoint looks down
        and the probe confirms it (one probe at a time; other failures only count)."""
        if kind not in DOWN_KINDS:
            self.success()  # a 429 or a cut reply: the server is up and answering
            return
        now = self._clock()
        if self._since is None:
            self._since = now
        self._streak += 1
        self._cause = cause
        if (self._probing or self.open or self._streak < self.policy.failures
                or now - self._since < self.policy.seconds):
            return
        self._probing = True
        try:
            up = await self._probe()
        finally:
            self._probing = False
        if up:
            self.success()
        else:
            self.open = True

    def _error(self) -> EndpointDownError:
        elapsed = self._clock() - (self._since or self._clock())
        return EndpointDownError(
            f"{self.endpoint} is down: {self._streak} attempts in a row failed over "
            f"{elapsed:.0f} s with no answer (last: {self._cause}); stopped sending. "
            "Everything received so far is stored: fix the endpoint and run the same "
            "command again to resume", endpoint=self.endpoint, cause=self._cause)
