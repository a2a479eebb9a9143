"""A circuit breaker per endpoint: a dead endpoint stops the run in seconds, with its cause.

Retries make a run ride out a flaky server, but against a server that is down every
call spends all its attempts, one sample after another: thousands of attempts and
minutes before the run ends, with the cause buried in the details. The breaker watches
every attempt on one endpoint. It opens when the endpoint has failed ``failures`` times
in a row **and** for at least ``seconds`` without a single usable reply; then every later
attempt raises :class:`~harness.errors.EndpointDownError` at once, which stops the run
(what is stored stays stored).

What counts: connection errors, timeouts, 5xx and replies harness cannot score (a 200
with no choices, no content, or an error object). A usable reply resets the count (an
empty or cut-short one too: it is the model's own answer, as far as the server knows).
Both thresholds must be met, so a burst of concurrent failures in a short outage, or a
20% fault rate, never trips it.

A 429 is neither: the server is up and asks us to slow down (the retry policy and the
pacer honour it), so it neither counts nor resets the count. An endpoint that has
answered nothing but 429s for ``rate_limited_seconds`` (minutes: longer than any storm
a run should ride out) opens it too, and a 429 saying the account's quota is used up
(``insufficient_quota``) opens it at once: no wait will clear it.

Some requests fail for reasons of their own (a prompt that crashes the server), and at
the end of a run they may be the only ones left, failing in a row. So before opening,
the breaker *probes*: it sends again the last request that got a usable reply. A usable
reply means the endpoint is up (the count starts over, and the failing calls end as
failed samples as usual); a failure opens it. With no such request yet (the first
prompts of a run fail), the failures must span ``requests`` distinct requests: until
then the few failing prompts end as failed samples and the run moves on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from .errors import EndpointDownError

#: Failure kinds (``retry.classify``) that say the endpoint may be down.
DOWN_KINDS = frozenset({"connection", "timeout", "server_error", "bad_response"})

#: Failure kinds that say the endpoint is up but will not serve us now.
RATE_LIMITED_KINDS = frozenset({"rate_limit", "quota"})


@dataclass(frozen=True)
class BreakerPolicy:
    """When a breaker opens: ``failures`` failed attempts in a row, spread over at least
    ``seconds`` with no usable reply (and, while no request ever got one, over at least
    ``requests`` distinct requests); or ``rate_limited_seconds`` of nothing but 429s."""

    failures: int = 10
    seconds: float = 10.0
    requests: int = 5
    rate_limited_seconds: float = 180.0


#: Sends again the last request the endpoint gave a usable reply to; ``True`` if it gives
#: one again, ``False`` if not, ``None`` if no request ever got one.
Probe = Callable[[], Awaitable["bool | None"]]


async def _no_probe() -> bool | None:
    return None


class CircuitBreaker:
    """The breaker of one endpoint, shared by every call to it.

    ``slow_hint`` is the advice given when every failure was a timeout (the endpoint may
    be overloaded rather than down), e.g. ``'try a longer --timeout or a lower -c'``.
    """

    def __init__(self, endpoint: str, policy: BreakerPolicy = BreakerPolicy(),
                 probe: Probe = _no_probe, clock: Callable[[], float] = time.monotonic,
                 slow_hint: str = "") -> None:
        self.endpoint = endpoint
        self.policy = policy
        self._probe = probe
        self._clock = clock
        self._slow_hint = slow_hint
        self._streak = 0
        self._timeouts = 0  # of the streak: all of them may mean overloaded, not down
        self._since: float | None = None  # the first failure since the last usable reply
        self._requests: set[str] = set()  # distinct requests of the streak (a few)
        self._cause = ""
        self._probing = False
        self._message = ""
        self.open = False

    def check(self) -> None:
        """Raise ``EndpointDownError`` if the breaker is open (before an attempt)."""
        if self.open:
            raise self.error()

    def success(self) -> None:
        """An attempt got a usable reply: the endpoint is up."""
        if self._since is not None:  # else nothing failed since the last usable reply
            self._streak, self._timeouts, self._since = 0, 0, None
            self._requests.clear()

    async def failure(self, kind: str, cause: str, request: object = None) -> None:
        """An attempt at ``request`` (a JSON-able body, for telling requests apart) failed
        with ``kind``; open the breaker if the endpoint looks down and the probe confirms
        it (one probe at a time; other failures only count)."""
        if kind not in DOWN_KINDS and kind not in RATE_LIMITED_KINDS:
            self.success()  # an empty or cut reply, a 400: the server is up and answering
            return
        now = self._clock()
        if self._since is None:
            self._since = now
        elapsed = now - self._since
        if kind == "quota":
            self._cause = cause
            self._open(f"refuses every request: {cause} (the account's quota is used up)",
                       advice="add credit to the account or use another API key")
            return
        if kind == "rate_limit":
            if elapsed < self.policy.rate_limited_seconds or self._probing or self.open:
                return
            # A probe that is rate limited too confirms it; with nothing to probe, minutes
            # of 429s are reason enough.
            if await self._probed():
                self.success()
            else:
                self._cause = cause
                self._open(f"answered nothing but 429 (rate limited) for {elapsed:.0f} s "
                           f"(last: {cause})", advice="its quota may be used up, or its "
                           "rate limit too low for this run: check the account, or pace "
                           "the calls (rpm, tpm, concurrency)")
            return
        self._streak += 1
        self._timeouts += cause == "timed out"
        self._cause = cause
        if request is not None and len(self._requests) < self.policy.requests:
            self._requests.add(json.dumps(request, sort_keys=True, default=str))
        if (self._probing or self.open or self._streak < self.policy.failures
                or elapsed < self.policy.seconds):
            return
        up = await self._probed()
        if up is None and len(self._requests) < self.policy.requests:
            return  # only a few prompts fail, and none was ever answered: they may be bad
        if up:
            self.success()
            return
        if self._timeouts == self._streak and self._slow_hint:
            self._open(self._down(elapsed), advice="every attempt timed out, so it may be "
                       f"overloaded rather than down: {self._slow_hint}")
        else:
            self._open(self._down(elapsed))

    def error(self) -> EndpointDownError:
        """The error the breaker gives for the failures so far, open or not (a caller
        that cannot go on without this endpoint, such as model-name discovery)."""
        if self.open:
            return EndpointDownError(self._message, endpoint=self.endpoint, cause=self._cause)
        elapsed = self._clock() - (self._since or self._clock())
        return EndpointDownError(self._text(self._down(elapsed)), endpoint=self.endpoint,
                                 cause=self._cause)

    def _down(self, elapsed: float) -> str:
        return (f"is down: {self._streak} attempt{'s' * (self._streak != 1)} in a row "
                f"failed over {elapsed:.0f} s with no answer (last: {self._cause})")

    async def _probed(self) -> bool | None:
        self._probing = True
        try:
            return await self._probe()
        finally:
            self._probing = False

    def _open(self, what: str, advice: str = "fix the endpoint") -> None:
        self.open = True
        self._message = self._text(what, advice)

    def _text(self, what: str, advice: str = "fix the endpoint") -> str:
        return (f"{self.endpoint} {what}; stopped sending. Everything received so far is "
                f"stored: {advice}, then run the same command again to resume")
