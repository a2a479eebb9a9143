"""The ``openai`` transport: the same request through ``openai.AsyncOpenAI`` on its
aiohttp transport (``client.post``), for endpoints that need the SDK's conventions.

The SDK's own retries are off (``max_retries=0``): ``harness.retry`` decides every retry,
the same for every transport.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ConnectError, ConnectTimeout, HTTPStatusError, TransportError, TransportTimeout
from .base import CONNECT_TIMEOUT, connection_error, decoded, exception_chain


class OpenAITransport:
    """Requests through ``openai.AsyncOpenAI`` (made on first use: the SDK takes most of
    a second to import)."""

    def __init__(self, base_url: str, api_key: str, timeout: float, concurrency: int,
                 connect_timeout: float = CONNECT_TIMEOUT) -> None:
        self._args = (base_url, api_key, timeout, concurrency)
        self._connect_timeout = min(timeout, connect_timeout)
        self._client: Any = None

    async def post(self, path: str, body: Mapping[str, Any]) -> Any:
        """POST ``body`` to ``path``; the reply's JSON, or a ``TransportError``."""
        return await self._send("post", path, body)

    async def get(self, path: str) -> Any:
        """GET ``path`` (e.g. ``/models``) through the SDK, as JSON."""
        return await self._send("get", path, None)

    async def _send(self, method: str, path: str, body: Mapping[str, Any] | None) -> Any:
        import anyio

        client = self._client or self._open()
        options = {"body": body} if method == "post" else {}
        try:
            # The SDK's timeout is per read; the hard bound stops a trickling server too.
            with anyio.fail_after(self._args[2] + 5):
                raw = await getattr(client, method)(path, cast_to=self._response_type,
                                                    **options)
        except Exception as exc:
            if (error := translated(exc)) is None:
                raise
            raise error from exc
        return decoded(raw.content)

    def _open(self) -> Any:
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


def translated(exc: Exception) -> TransportError | None:
    """An exception of one SDK call as harness's ``TransportError``; ``None`` for one
    that is neither the SDK's nor a timeout (a bug, raised as it is)."""
    import openai

    text = str(exc) or type(exc).__name__
    if isinstance(exc, (TimeoutError, openai.APITimeoutError)):
        # The SDK's aiohttp client reports a refused connection as a connect timeout,
        # with the refusal at the end of the chain: say what really happened.
        refused = connection_error(exc)
        if isinstance(refused, ConnectError):  # a refusal or an unknown host underneath
            return refused
        # httpx's ConnectTimeout, or aiohttp's under the SDK's aiohttp client.
        if any(type(e).__name__ in ("ConnectTimeout", "ConnectionTimeoutError")
               for e in exception_chain(exc)):
            return ConnectTimeout(text)
        return TransportTimeout(text)
    if isinstance(exc, openai.APIStatusError):
        return HTTPStatusError(exc.status_code, exc.response.headers, detail=exc.message,
                               code=getattr(exc, "code", None) or getattr(exc, "type", None))
    if isinstance(exc, openai.APIConnectionError):
        return connection_error(exc)
    return None
