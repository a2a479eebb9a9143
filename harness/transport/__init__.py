"""How a request reaches the server: the ``Transport`` interface and its implementations.

A ``ModelClient`` sends every attempt through one ``Transport`` (``post`` a JSON body to a
path, ``get`` a path, ``aclose``). A transport sends one attempt and nothing more, and
raises only harness's ``TransportError`` types (``harness.errors``), translated from its
library's with ``raise … from exc``, so the retry policy and the breaker work the same
over every transport. Two ship, chosen by a model's or judge's ``transport`` setting:

- ``aiohttp`` (the default, ``AiohttpTransport``): the JSON body on one pooled aiohttp
  session, the reply read as plain JSON; the least CPU per request.
- ``openai`` (``OpenAITransport``): the same body through ``openai.AsyncOpenAI`` with
  its retries off, for endpoints that need the SDK's conventions.

Each bounds one attempt with a hard deadline (``timeout``), so a stalled socket can
never hang a run, and opening a connection with a shorter one (``connect_timeout``, or
``timeout`` if that is shorter), so a host that never answers fails in seconds.

Tests (and library users' tests) pass a ``harness.testing.MockTransport`` to
``ModelClient(transport=...)``; another transport is registered under a name with
``TRANSPORTS.register(name)`` (a factory taking the ``ModelSpec`` and the connection
limit) and chosen by that name in a config.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import HTTPStatusError
from ..registry import Registry
from .base import CONNECT_TIMEOUT, Transport

if TYPE_CHECKING:
    from ..records import ModelSpec

__all__ = ["CONNECT_TIMEOUT", "HTTPStatusError", "TRANSPORTS", "Transport",
           "TransportFactory", "make_transport"]

#: Builds the transport of one endpoint from its spec and its connection limit.
TransportFactory = Callable[["ModelSpec", int], Transport]

#: The transports a model or judge config may name (``transport='openai'``).
TRANSPORTS: Registry[TransportFactory] = Registry("transport")


@TRANSPORTS.register("aiohttp")
def _aiohttp(spec: ModelSpec, concurrency: int) -> Transport:
    from .pooled import AiohttpTransport

    return AiohttpTransport(spec.base_url, spec.api_key, spec.timeout, concurrency,
                            spec.connect_timeout)


@TRANSPORTS.register("openai")
def _openai(spec: ModelSpec, concurrency: int) -> Transport:
    from .sdk import OpenAITransport

    return OpenAITransport(spec.base_url, spec.api_key, spec.timeout, concurrency,
                           spec.connect_timeout)


def make_transport(spec: ModelSpec, concurrency: int) -> Transport:
    """The transport ``spec.transport`` names, for an endpoint allowed ``concurrency``
    connections; ``ValueError`` for a name nobody registered."""
    try:
        factory = TRANSPORTS.get(spec.transport)
    except KeyError as exc:
        raise ValueError(f"unknown transport {spec.transport!r}; use one of "
                         f"{', '.join(TRANSPORTS.names())}") from exc
    return factory(spec, concurrency)
