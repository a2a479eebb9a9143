"""A transport answered by a function, for tests of code that makes model calls.

``MockTransport(handler)`` goes where a real transport goes (``ModelClient(spec,
transport=MockTransport(handler))``): no server, no socket, and the client's retries,
pacing and breaker run as they do over HTTP. The handler gets each ``MockRequest`` and
returns a reply's JSON (a dict), a ``MockResponse`` (an error status, headers, a body
that is not JSON), or raises a harness ``TransportError`` (``ConnectError(cause=
'connection refused')``, ``TransportTimeout()``), exactly what a real transport raises::

    def handler(request: MockRequest) -> dict:
        return {"choices": [{"message": {"content": "42"}, "finish_reason": "stop"}]}

    client = ModelClient(spec, transport=MockTransport(handler))

The handler may be a coroutine function. To test against real HTTP (timeouts, dropped
connections, the real transports), use ``FakeOpenAI`` instead.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from anyio.lowlevel import checkpoint

from ..errors import HTTPStatusError
from ..transport.base import decoded

__all__ = ["MockRequest", "MockResponse", "MockTransport"]


@dataclass(frozen=True)
class MockRequest:
    """One request as the transport got it: ``method`` (``POST``/``GET``), ``path``
    (``/chat/completions``, ``/models``) and the JSON ``body`` (``None`` for a GET)."""

    method: str
    path: str
    body: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class MockResponse:
    """A reply other than a plain JSON 200: a ``status`` of 400 or more raises
    ``HTTPStatusError`` as a real transport would (``json`` or ``content`` is the error
    body, ``headers`` may carry ``Retry-After``); ``content`` that is not JSON raises
    ``DecodingError``."""

    status: int = 200
    json: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    content: bytes | None = None

    def body(self) -> bytes:
        """The raw body: ``content``, else ``json`` encoded."""
        return self.content if self.content is not None else json.dumps(self.json).encode()


#: What a handler may return: a reply's JSON or a ``MockResponse`` (or a coroutine of one).
MockReply = Mapping[str, Any] | list[Any] | MockResponse
Handler = Callable[[MockRequest], MockReply | Awaitable[MockReply]]


class MockTransport:
    """A ``harness.transport.Transport`` whose replies come from ``handler``.

    ``requests`` lists every request received, in order; ``closed`` says whether the
    client closed it.
    """

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[MockRequest] = []
        self.closed = False

    async def post(self, path: str, body: Mapping[str, Any]) -> Any:
        """The handler's reply to ``POST path`` with ``body``."""
        return await self._send(MockRequest("POST", path, body))

    async def get(self, path: str) -> Any:
        """The handler's reply to ``GET path``."""
        return await self._send(MockRequest("GET", path))

    async def aclose(self) -> None:
        """Mark the transport closed (there is nothing to release)."""
        self.closed = True

    async def _send(self, request: MockRequest) -> Any:
        # A real request always yields to the event loop: so does this one, so a loop of
        # calls cannot starve the other tasks (or a cancellation).
        await checkpoint()
        self.requests.append(request)
        reply = self.handler(request)
        if inspect.isawaitable(reply):
            reply = await reply
        if not isinstance(reply, MockResponse):
            return reply
        if reply.status >= 400:
            # Lower-cased like the real transports' case-insensitive headers.
            headers = {k.lower(): v for k, v in reply.headers.items()}
            raise HTTPStatusError(reply.status, headers, reply.body())
        return decoded(reply.body())
