"""What the fake OpenAI server says and counts: replies, faults, policies, stats, JSON shapes.

The server answers two routes, ``/v1/chat/completions`` (a ``messages`` body) and the legacy
``/v1/completions`` (a ``prompt`` string); a :class:`Route` holds all that differs between
them, so responders, faults, policies and stats serve both.

A *fault policy* is any callable ``(body, attempt) -> Fault | None``. ``attempt`` counts how
often the server has already seen the same request (same :func:`request_key`), so a policy
can say "the first two attempts of every request fail" without keeping state of its own::

    FakeOpenAI(faults=fail_first(2, Fault("rate_limit", retry_after=0.1)))
    FakeOpenAI(faults=fault_rate(0.2, seed=1))   # reproducible transient faults
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args


def _json_dumps(obj: Any) -> bytes:
    """Serialize ``obj`` to compact JSON bytes with the standard library."""
    return json.dumps(obj, separators=(",", ":")).encode()


try:  # orjson is several times faster, which matters at thousands of requests/second
    import orjson

    def dumps(obj: Any) -> bytes:
        """Serialize ``obj`` to compact JSON bytes."""
        try:
            return orjson.dumps(obj)
        except TypeError:  # half a character (a lone surrogate): json escapes it
            return _json_dumps(obj)

    def _canonical(obj: Any) -> bytes:
        return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)

    loads = orjson.loads
except ImportError:  # pragma: no cover - orjson is optional
    dumps = _json_dumps

    def _canonical(obj: Any) -> bytes:
        return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()

    def loads(data: bytes | bytearray | memoryview | str) -> Any:
        """Parse JSON, as ``orjson.loads`` does (json takes no memoryview)."""
        return json.loads(bytes(data) if isinstance(data, memoryview) else data)

FaultKind = Literal[
    "rate_limit", "server_error", "slow", "stall", "drop", "malformed_json",
    "empty_choices", "error_200", "length", "null_content", "empty_content", "unauthorized",
    "not_found", "bad_request", "quota",
]
FAULT_KINDS: frozenset[str] = frozenset(get_args(FaultKind))
"""Every fault kind :class:`Fault` accepts."""

FaultPolicy = Callable[[dict, int], "Fault | None"]
"""``(body, attempt) -> Fault | None``: which fault, if any, to inject into a request."""

Responder = Callable[[dict], "str | Reply | Awaitable[str | Reply]"]
"""``body -> str | Reply`` (or an awaitable of one): decides what the fake model says."""


@dataclass
class Stats:
    """Counters over completion requests of both routes (``GET /v1/models`` is not counted).

    ``total`` counts requests to either route, ``by_route`` per :attr:`Route.name`
    (``chat``, ``completions``); ``by_status`` counts responses sent per HTTP status (a
    ``drop`` or ``stall`` sends none), ``faults`` counts injected faults per kind,
    ``rpm_limited`` the 429s of the ``rpm_limit`` emulation (also in ``by_status[429]``).
    """

    total: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    rpm_limited: int = 0
    by_status: Counter[int] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    by_route: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready copy (status codes become string keys)."""
        return {"total": self.total, "in_flight": self.in_flight,
                "max_in_flight": self.max_in_flight, "rpm_limited": self.rpm_limited,
                "by_status": {str(k): v for k, v in sorted(self.by_status.items())},
                "faults": dict(sorted(self.faults.items())),
                "by_route": dict(sorted(self.by_route.items()))}


@dataclass(frozen=True, slots=True)
class Reply:
    """What a responder answers: the message content and how the generation ended.

    ``reasoning``, if given, goes out on the chat route as ``message.reasoning_content`` (as
    DeepSeek's API and vLLM's reasoning parsers send it) and counts towards
    ``completion_tokens``; the completions route has no place for it and drops it.
    ``logprobs`` is returned when the request asks for ``logprobs``: a list of
    ``(token, logprob)`` or ``(token, logprob, [(alt_token, alt_logprob), ...])``; without
    it the server makes one token per whitespace-separated word with logprob 0.0.
    """

    content: str | None
    finish_reason: str = "stop"
    logprobs: Sequence[tuple] | None = None
    reasoning: str | None = None

    def truncated(self, keep: int | None = None) -> Reply:
        """This reply cut to ``keep`` characters (default half), as ``finish_reason='length'``."""
        content = self.content or ""
        cut = content[: len(content) // 2 if keep is None else keep]
        return Reply(cut, "length", self.logprobs, self.reasoning)

    def emptied(self) -> Reply:
        """This reply with an answer of ``""`` and ``finish_reason='stop'``, reasoning kept."""
        return Reply("", "stop", None, self.reasoning)


@dataclass(frozen=True, slots=True)
class Fault:
    """One injected failure. ``kind`` picks the behaviour; the other fields tune it.

    - ``rate_limit``: 429; ``retry_after`` seconds, if given, becomes a ``Retry-After`` header.
    - ``server_error``: a 5xx ``status`` (500, 502, 503...; default 500), error body.
    - ``slow``: wait ``seconds`` more, then answer normally (to outlast a client timeout).
    - ``stall``: never answer until the server shuts down; with ``send_headers`` the
      status line and headers go out first, so the client hangs reading the body.
    - ``drop``: close the connection without any response.
    - ``malformed_json``: 200 whose body is not valid JSON.
    - ``empty_choices``: 200 with ``choices: []``.
    - ``error_200``: 200 whose body is an OpenAI-style error object (``{"error": {...}}``),
      as some gateways answer when the backend behind them fails.
    - ``length``: ``finish_reason='length'`` and the content cut to ``keep`` characters
      (default: half of it).
    - ``null_content``: ``content: null`` (``text: null`` on the completions route).
    - ``empty_content``: an answer of ``""``, ``finish_reason='stop'``, while
      ``usage.completion_tokens`` counts the reply that was not sent: what a broken proxy,
      or a reasoning model that put everything in ``reasoning_content``, answers.
    - ``unauthorized`` / ``not_found`` / ``bad_request``: 401 / 404 model-not-found / 400,
      each with an OpenAI-style error body.
    - ``quota``: 429 with OpenAI's ``insufficient_quota`` body (the account's quota is used
      up: every request gets it until someone pays).

    ``message``, if given, is the error body's ``message`` of the kinds that send one
    (``error_200`` and the HTTP error kinds).
    """

    kind: FaultKind
    status: int | None = None
    retry_after: float | None = None
    seconds: float = 30.0
    send_headers: bool = False
    keep: int | None = None
    message: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; one of {sorted(FAULT_KINDS)}")
        # A status on any other kind would be silently ignored, which hides test mistakes.
        if self.status is not None and not (self.kind == "server_error"
                                            and 500 <= self.status <= 599):
            raise ValueError("status is only for server_error and must be 5xx")


def as_fault(fault: Fault | str) -> Fault:
    """Return ``fault`` itself, or a default :class:`Fault` of that kind name."""
    return fault if isinstance(fault, Fault) else Fault(fault)  # type: ignore[arg-type]


def request_key(body: dict) -> str:
    """Identify "the same request" across retries: a hash of its model and its messages, or
    its prompt on the completions route."""
    parts = [body.get("model"), body.get("messages")]
    if "prompt" in body:  # appended, so chat keys (and fault_rate's draws) stay as they were
        parts.append(body["prompt"])
    material = _canonical(parts)
    return hashlib.blake2b(material, digest_size=16).hexdigest()


def fail_first(n: int, fault: Fault | str = "server_error") -> FaultPolicy:
    """A policy under which the first ``n`` attempts of every request fail with ``fault``."""
    chosen = as_fault(fault)

    def policy(body: dict, attempt: int) -> Fault | None:
        return chosen if attempt < n else None

    return policy


def fail_for(seconds: float, fault: Fault | str = "server_error") -> FaultPolicy:
    """A policy under which every attempt fails with ``fault`` for ``seconds`` from the
    first request the server gets (an outage or a 429 storm). Timed from that request,
    not from when the policy is made, so a slow start cannot use the window up."""
    chosen = as_fault(fault)
    started: list[float] = []

    def policy(body: dict, attempt: int) -> Fault | None:
        if not started:
            started.append(time.monotonic())
        return chosen if time.monotonic() - started[0] < seconds else None

    return policy


def fault_rate(p: float, kinds: Sequence[Fault | str] = ("rate_limit", "server_error"),
               seed: int = 0, max_consecutive: int = 2) -> FaultPolicy:
    """A policy that fails each attempt with probability ``p``, reproducibly.

    The draw depends only on ``(seed, request_key(body), attempt)``, so the same run gets
    the same faults in any order and at any concurrency. Faults are transient: an attempt
    whose ``max_consecutive`` predecessors all drew a fault always succeeds, so a client
    with ``max_consecutive + 1`` attempts never fails for good.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError("p must be within [0, 1]")
    if max_consecutive < 1 or not kinds:
        raise ValueError("need max_consecutive >= 1 and at least one fault kind")
    choices = [as_fault(kind) for kind in kinds]

    def draw(key: str, attempt: int) -> tuple[bool, int]:
        digest = hashlib.blake2b(f"{seed}:{key}:{attempt}".encode(), digest_size=16).digest()
        hit = int.from_bytes(digest[:8], "big") / 2**64 < p
        return hit, int.from_bytes(digest[8:], "big") % len(choices)

    def policy(body: dict, attempt: int) -> Fault | None:
        key = request_key(body)
        hit, which = draw(key, attempt)
        if not hit:
            return None
        if attempt >= max_consecutive and all(
                draw(key, earlier)[0] for earlier in range(attempt - max_consecutive, attempt)):
            return None
        return choices[which]

    return policy



# -- the JSON the fake answers with ---------------------------------------------------------

MALFORMED_JSON = b'{"id": "chatcmpl-fake", "object": "chat.completion", "choices": [{"mess'
"""A 200 body cut mid-object, so every JSON parser rejects it."""

_ERRORS = {  # kind -> (status, type, code, message)
    "rate_limit": (429, "requests", "rate_limit_exceeded", "Rate limit reached for requests."),
    "server_error": (500, "server_error", None,
                     "The server had an error while processing your request."),
    "unauthorized": (401, "invalid_request_error", "invalid_api_key",
                     "Incorrect API key provided."),
    "not_found": (404, "invalid_request_error", "model_not_found",
                  "The model `{model}` does not exist"),
    "bad_request": (400, "invalid_request_error", None, "Invalid request."),
    "quota": (429, "insufficient_quota", "insufficient_quota",
              "You exceeded your current quota, please check your plan and billing details."),
}
ERROR_KINDS: frozenset[str] = frozenset(_ERRORS)
"""Fault kinds answered with an HTTP error status and an OpenAI-style error body."""


def error_body(kind: str, model: object = None, message: str | None = None) -> tuple[int, dict]:
    """The default status and the ``{"error": {...}}`` object of an error kind."""
    status, type_, code, template = _ERRORS[kind]
    text = message if message is not None else template.format(model=model)
    return status, {"error": {"message": text, "type": type_, "param": None, "code": code}}


def retry_after_value(seconds: float) -> str:
    """A ``Retry-After`` value, rounded up to milliseconds so no client retries too early."""
    return f"{math.ceil(seconds * 1000) / 1000:.3f}".rstrip("0").rstrip(".")


def echo_last_user(body: dict) -> str:
    """The default responder: the text of the last user message, or a completions body's
    ``prompt``."""
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        return prompt
    for message in reversed(body.get("messages") or ()):
        if message.get("role") == "user":
            return text_of(message.get("content"))
    return ""


def text_of(content: object) -> str:
    """Message content as text; content parts contribute their ``text``."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def completion_body(body: dict, reply: Reply, serial: int,
                    billed: Reply | None = None) -> dict[str, Any]:
    """The ChatCompletion object answering ``body`` with ``reply`` (``n`` copies of it);
    usage counts ``billed`` (default: ``reply``) and its reasoning."""
    logprobs = None
    if body.get("logprobs"):
        logprobs = {"content": logprob_entries(reply, int(body.get("top_logprobs") or 0)),
                    "refusal": None}
    message = {"role": "assistant", "content": reply.content, "refusal": None}
    if reply.reasoning is not None:
        message["reasoning_content"] = reply.reasoning
    billed = billed or reply
    tokens = _words(billed.content) + _words(billed.reasoning)
    prompt_tokens = sum(len(text_of(m.get("content")).split()) for m in body["messages"])
    return _envelope("chatcmpl", "chat.completion", body, serial, prompt_tokens, tokens,
                     {"index": 0, "finish_reason": reply.finish_reason, "logprobs": logprobs,
                      "message": message})


def text_completion_body(body: dict, reply: Reply, serial: int,
                         billed: Reply | None = None) -> dict[str, Any]:
    """The legacy Completion object answering ``body``'s ``prompt`` with ``reply`` (``n``
    copies); usage counts ``billed`` (default: ``reply``). ``logprobs`` is always null."""
    choice = {"index": 0, "text": reply.content, "finish_reason": reply.finish_reason,
              "logprobs": None}
    return _envelope("cmpl", "text_completion", body, serial, len(body["prompt"].split()),
                     _words((billed or reply).content), choice)


def _envelope(prefix: str, kind: str, body: dict, serial: int, prompt_tokens: int,
              tokens: int, choice: dict[str, Any]) -> dict[str, Any]:
    """The object around ``n`` copies of ``choice``; ``tokens`` is one choice's count."""
    choices = [choice] + [dict(choice, index=i) for i in range(1, int(body.get("n") or 1))]
    completion_tokens = tokens * len(choices)
    return {"id": f"{prefix}-fake-{serial}", "object": kind, "created": int(time.time()),
            "model": body.get("model"), "system_fingerprint": "fake-openai", "choices": choices,
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


def _words(text: str | None) -> int:
    # Whitespace words stand in for tokens: cheap, and good enough for budget tests.
    return len(text.split()) if text else 0


@dataclass(frozen=True, slots=True)
class Route:
    """One completion route: its path, the body field it needs and how it answers."""

    name: str
    path: str
    field: str
    field_type: type
    answer: Callable[[dict, Reply, int, Reply | None], dict[str, Any]]

    @property
    def bad_body(self) -> str:
        """The 400 message for a body without a usable ``field``."""
        kind = "list" if self.field_type is list else "string"
        return f"The body must be an object with a {kind} `{self.field}`."


ROUTES: dict[str, Route] = {route.name: route for route in (
    Route("chat", "/v1/chat/completions", "messages", list, completion_body),
    Route("completions", "/v1/completions", "prompt", str, text_completion_body),
)}
"""The routes the fake serves, by name."""


def logprob_entries(reply: Reply, top: int) -> list[dict[str, Any]]:
    """``choices[i].logprobs.content``: one entry per token with up to ``top`` alternatives.

    ``Reply.logprobs`` items are ``(token, logprob)`` or ``(token, logprob, alternatives)``
    with alternatives as ``(token, logprob)`` pairs; by default the token itself is the only
    alternative. Without ``Reply.logprobs`` each whitespace word gets logprob 0.0.
    """
    pairs = reply.logprobs
    if pairs is None:
        pairs = [(token, 0.0) for token in (reply.content or "").split()]
    entries = []
    for token, logprob, *rest in pairs:
        alternatives = list(rest[0] if rest else [(token, logprob)])[:top]
        entries.append({"token": token, "logprob": logprob, "bytes": list(token.encode()),
                        "top_logprobs": [{"token": t, "logprob": lp, "bytes": list(t.encode())}
                                         for t, lp in alternatives]})
    return entries


def model_entry(model: str) -> dict[str, Any]:
    """One item of ``GET /v1/models``."""
    return {"id": model, "object": "model", "created": 0, "owned_by": "fake-openai"}
