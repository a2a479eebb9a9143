"""What every transport provides, and the error translation the transports share.

A transport sends one attempt and nothing more: no retries, no pacing, no breaker
(``harness.client`` and ``harness.retry`` do those, the same for every transport). It
returns the reply's parsed JSON, or raises one of harness's ``TransportError`` types
(``harness.errors``) translated from its library's own with ``raise … from exc``, so
``harness.retry`` never needs to know which library was underneath.
"""

from __future__ import annotations

import errno
import json
import socket
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from .. import defaults
from ..errors import ConnectError, DecodingError, NetworkError
from ..json_encode import loads

#: Default seconds to open a connection (a model's ``connect_timeout``).
CONNECT_TIMEOUT = defaults.CONNECT_TIMEOUT


@runtime_checkable
class Transport(Protocol):
    """Sends one request to an OpenAI-compatible endpoint; paths are relative to its
    base URL (``/chat/completions``, ``/models``)."""

    async def post(self, path: str, body: Mapping[str, Any]) -> Any:
        """POST ``body`` as JSON to ``path``; the reply's JSON, or a ``TransportError``."""
        ...

    async def get(self, path: str) -> Any:
        """GET ``path``; the reply's JSON, or a ``TransportError``."""
        ...

    async def aclose(self) -> None:
        """Release connections; the transport is not used again."""
        ...


def decoded(raw: bytes) -> Any:
    """``raw`` parsed as JSON; ``DecodingError`` if it is not JSON."""
    try:
        # A reply is a UTF-8 JSON object: its first byte is "{" and its second is not
        # NUL (which json.loads would read as UTF-16 or UTF-32). Such a body is decoded
        # here, as json.loads would, and scanned without its wrappers (json_encode.loads).
        if raw[:1] == b"{" and raw[1:2] != b"\0":
            return loads(raw.decode("utf-8", "surrogatepass"))
        return json.loads(raw)
    except ValueError as exc:  # JSONDecodeError, or UnicodeDecodeError for binary garbage
        raise DecodingError(str(exc)) from exc


def exception_chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions it was raised from, outermost first."""
    chain = [exc]
    while (cause := chain[-1].__cause__ or chain[-1].__context__) is not None \
            and len(chain) < 20:
        chain.append(cause)
    return chain


def connection_error(exc: BaseException, connect: bool = False) -> NetworkError:
    """A library's connection failure as a ``NetworkError``: a ``ConnectError`` saying
    why when the socket error underneath is a refusal or an unknown host name (or when
    ``connect``: the library says it failed to connect)."""
    root = exception_chain(exc)[-1]
    os_error = getattr(exc, "os_error", None) or (root if isinstance(root, OSError) else None)
    text = str(exc) or type(exc).__name__
    if isinstance(os_error, socket.gaierror):
        return ConnectError(text, cause="cannot resolve the host name")
    if isinstance(os_error, OSError) and os_error.errno == errno.ECONNREFUSED:
        return ConnectError(text, cause="connection refused")
    return ConnectError(text) if connect else NetworkError(text)
