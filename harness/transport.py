"""How a request reaches the server (``/chat/completions`` or ``/completions``): two
interchangeable transports.

Each bounds one attempt with a hard deadline (``timeout``), so a stalled socket can
never hang a run, and opening a connection with a shorter one (``connect_timeout``, or
``timeout`` if that is shorter), so a host that never answers (a wrong address behind a
firewall, a machine that is off) fails in seconds rather than after a whole ``timeout``.

``aiohttp`` (the default) posts the JSON body on one pooled ``aiohttp`` session and
reads the reply as plain JSON. ``openai`` sends the same body through
``openai.AsyncOpenAI`` on its aiohttp transport (``client.post``), for endpoints that
need the SDK's conventions. Both raise the same kinds of errors for ``harness.retry``
to classify: ``HTTPStatusError`` or the SDK's ``APIStatusError`` for 4xx/5xx,
connection errors, timeouts, and ``ValueError`` for a body that is not JSON.

Why a direct transport: profiling a 10,000-sample run at concurrency 64 (``bench/``)
put two thirds of the event loop's time in the SDK's request building and httpx2
layers — more than extraction, scoring, storage and streaming together — which made
the harness, not the model server, the bottleneck. The direct path does the same HTTP
exchange for about a third of the CPU.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

#: The transports a model or judge config may name (``transport='openai'``).
TRANSPORTS = ("aiohttp", "openai")

#: Default seconds to open a connection (a model's ``connect_timeout``).
CONNECT_TIMEOUT = 10.0


class HTTPStatusError(Exception):
    """The server answered 4xx/5xx; ``headers`` keep ``Retry-After``, ``code`` the error
    body's ``code`` (or ``type``), such as ``insufficient_quota``."""

    def __init__(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        self.status, self.headers, self.code = status, headers, None
        text = body[:500].decode("utf-8", "replace").strip()
        try:
            error = json.loads(body).get("error", {})
            if isinstance(error, dict):
                text = error.get("message", text)
                self.code = error.get("code") or error.get("type")
        except (ValueError, AttributeError):
            pass
        super().__init__(f"HTTP {status}: {text}")


class AiohttpTransport:
    """POST to the endpoint on a pooled aiohttp session (made on first use)."""

    def __init__(self, base_url: str, api_key: str, timeout: float, concurrency: int,
                 connect_timeout: float = CONNECT_TIMEOUT) -> None:
        # A query in the base URL (``?api-version=…``) goes after the path of each call.
        base, _, query = base_url.partition("?")
        self._base, self._query = base.rstrip("/"), f"?{query}" if query else ""
        self._api_key, self._timeout, self._concurrency = api_key, timeout, concurrency
        self._connect_timeout = min(timeout, connect_timeout)
        self._session: Any = None

    async def post(self, body: Mapping[str, Any], path: str = "/chat/completions") -> Any:
        """POST ``body`` to ``path``; the reply's JSON, ``HTTPStatusError`` for an error."""
        session = self._session or self._open()
        url = self._base + path + self._query
        async with session.post(url, data=json.dumps(body).encode()) as response:
            raw = await response.read()
            if response.status >= 400:
                raise HTTPStatusError(response.status, response.headers, raw)
        return json.loads(raw)

    async def get(self, path: str) -> Any:
        """GET ``path`` (e.g. ``/models``) as JSON; ``HTTPStatusError`` for an error."""
        session = self._session or self._open()
        async with session.get(self._base + path + self._query) as response:
            raw = await response.read()
            if response.status >= 400:
                raise HTTPStatusError(response.status, response.headers, raw)
        return json.loads(raw)

    def _open(self) -> Any:
        import aiohttp

        connector = aiohttp.TCPConnector(limit=self._concurrency, ttl_dns_cache=300)
        # ``total`` is the hard deadline of one attempt, however the server stalls
        # (headers never sent, or a body trickled byte by byte).
        timeout = aiohttp.ClientTimeout(total=self._timeout,
                                        sock_connect=self._connect_timeout)
        headers = {"Content-Type": "application/json",
                   "Authorization": f"Bearer {self._api_key or 'EMPTY'}"}
        self._session = aiohttp.ClientSession(connector=connector, timeout=timeout,
                                              headers=headers)
        return self._session

    async def aclose(self) -> None:
        """Close the session and its connections."""
        if self._session is not None:
            await self._session.close()


class OpenAITransport:
    """The same request through ``openai.AsyncOpenAI`` with its aiohttp transport."""

    def __init__(self, base_url: str, api_key: str, timeout: float, concurrency: int,
                 connect_timeout: float = CONNECT_TIMEOUT) -> None:
        self._args = (base_url, api_key, timeout, concurrency)
        self._connect_timeout = min(timeout, connect_timeout)
        self._client: Any = None

    async def post(self, body: Mapping[str, Any], path: str = "/chat/completions") -> Any:
        """POST ``body`` to ``path``; the reply's JSON, the SDK's ``APIStatusError`` for
        an error status."""
        import anyio

        client = self._client or self._open()
        # The SDK's timeout is per read; the hard bound stops a trickling server too.
        with anyio.fail_after(self._args[2] + 5):
            raw = await client.post(path, body=body,
                                    cast_to=self._response_type)
        return json.loads(raw.content)

    async def get(self, path: str) -> Any:
        """GET ``path`` (e.g. ``/models``) through the SDK, as JSON."""
        import anyio

        client = self._client or self._open()
        with anyio.fail_after(self._args[2] + 5):
            raw = await client.get(path, cast_to=self._response_type)
        return json.loads(raw.content)

    def _open(self) -> Any:
        # The SDK takes most of a second to import: only when this transport is used.
        import httpx2
        import openai

        base_url, api_key, seconds, concurrency = self._args
        self._response_type = httpx2.Response
        limits = httpx2.Limits(max_connections=concurrency,
                               max_keepalive_connections=concurrency)
        timeout = httpx2.Timeout(seconds, connect=self._connect_timeout)
        self._client = openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key or "EMPTY", max_retries=0, timeout=timeout,
            http_client=openai.DefaultAioHttpClient(timeout=timeout, limits=limits))
        return self._client

    async def aclose(self) -> None:
        """Close the SDK client."""
        if self._client is not None:
            await self._client.close()


def make_transport(name: str, base_url: str, api_key: str, timeout: float,
                   concurrency: int, connect_timeout: float = CONNECT_TIMEOUT
                   ) -> AiohttpTransport | OpenAITransport:
    """The transport called ``name`` (see ``TRANSPORTS``)."""
    if name == "openai":
        return OpenAITransport(base_url, api_key, timeout, concurrency, connect_timeout)
    if name == "aiohttp":
        return AiohttpTransport(base_url, api_key, timeout, concurrency, connect_timeout)
    raise ValueError(f"unknown transport {name!r}; use one of {', '.join(TRANSPORTS)}")
