"""The one retry policy for every model and judge call.

Transient failures retry with exponential backoff and full jitter: 5xx, per-attempt
timeouts, dropped connections and malformed responses bounded in attempts, 429 bounded
in time (waiting at least its ``Retry-After``: a 429 says "later", not "no", so a storm
is ridden out however many attempts that takes). Client errors (400/401/403/404/422)
never retry: the same request would fail the same way. 401/403/404 mean every later call
fails too, so they become ``PermanentModelError`` and stop the run with one message; a
429 saying the quota is used up (``insufficient_quota``) is not retried either, and
opens the endpoint's circuit breaker.
"""

from __future__ import annotations

import datetime
import email.utils
import math
import random
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from .defaults import MAX_ATTEMPTS, RATE_LIMIT_TIMEOUT
from .errors import (
    DecodingError,
    EndpointDownError,
    HTTPStatusError,
    ModelCallError,
    NetworkError,
    PermanentModelError,
    TransportError,
    TransportTimeout,
)

if TYPE_CHECKING:
    from tenacity import AsyncRetrying, RetryCallState

    from .breaker import CircuitBreaker
    from .ratelimit import RateLimiter

T = TypeVar("T")

#: Longest wait honoured from a ``Retry-After`` header, so a server cannot park us forever.
MAX_RETRY_AFTER = 120.0


class BadResponse(Exception):
    """The server answered 200 with something that is not a usable completion.

    ``kind`` names the failure in the call statistics; subclasses name their own.
    """

    kind = "bad_response"


@dataclass
class CallStats:
    """Counters shared by all calls of one client: requests, retries, 429s, ``failures``
    (calls that failed for good, after their retries), failed attempts ``by_kind``."""

    requests: int = 0
    retries: int = 0
    rate_limited: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)

    def count(self, kind: str) -> None:
        """Count one failed attempt of class ``kind``."""
        self.by_kind[kind] = self.by_kind.get(kind, 0) + 1
        if kind == "rate_limit":
            self.rate_limited += 1


@dataclass(frozen=True)
class Classified:
    """What a failed attempt was, and whether to try again."""

    kind: str
    retryable: bool
    status: int | None = None
    retry_after: float | None = None


def classify(exc: BaseException) -> Classified:
    """Classify an exception raised by one attempt: a transport's ``TransportError`` or
    the client's ``BadResponse``; anything else is a bug, not retried."""
    if isinstance(exc, HTTPStatusError):
        return _by_status(exc.status, exc.headers, exc.code)
    if isinstance(exc, TransportTimeout):
        return Classified("timeout", True)
    if isinstance(exc, NetworkError):
        return Classified("connection", True)
    if isinstance(exc, DecodingError):
        return Classified("bad_response", True)
    if isinstance(exc, BadResponse):
        return Classified(exc.kind, True)
    return Classified("unexpected", False)


#: Masks the secrets in a raw error text (``ModelClient.redact``): a server may echo the
#: request, key included.
Redact = Callable[[str], str]


def _as_is(text: str) -> str:
    return text


def failure_cause(exc: BaseException, redact: Redact = _as_is) -> str:
    """What went wrong in one attempt, in a few words that are the same for every attempt
    that failed the same way (``'connection refused'``, ``'HTTP 500: <first line>'``).

    Tokens that differ from one request to the next (request ids, UUIDs, hashes, long
    numbers such as timestamps) read ``…``, so failures group by cause. ``redact`` masks
    the secrets of the raw text first: a secret cut short or with its digits rewritten
    would no longer be found whole, and part of it would show.
    """
    if isinstance(exc, TransportError) and exc.cause is not None:
        return redact(exc.cause)
    return _first_line(_text(exc, redact))


def _text(exc: BaseException, redact: Redact) -> str:
    """The whole text of ``exc``, its secrets masked: what any shorter text is cut from."""
    return redact(str(exc) or type(exc).__name__)


#: A run of hex digits (with dashes: UUIDs, dates) standing on its own, holding a digit.
_VOLATILE = re.compile(r"(?<![0-9A-Za-z])(?=[0-9A-Fa-f-]*[0-9])[0-9A-Fa-f]+(?:-[0-9A-Fa-f]+)*"
                       r"(?![0-9A-Za-z])")


def _stable(text: str) -> str:
    """``text`` with request ids, UUIDs, hashes and numbers of 6 digits or more as ``…``
    (``HTTP 500`` and port numbers stay)."""
    return _VOLATILE.sub(lambda m: "…" if len(m.group()) >= 6 else m.group(), text)


def _first_line(text: str, limit: int = 120) -> str:
    text = _stable(text.strip())
    line = text.splitlines()[0] if text else text
    return line if len(line) <= limit else line[:limit] + "…"


def _by_status(status: int, headers: Any, code: Any = None) -> Classified:
    if status == 429:
        if code == "insufficient_quota":  # OpenAI's: no wait clears it
            return Classified("quota", False, status)
        return Classified("rate_limit", True, status, _retry_after(headers))
    if status >= 500:
        return Classified("server_error", True, status, _retry_after(headers))
    if status in (401, 403):
        return Classified("auth", False, status)
    if status == 404:
        return Classified("not_found", False, status)
    if status == 408:
        return Classified("timeout", True, status)
    return Classified("bad_request", False, status)


def _retry_after(headers: Any) -> float | None:
    """The wait a reply's ``Retry-After`` (seconds or an HTTP date) or
    ``retry-after-ms`` asks for, at most ``MAX_RETRY_AFTER``; None without one."""
    value = headers.get("retry-after") if headers is not None else None
    if value is None:
        ms = headers.get("retry-after-ms") if headers is not None else None
        seconds = float(ms) / 1000 if ms and ms.replace(".", "", 1).isdigit() else None
    else:
        try:
            seconds = float(value)
        except ValueError:
            seconds = _seconds_until(value)
    if seconds is None or math.isnan(seconds):
        return None
    # Capped here, once, for the call's own wait and for the endpoint's pacing alike: an
    # hour (or "inf") would otherwise hold every caller of the endpoint for that long.
    return min(MAX_RETRY_AFTER, max(0.0, seconds))


def _seconds_until(date: str) -> float | None:
    """Seconds from now until an HTTP date (``Wed, 21 Oct 2015 07:28:00 GMT``)."""
    try:
        when = email.utils.parsedate_to_datetime(date)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # an HTTP date is GMT, whether it says so or not
        when = when.replace(tzinfo=datetime.UTC)
    return (when - datetime.datetime.now(datetime.UTC)).total_seconds()


#: Attempts a call gets for failures of these kinds, fewer than ``max_attempts``: a reply
#: cut short for length before ``max_tokens`` is asked once more (a second cut is the
#: server's real answer, such as a full context, which more attempts would only repeat).
KIND_ATTEMPTS = {"truncated": 2}


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff with full jitter; ``Retry-After`` is a floor.

    A call gets ``max_attempts`` attempts that fail other than by a 429, but at most
    ``KIND_ATTEMPTS[kind]`` of them fail with a failure of ``kind``. 429s are retried
    while the call is younger than ``rate_limit_timeout`` seconds, however many attempts
    that takes: a rate limit is waited out, not counted.
    """

    max_attempts: int = MAX_ATTEMPTS
    initial: float = 0.5
    maximum: float = 30.0
    rate_limit_timeout: float = RATE_LIMIT_TIMEOUT

    def delay(self, exc: BaseException | None, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        info = classify(exc) if exc is not None else None
        if info and info.retry_after is not None:
            return info.retry_after + random.uniform(0, self.initial)
        # The exponent is capped: 429s are retried for a time, which can be many attempts.
        return random.uniform(0, min(self.maximum, self.initial * 2 ** min(attempt - 1, 32)))

    def rate_limit_pause(self, info: Classified) -> float:
        """Seconds a 429 pauses its endpoint's pacing: its ``Retry-After``, or twice the
        first backoff when it gives none."""
        return info.retry_after if info.retry_after is not None else self.initial * 2

    async def call(self, attempt: Callable[[], Awaitable[T]], stats: CallStats,
                   describe: str, breaker: CircuitBreaker | None = None,
                   request: object = None, pacer: RateLimiter | None = None,
                   redact: Redact = _as_is) -> tuple[T, int]:
        """Run ``attempt`` under the policy; return ``(result, attempts_made)``.

        ``breaker``, the endpoint's circuit breaker, hears of every attempt (at
        ``request``, the body sent) and stops them all with ``EndpointDownError`` once
        the endpoint looks down. ``pacer``, the endpoint's rate limiter, is paused by
        every 429 (``rate_limit_pause``), so all its callers slow down, not this one only.

        A failure for good raises ``ModelCallError`` (or ``PermanentModelError`` for
        auth/not-found errors) with the attempt count, translated from the transport error.
        ``redact`` masks the caller's secrets (an API key, the secrets of its URL) in
        every error text, whole, before it is shortened or rewritten: in that error's
        message and ``cause`` and in the causes the breaker keeps. The error is raised
        from the transport's, whose raw text the caller drops.
        """
        started = time.monotonic()
        # Most calls succeed at once: their one attempt runs here, and only a failed one
        # (or an open breaker, whose error ``_retry`` raises) pays for the retry state.
        if breaker is None or not breaker.open:
            stats.requests += 1
            try:
                result = await attempt()
            except Exception as exc:
                return await self._retry(attempt, stats, describe, breaker, request, pacer,
                                         redact, started, exc)
            if breaker is not None:
                breaker.success()
            return result, 1
        return await self._retry(attempt, stats, describe, breaker, request, pacer, redact,
                                 started, None)

    async def _retry(self, attempt: Callable[[], Awaitable[T]], stats: CallStats,
                     describe: str, breaker: CircuitBreaker | None, request: object,
                     pacer: RateLimiter | None, redact: Redact, started: float,
                     first: Exception | None) -> tuple[T, int]:
        """``call`` once its first attempt failed with ``first`` (``None``: none was made,
        the breaker being open): the failure counted, then retried or raised for good."""
        tries = 0 if first is None else 1
        failed: dict[str, int] = {}  # failures of this call, by kind

        async def failure(exc: Exception) -> None:
            info = classify(exc)
            kind = info.kind
            if pacer is not None and kind == "rate_limit":
                pacer.pause(self.rate_limit_pause(info))
            stats.count(kind)
            failed[kind] = failed.get(kind, 0) + 1
            if breaker is not None:
                await breaker.failure(kind, failure_cause(exc, redact), request)
                breaker.check()  # opened by this failure: the run stops, whatever it was

        async def counted() -> T:
            nonlocal tries
            if breaker is not None:
                breaker.check()  # an endpoint found down gets no more attempts
            tries += 1
            stats.requests += 1
            try:
                result = await attempt()
            except Exception as exc:
                await failure(exc)
                raise
            if breaker is not None:
                breaker.success()
            return result

        def retryable(exc: BaseException) -> bool:
            info = classify(exc)
            if not info.retryable:
                return False
            if info.kind == "rate_limit":
                # A wait the server asks for beyond the call's time left is not waited:
                # the call gives up now (pending; the next run asks again).
                return (time.monotonic() - started + (info.retry_after or 0.0)
                        < self.rate_limit_timeout)
            return (tries - failed.get("rate_limit", 0) < self.max_attempts
                    and failed.get(info.kind, 0) < KIND_ATTEMPTS.get(info.kind,
                                                                    self.max_attempts))

        try:
            try:
                if first is None:
                    return await counted(), tries
                await failure(first)
                raise first
            except Exception as exc:
                if not retryable(exc):
                    raise
                stats.retries += 1
                await anyio.sleep(self.delay(exc, 1))
            return await self._retrying(stats, retryable)(counted), tries
        except Exception as exc:
            stats.failures += 1
            info = classify(exc)
            message = f"{describe}: {info.kind}" + (f" (HTTP {info.status})" if info.status else "")
            if isinstance(exc, EndpointDownError):
                raise  # the run stops: nothing to add per call
            message += f" after {tries} attempt{'s' * (tries != 1)}: {_short(exc, redact)}"
            cls = PermanentModelError if info.kind in ("auth", "not_found") else ModelCallError
            raise cls(message, kind=info.kind, status=info.status, attempts=tries,
                      cause=failure_cause(exc, redact)) from exc

    def _retrying(self, stats: CallStats,
                  retryable: Callable[[BaseException], bool]) -> AsyncRetrying:
        """The tenacity loop for attempts 2.. (attempt 1 already failed); ``retryable``
        decides when it stops."""
        # Imported here: only a call that failed once gets this far.
        from tenacity import AsyncRetrying, retry_if_exception

        def before_sleep(state: RetryCallState) -> None:
            stats.retries += 1

        def wait(state: RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            return self.delay(exc, state.attempt_number + 1)

        return AsyncRetrying(
            wait=wait,
            retry=retry_if_exception(retryable),
            sleep=anyio.sleep,
            before_sleep=before_sleep,
            reraise=True,
        )


def _short(exc: BaseException, redact: Redact, limit: int = 300) -> str:
    text = _text(exc, redact)
    return text if len(text) <= limit else text[:limit] + "…"
