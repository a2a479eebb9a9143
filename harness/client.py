"""Model calls: ``openai.AsyncOpenAI`` on its aiohttp transport, one retry policy.

The SDK's own retries are off (``max_retries=0``) so ``harness.retry`` alone decides
every retry. Each attempt runs under a hard ``anyio.fail_after`` as well as the HTTP
timeout, so a stalled socket can never hang a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .records import ModelSpec
from .errors import ModelCallError
from .retry import BadResponse, CallStats, RetryPolicy, classify

#: Generation parameters passed through to the chat completions API as they are.
_SDK_PARAMS = frozenset({
    "max_tokens", "max_completion_tokens", "temperature", "top_p", "stop", "seed",
    "presence_penalty", "frequency_penalty", "logprobs", "top_logprobs", "n",
    "response_format", "logit_bias", "reasoning_effort",
})


@dataclass(frozen=True, slots=True)
class CallResult:
    """A usable reply: text, finish reason, token usage and optional logprobs."""

    text: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    attempts: int
    logprobs: tuple[tuple[str, float, tuple[tuple[str, float], ...]], ...] | None = None


class ModelClient:
    """One endpoint's client; share it between all concurrent calls to that endpoint."""

    def __init__(self, spec: ModelSpec, *, concurrency: int = 64,
                 policy: RetryPolicy | None = None, limiter: Any = None) -> None:
        import httpx2  # the SDK's HTTP layer; imported lazily to keep start-up fast
        import openai

        import anyio

        self.spec = spec
        self.stats = CallStats()
        # Held per attempt (not across retry sleeps): an endpoint with few slots, such as
        # the embedded model, gets no more requests than it can serve at once.
        self._slots = anyio.CapacityLimiter(concurrency)
        # An optional ``harness.judge.ratelimit.RateLimiter``: every attempt takes a
        # paced slot, and a 429 pauses the pacing for everyone, not just the caller.
        self.limiter = limiter
        self.policy = policy or RetryPolicy(max_attempts=spec.max_attempts)
        limits = httpx2.Limits(max_connections=concurrency,
                               max_keepalive_connections=concurrency)
        self._client = openai.AsyncOpenAI(
            base_url=spec.base_url, api_key=spec.api_key or "EMPTY", max_retries=0,
            timeout=spec.timeout,
            http_client=openai.DefaultAioHttpClient(timeout=spec.timeout, limits=limits))

    async def aclose(self) -> None:
        """Close the HTTP session."""
        await self._client.close()

    async def complete(self, messages: Sequence[Mapping[str, str]],
                       gen_params: Mapping[str, Any]) -> CallResult:
        """One chat completion, retried by the policy; raises ``ModelCallError`` for good."""
        import anyio

        known = {k: v for k, v in gen_params.items() if k in _SDK_PARAMS}
        extra = {k: v for k, v in gen_params.items() if k not in _SDK_PARAMS}

        estimate = sum(len(m.get("content") or "") for m in messages) // 4 \
            + int(gen_params.get("max_tokens") or 0)

        async def attempt() -> Any:
            async with self._slots:
                if self.limiter is not None:
                    await self.limiter.acquire(estimate)
                try:
                    # The hard bound sits a little above the HTTP timeout so the SDK's
                    # own timeout error (clearer) normally fires first.
                    with anyio.fail_after(self.spec.timeout + 5):
                        response = await self._client.chat.completions.create(
                            model=self.spec.model, messages=list(messages), **known,
                            extra_body=extra or None)
                except Exception as exc:
                    info = classify(exc)
                    if self.limiter is not None and info.kind == "rate_limit":
                        self.limiter.pause(info.retry_after if info.retry_after is not None
                                           else self.policy.initial * 2)
                    raise
                if self.limiter is not None:
                    usage = getattr(response, "usage", None)
                    actual = int(getattr(usage, "total_tokens", 0) or 0)
                    if actual:
                        self.limiter.settle(estimate, actual)
                return response

        max_tokens = gen_params.get("max_tokens") or gen_params.get("max_completion_tokens")

        async def checked() -> Any:
            response = await attempt()
            _validate(response, max_tokens)
            return response

        try:
            response, tries = await self.policy.call(checked, self.stats, self._describe())
        except ModelCallError as exc:
            # Still cut short after every attempt: that is the server's real answer
            # (a context-length stop, say), so keep it rather than lose the sample.
            if not isinstance(exc.__cause__, SuspectTruncation):
                raise
            response, tries = exc.__cause__.response, exc.attempts
        choice = response.choices[0]
        usage = getattr(response, "usage", None)
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        self.stats.prompt_tokens += prompt_tokens
        self.stats.completion_tokens += completion_tokens
        return CallResult(choice.message.content or "", choice.finish_reason,
                          prompt_tokens, completion_tokens, tries, _logprobs(choice))

    def redact(self, text: str) -> str:
        """``text`` with this client's API key removed (errors may echo request data)."""
        key = self.spec.api_key
        return text.replace(key, "***") if key and len(key) >= 4 else text

    def _describe(self) -> str:
        return f"model {self.spec.model!r} at {self.spec.base_url}"


class SuspectTruncation(BadResponse):
    """``finish_reason='length'`` before ``max_tokens`` was reached: a reply cut short by
    a server hiccup, worth one more try (a real length stop uses all ``max_tokens``)."""

    def __init__(self, response: Any) -> None:
        super().__init__("the reply stopped for length before max_tokens")
        self.response = response


def _validate(response: Any, max_tokens: int | None) -> None:
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise BadResponse("the response has no choices")
    message = getattr(choices[0], "message", None)
    if message is None or (message.content is None and not getattr(message, "refusal", None)):
        raise BadResponse("the response message has no content")
    if choices[0].finish_reason == "length" and max_tokens:
        used = getattr(getattr(response, "usage", None), "completion_tokens", None)
        if used is not None and used < int(max_tokens):
            raise SuspectTruncation(response)


def _logprobs(choice: Any) -> tuple[tuple[str, float, tuple[tuple[str, float], ...]], ...] | None:
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if not content:
        return None
    return tuple((t.token, float(t.logprob),
                  tuple((a.token, float(a.logprob)) for a in (t.top_logprobs or [])))
                 for t in content)
