"""The default transport: JSON bodies on one pooled ``aiohttp`` session.

Why a direct transport: profiling a 10,000-sample run at concurrency 64 (``bench/``)
put two thirds of the event loop's time in the SDK's request building and httpx
layers, which made the harness, not the model server, the bottleneck. This path does
the same HTTP exchange for about a third of the CPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import (
    ConnectTimeout,
    HTTPStatusError,
    RemoteDisconnected,
    TransportError,
    TransportTimeout,
)
from ..json_encode import encoder
from .base import CONNECT_TIMEOUT, connection_error, decoded, exception_chain

# ``json.dumps``, built once (see ``harness.json_encode``): one body per request.
_body_json = encoder()


class AiohttpTransport:
    """POST to the endpoint on a pooled aiohttp session (made on first use, so a rerun
    served from the store never opens one)."""

    def __init__(self, base_url: str, api_key: str, timeout: float, concurrency: int,
                 connect_timeout: float = CONNECT_TIMEOUT) -> None:
        # A query in the base URL (``?api-version=…``) goes after the path of each call.
        base, _, query = base_url.partition("?")
        self._base, self._query = base.rstrip("/"), f"?{query}" if query else ""
        self._api_key, self._timeout, self._concurrency = api_key, timeout, concurrency
        self._connect_timeout = min(timeout, connect_timeout)
        self._session: Any = None

    async def post(self, path: str, body: Mapping[str, Any]) -> Any:
        """POST ``body`` to ``path``; the reply's JSON, or a ``TransportError``."""
        return await self._send("POST", path, _body_json(body).encode())

    async def get(self, path: str) -> Any:
        """GET ``path`` (e.g. ``/models``) as JSON, or a ``TransportError``."""
        return await self._send("GET", path, None)

    async def _send(self, method: str, path: str, data: bytes | None) -> Any:
        session = self._session or self._open()
        try:
            async with session.request(method, self._base + path + self._query,
                                       data=data) as response:
                raw = await response.read()
                status, headers = response.status, response.headers
        except Exception as exc:
            if (error := translated(exc)) is None:
                raise
            raise error from exc
        if status >= 400:
            raise HTTPStatusError(status, headers, raw)
        return decoded(raw)

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


def translated(exc: Exception) -> TransportError | None:
    """An exception of one aiohttp exchange as harness's ``TransportError``; ``None``
    for one that is neither aiohttp's nor a timeout (a bug, raised as it is)."""
    # Imported here: aiohttp takes a noticeable part of a second to import, and only a
    # client that sends a request gets this far.
    import aiohttp

    text = str(exc) or type(exc).__name__
    if isinstance(exc, TimeoutError):  # the attempt's deadline, or aiohttp's own timeouts
        if any(isinstance(e, aiohttp.ConnectionTimeoutError) for e in exception_chain(exc)):
            return ConnectTimeout(text)
        return TransportTimeout(text)
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return RemoteDisconnected(text)
    if isinstance(exc, aiohttp.ClientError):
        return connection_error(exc, connect=isinstance(exc, aiohttp.ClientConnectorError))
    return None
