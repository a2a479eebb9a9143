"""Model calls: a transport (``harness.transport``), one retry policy, a hard deadline
per attempt.

``harness.retry`` alone decides every retry and every 429 pause (the SDK's own retries
are off when the ``openai`` transport is used). Each attempt has a hard deadline in its
transport, so a stalled socket can never hang a run. Replies are read as plain JSON and
every generation parameter goes into the body as given, so server-specific fields
(``grammar``, ``guided_choice``, ``top_k``) need no special handling.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from .breaker import BreakerPolicy, CircuitBreaker
from .defaults import CONCURRENCY
from .errors import EndpointDownError, ModelCallError
from .frozen import record
from .json_encode import unicode_text
from .prompt import as_text
from .records import ModelSpec
from .retry import BadResponse, CallStats, RetryPolicy
from .transport import Transport, make_transport
from .urls import redact_text, redact_url

Logprobs = tuple[tuple[str, float, tuple[tuple[str, float], ...]], ...]
_T = TypeVar("_T")

#: What to try when every call to an endpoint timed out (it may be overloaded), by role.
SLOW_HINTS = {
    "model": "try a longer --timeout (or the model's timeout) or a lower -c",
    "judge": "try a longer timeout or a lower concurrency in judge_cfg",
}


@record
class CallResult:
    """A usable reply: text, finish reason, token usage, optional logprobs and reasoning.

    ``reasoning`` is what a server sent apart from the answer (``reasoning_content``):
    kept and shown, never scored. A ``text`` that is empty after the retries is the
    model's real output, scored as an extraction failure (``empty_reply``).
    """

    text: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    attempts: int
    logprobs: Logprobs | None = None
    reasoning: str | None = None


class ModelClient:
    """One endpoint's client; share it between all concurrent calls to that endpoint.

    ``role`` (``model`` or ``judge``) names the endpoint in error messages; ``breaker``
    sets when its circuit breaker stops the calls (``harness.breaker``). ``transport``
    sends the requests (a ``harness.testing.MockTransport`` in tests); by default the one
    ``spec.transport`` names. The client owns it: ``aclose`` closes it.
    """

    def __init__(self, spec: ModelSpec, *, concurrency: int = CONCURRENCY,
                 policy: RetryPolicy | None = None,
                 limit_slots: bool = True, counts: Any = None,
                 breaker: BreakerPolicy = BreakerPolicy(), role: str = "model",
                 transport: Transport | None = None) -> None:
        import anyio

        from .ratelimit import pacer

        self.spec = spec
        self.stats = CallStats()
        # Held per attempt (not across retry sleeps): an endpoint with fewer slots than
        # there are callers, such as the embedded model, gets no more requests than it
        # can serve at once. Callers that never outnumber the slots skip it (it costs).
        self._slots = anyio.CapacityLimiter(concurrency) if limit_slots else None
        # With ``rpm``/``tpm`` set, every attempt takes a paced slot of this
        # ``harness.ratelimit.RateLimiter``; the retry policy pauses it on a 429.
        self.limiter = pacer(spec.rpm, spec.tpm)
        self.policy = policy or RetryPolicy(max_attempts=spec.max_attempts,
                                            rate_limit_timeout=spec.rate_limit_timeout)
        # Optional progress counters (``in_flight``): requests actually on the wire,
        # not callers waiting for a slot or a retry.
        self._counts = counts
        # Connections open on the first request, so a rerun served from the store
        # never even creates a session.
        self._transport = transport if transport is not None \
            else make_transport(spec, concurrency)
        # Names the endpoint in error messages (redacted like everything else there);
        # a model still to be discovered has no name yet.
        url = redact_url(spec.base_url)
        self._description = (f"{role} {spec.model!r} at {url}" if spec.model
                             else f"{role} endpoint {url}")
        # Stops every call once the endpoint looks down (see ``harness.breaker``); its
        # probe sends again the last request that got a usable reply.
        self.breaker = CircuitBreaker(self._description, breaker, self._probe,
                                      slow_hint=SLOW_HINTS.get(role, ""))
        self._last_answered: tuple[dict[str, Any], str, int | None] | None = None

    async def aclose(self) -> None:
        """Close the transport (and its HTTP session, if one was opened)."""
        await self._transport.aclose()

    async def complete(self, messages: Sequence[Mapping[str, str]],
                       gen_params: Mapping[str, Any], api: str = "chat") -> CallResult:
        """One completion, retried by the policy; raises ``ModelCallError`` for good.

        ``api='chat'`` posts the messages to ``/chat/completions``; ``'completions'``
        posts ``as_text(messages)`` as the prompt to ``/completions``.
        """
        if api == "completions":
            path = "/completions"
            body = {"model": self.spec.model, "prompt": as_text(messages), **gen_params}
        else:
            path = "/chat/completions"
            body = {"model": self.spec.model, "messages": list(messages), **gen_params}
        max_tokens = gen_params.get("max_tokens") or gen_params.get("max_completion_tokens")
        estimate = 0
        if self.limiter is not None:  # a token budget to pace by
            estimate = (sum(len(m.get("content") or "") for m in messages) // 4
                        + int(max_tokens or 0))

        async def send() -> CallResult:
            if self.limiter is not None:
                await self.limiter.acquire(estimate)
            if self._counts is not None:
                self._counts.in_flight += 1
            try:
                data = await self._transport.post(path, body)
            finally:
                if self._counts is not None:
                    self._counts.in_flight -= 1
            result = self._answered(data, (body, path, max_tokens))
            if self.limiter is not None:
                actual = result.prompt_tokens + result.completion_tokens
                if actual:
                    self.limiter.settle(estimate, actual)
            return result

        try:
            result, tries = await self.policy.call(self._in_slot(send),
                                                   self.stats, self._description, self.breaker,
                                                   body, self.limiter, self.redact)
        except ModelCallError as exc:
            # Still cut short or empty after the retries: that is the model's real
            # answer (a context-length stop, nothing to say), so keep it rather than
            # lose the sample.
            if not isinstance(exc.__cause__, UsableReply):
                raise self.redacted(exc) from None
            result, tries = exc.__cause__.result, exc.attempts
            self.stats.failures -= 1  # counted by the policy, but the call got its answer
        self.stats.prompt_tokens += result.prompt_tokens
        self.stats.completion_tokens += result.completion_tokens
        # A reply is read as the answer to one attempt: most calls made just one.
        return result if result.attempts == tries else replace(result, attempts=tries)

    async def post_json(self, body: Mapping[str, Any], path: str,
                        read: Callable[[Any], Any] = lambda data: data) -> tuple[Any, int]:
        """POST ``body`` to ``path`` under the same slots, pacing and retry policy as
        ``complete``; ``(read(reply JSON), attempts)``. For replies ``complete`` does not
        read (likelihoods: ``harness.ppl``): ``read`` raises ``BadResponse`` for a reply
        worth asking again. Raises ``ModelCallError`` for good."""

        async def send() -> Any:
            if self.limiter is not None:
                await self.limiter.acquire(0)
            if self._counts is not None:
                self._counts.in_flight += 1
            try:
                return read(await self._transport.post(path, body))
            finally:
                if self._counts is not None:
                    self._counts.in_flight -= 1

        try:
            return await self.policy.call(self._in_slot(send), self.stats,
                                          self._description, self.breaker, body,
                                          redact=self.redact)
        except ModelCallError as exc:
            raise self.redacted(exc) from None

    async def list_models(self) -> list[str]:
        """The model names the endpoint serves (``GET /models``), under the same policy."""
        try:
            data, _ = await self.policy.call(lambda: self._transport.get("/models"),
                                             self.stats, self._description, self.breaker,
                                             "GET /models", redact=self.redact)
        except ModelCallError as exc:
            raise self.redacted(exc) from None
        items = data.get("data") if isinstance(data, dict) else None
        return [str(m["id"]) for m in items or [] if isinstance(m, dict) and "id" in m]

    def _in_slot(self, send: Callable[[], Awaitable[_T]]) -> Callable[[], Awaitable[_T]]:
        """``send``, holding one of the endpoint's slots per attempt when slots are limited."""
        slots = self._slots
        if slots is None:
            return send

        async def attempt() -> _T:
            async with slots:
                return await send()

        return attempt

    def _answered(self, data: Any, request: tuple[dict[str, Any], str, int | None]) -> CallResult:
        """``data`` read as a completion (``BadResponse`` if harness cannot score it).

        Only a reply harness can score (an empty or cut-short one included: it is kept
        as the model's answer) counts as answered: ``request`` becomes the one the
        breaker's probe sends again. A 200 with no choices or no content is no answer.
        """
        try:
            result = _read(data, request[2])
        except UsableReply:
            self._last_answered = request
            raise
        self._last_answered = request
        return result

    async def _probe(self) -> bool | None:
        """For the circuit breaker: whether the endpoint gives a usable reply to the last
        request it gave one to; ``None`` if it never gave one."""
        if self._last_answered is None:
            return None
        body, path, max_tokens = self._last_answered
        self.stats.requests += 1
        try:
            _read(await self._transport.post(path, body), max_tokens)
        except UsableReply:
            return True
        except Exception:  # noqa: BLE001 - any failure means: no answer
            return False
        return True

    def redacted(self, exc: ModelCallError) -> ModelCallError:
        """``exc`` as raised to the caller: without the transport error it was raised
        from, whose raw text may quote the request, key included. Its own texts are
        masked already: the retry policy and the breaker mask every error text with
        ``redact`` before they shorten or rewrite it."""
        if isinstance(exc, EndpointDownError):
            return EndpointDownError(str(exc), endpoint=exc.endpoint, cause=exc.cause)
        return type(exc)(str(exc), kind=exc.kind, status=exc.status,
                         attempts=exc.attempts, cause=exc.cause)

    def redact(self, text: str) -> str:
        """``text`` with this client's API key and the secrets of its URL masked (errors
        may echo request data). Give it the whole raw text: a secret already cut short
        (but at the very end) or rewritten is no longer found."""
        key = self.spec.api_key
        return redact_text(text, self.spec.base_url, *([key] if key and len(key) >= 4 else []))


class UsableReply(BadResponse):
    """A reply worth asking again, but the model's answer if it stays this way."""

    def __init__(self, message: str, result: CallResult) -> None:
        super().__init__(message)
        self.result = result


class SuspectTruncation(UsableReply):
    """``finish_reason='length'`` before ``max_tokens`` was reached: a reply cut short by
    a server hiccup, worth one more try (a real length stop uses all ``max_tokens``;
    ``retry.KIND_ATTEMPTS`` allows one)."""

    kind = "truncated"

    def __init__(self, result: CallResult) -> None:
        super().__init__("the reply stopped for length before max_tokens", result)


class EmptyReply(UsableReply):
    """An answer of ``""`` (a proxy fault, or a reasoning model that put everything in
    ``reasoning_content``): retried like a malformed reply."""

    kind = "empty_reply"

    def __init__(self, result: CallResult) -> None:
        super().__init__("the reply's content is empty", result)


def _read(data: Any, max_tokens: int | None) -> CallResult:
    """The usable parts of a chat or text completion, as the answer to one attempt;
    ``BadResponse`` for anything malformed, ``UsableReply`` for one worth asking again."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        error = data.get("error") if isinstance(data, dict) else None
        if error:  # a gateway passing on its backend's failure with a 200
            message = error.get("message") if isinstance(error, dict) else None
            raise BadResponse(f"an error with status 200: {message or error}")
        raise BadResponse("the response has no choices")
    choice = choices[0]
    message = choice.get("message")
    if "text" in choice and message is None:  # /completions
        text, reasoning = choice.get("text"), None
    elif isinstance(message, dict):
        text = message.get("content") if message.get("content") is not None \
            else message.get("refusal")
        reasoning = message.get("reasoning_content") or message.get("reasoning")
    else:
        text = reasoning = None
    if not isinstance(text, str) or (reasoning is not None and not isinstance(reasoning, str)):
        raise BadResponse("the response message has no content")
    finish_reason = choice.get("finish_reason")
    # A server that cuts a character between tokens can send half of it as a JSON
    # escape: kept, it would fail the details file and the store mid-run.
    text = unicode_text(text)
    reasoning = unicode_text(reasoning) if reasoning else reasoning
    if isinstance(finish_reason, str):
        finish_reason = unicode_text(finish_reason)
    try:
        usage = data.get("usage") or {}
        result = CallResult(text, finish_reason,
                            int(usage.get("prompt_tokens") or 0),
                            int(usage.get("completion_tokens") or 0), 1, _logprobs(choice),
                            reasoning or None)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise BadResponse(f"malformed usage or logprobs: {exc!r}") from exc
    length_stop = result.finish_reason == "length" and max_tokens
    used = usage.get("completion_tokens")
    if length_stop and used is not None and used < int(max_tokens or 0):
        raise SuspectTruncation(result)  # empty or not: cut short, asked once more
    if not text.strip() and not length_stop:
        # A real length stop that left no answer (all reasoning) is the model's output;
        # any other empty answer may be a fault.
        raise EmptyReply(result)
    return result


def _logprobs(choice: dict[str, Any]) -> Logprobs | None:
    content = (choice.get("logprobs") or {}).get("content")
    if not content:
        return None
    return tuple((t["token"], float(t["logprob"]),
                  tuple((a["token"], float(a["logprob"])) for a in t.get("top_logprobs") or []))
                 for t in content)
