"""The exception tree of harness.

Errors from the transports (``aiohttp``, ``openai``) and ``sqlite3`` are translated at
the boundary (``raise ... from exc``) so callers only ever catch these::

    HarnessError
     ├── TransportError         one attempt failed on the way to or from the server
     │    ├── HTTPStatusError    the server answered 4xx/5xx (status, headers, error code)
     │    ├── TransportTimeout   the attempt ran past its deadline
     │    │    └── ConnectTimeout no connection within connect_timeout (host never answered)
     │    ├── NetworkError       the connection failed
     │    │    ├── ConnectError   could not connect (refused, unknown host name)
     │    │    └── RemoteDisconnected the server dropped the connection mid-exchange
     │    └── DecodingError      a 2xx reply whose body is not JSON
     ├── ConfigError            bad config, dataset or template (CLI exit code 2)
     │    └── DatasetError       a data file that cannot be read; names file and line
     ├── StoreError             the work directory or its SQLite store (CLI exit code 2)
     │    ├── SchemaVersionError store written by an incompatible harness version
     │    ├── StoreCorruptError  harness.db is not a SQLite database, or is damaged
     │    ├── WorkDirLockedError another process is running on the same work directory
     │    └── WorkDirError       not a usable work directory (a file, not writable, or
     │                           for report and compare: no results in it)
     ├── ModelCallError         one model or judge call that failed for good
     │    └── PermanentModelError 401/403/404 or unknown model: stops the whole run
     │         └── EndpointDownError the endpoint's circuit breaker opened (exit 3)
     └── LocalModelError        the embedded llama.cpp server could not start
          └── LocalModelMissingError  the [local] extra is not installed (exit code 2)

A per-sample failure is *data on the sample's record*, never an exception that ends a
run; only ``PermanentModelError`` (every later call would fail the same way) and the
configuration errors stop a run. A ``TransportError`` never leaves ``harness.client``: the
retry policy retries it or turns it into a ``ModelCallError``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .json_encode import unicode_text


class HarnessError(Exception):
    """Base class of every error harness raises on purpose."""


class TransportError(HarnessError):
    """One attempt failed between harness and the server; ``harness.retry`` decides by
    the class whether to try again.

    The message is the library's own (``aiohttp``'s, the SDK's); ``cause`` says what went
    wrong in a few words that are the same for every attempt that failed the same way
    (``'connection refused'``), or is ``None`` to use the message's first line.
    """

    cause: str | None = None

    def __init__(self, message: str = "", *, cause: str | None = None) -> None:
        super().__init__(message or type(self).__name__)
        if cause is not None:
            self.cause = cause


class HTTPStatusError(TransportError):
    """The server answered 4xx/5xx. ``headers`` keep ``Retry-After``; ``detail`` is the
    error body's ``message`` (or the body's start); ``code`` the body's ``code`` (or
    ``type``), such as ``insufficient_quota``. Give ``body`` (the raw reply) or ``detail``
    and ``code`` directly."""

    def __init__(self, status: int, headers: Mapping[str, str] | None = None,
                 body: bytes = b"", *, detail: str | None = None,
                 code: str | None = None) -> None:
        self.status, self.headers, self.code = status, headers or {}, code
        if detail is None:
            detail, parsed = _error_body(body)
            self.code = code or parsed
        self.detail = detail
        super().__init__(f"HTTP {status}: {detail}")


def _error_body(body: bytes) -> tuple[str, str | None]:
    """The message and code of an OpenAI-style error body (``{"error": {...}}``), or the
    body's first 500 characters and no code."""
    text = body[:500].decode("utf-8", "replace").strip()
    try:
        error: Any = json.loads(body).get("error", {})
    except (ValueError, AttributeError):
        return text, None
    if not isinstance(error, dict):
        return text, None
    return error.get("message", text), error.get("code") or error.get("type")


class TransportTimeout(TransportError):
    """The attempt ran past its deadline (``timeout``): a slow or stalled server."""

    cause = "timed out"


class ConnectTimeout(TransportTimeout):
    """No connection within ``connect_timeout``: a host that never answers (a wrong
    address behind a firewall, a machine that is off)."""

    cause = "connection timed out (the host never answered)"


class NetworkError(TransportError):
    """The connection failed (reset, closed, a broken reply stream)."""


class ConnectError(NetworkError):
    """No connection could be opened; ``cause`` says why when the transport knows
    (``'connection refused'``, ``'cannot resolve the host name'``)."""


class RemoteDisconnected(NetworkError):
    """The server closed the connection before it finished its reply."""

    cause = "connection dropped by the server"


class DecodingError(TransportError):
    """A 2xx reply whose body is not JSON (a proxy's error page, a truncated body)."""

    cause = "malformed JSON reply"


class ConfigError(HarnessError):
    """A config, dataset or template is wrong; the message names file, line and field.

    ``exit_code`` is what the CLI exits with (2, like a usage error).
    """

    exit_code = 2

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        self.path, self.line, self.field = path, line, field
        where = ""
        if path is not None:
            where = str(path) + (f":{line}" if line is not None else "")
        if field is not None:
            where = f"{where} field {field!r}" if where else f"field {field!r}"
        super().__init__(f"{where}: {message}" if where else message)


class DatasetError(ConfigError):
    """A data file is malformed, empty or unreadable."""


class StoreError(HarnessError):
    """The SQLite store failed or is unusable (a full disk, say); the message names the
    file and the cause. Nothing already stored is lost: the run cannot go on, and the
    same command resumes it once the cause is fixed.

    ``exit_code`` is 2: no run was completed, so the exit code of an incomplete run (1)
    would tell the user the wrong thing.
    """

    exit_code = 2


class SchemaVersionError(StoreError):
    """The work directory was written by an incompatible schema version."""

    exit_code = 2


class StoreCorruptError(StoreError):
    """``harness.db`` is not a SQLite database or is damaged (garbage bytes, a truncated
    copy): the run stops at the first sign of it, so the user can move it away or
    restore it."""


class WorkDirLockedError(StoreError):
    """Another harness process holds the work directory."""

    exit_code = 2


class WorkDirError(StoreError):
    """The work directory cannot be used: it is a file, or it cannot be created or
    written; or (``report`` and ``compare``) it holds no harness results."""

    exit_code = 2


class ModelCallError(HarnessError):
    """A model or judge call failed for good (after retries, or not retryable).

    ``status`` is the HTTP status when there was one; ``kind`` is a short class name
    such as ``'rate_limit'``, ``'server_error'``, ``'timeout'``, ``'connection'``,
    ``'bad_request'`` or ``'bad_response'``; ``cause`` says what went wrong in a few
    words, the same for every call that failed the same way (``'connection refused'``,
    ``'HTTP 500: Internal Server Error'``), so failures can be counted by cause.
    """

    def __init__(self, message: str, *, kind: str, status: int | None = None,
                 attempts: int = 1, cause: str = "") -> None:
        self.kind, self.status, self.attempts = kind, status, attempts
        # Both may quote the server (an error body's message): half a character in it
        # would fail the store's error column, the details file and the terminal.
        self.cause = unicode_text(cause or kind)
        super().__init__(unicode_text(message))

    @property
    def outcome(self) -> str:
        """``cause`` and the attempts it took, e.g. ``'HTTP 500 after 6 attempts'``; a
        429 is retried for a time, not a count, so it says so instead."""
        if self.kind == "rate_limit":
            return f"{self.cause} (still rate limited at the end of its rate_limit_timeout)"
        return f"{self.cause} after {self.attempts} attempt{'s' * (self.attempts != 1)}"


class PermanentModelError(ModelCallError):
    """Every call to this endpoint will fail the same way (bad key, unknown model or URL)."""

    exit_code = 2


class EndpointDownError(PermanentModelError):
    """An endpoint failed attempt after attempt with no answer (see ``harness.breaker``):
    the run stops sending to it. ``cause`` is the last failure, e.g. ``connection
    refused`` or ``HTTP 500: <first line of the body>``."""

    exit_code = 3

    def __init__(self, message: str, *, endpoint: str, cause: str) -> None:
        super().__init__(message, kind="endpoint_down", cause=cause)
        self.endpoint, self.cause = endpoint, cause


class LocalModelError(HarnessError):
    """The embedded local model server could not be started or stopped.

    ``exit_code`` is 2: the run could not start (1 would mean an incomplete run).
    """

    exit_code = 2


class LocalModelMissingError(LocalModelError):
    """The embedded model's packages (the ``[local]`` extra) are not installed: a setup
    mistake, reported like a config error."""


def primary_error(group: BaseExceptionGroup) -> BaseException:
    """The one exception to report from a task group's ``ExceptionGroup``.

    A harness error comes first (it carries the user-facing message), then any other
    error; cancellations caused by the first failure are never the story.
    """
    import anyio

    leaves: list[BaseException] = []

    def walk(exc: BaseException) -> None:
        if isinstance(exc, BaseExceptionGroup):
            for inner in exc.exceptions:
                walk(inner)
        else:
            leaves.append(exc)

    walk(group)
    for exc in leaves:
        if isinstance(exc, HarnessError):
            return exc
    for exc in leaves:
        if not isinstance(exc, anyio.get_cancelled_exc_class()):
            return exc
    return leaves[0]
