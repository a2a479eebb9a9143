"""The exception tree of harness.

Errors from the transports (``aiohttp``, ``openai``) and ``sqlite3`` are translated at
the boundary (``raise ... from exc``) so callers only ever catch these::

    HarnessError
     ├── ConfigError            bad config, dataset or template (CLI exit code 2)
     │    └── DatasetError       a data file that cannot be read; names file and line
     ├── StoreError             the SQLite work-directory store
     │    ├── SchemaVersionError store written by an incompatible harness version
     │    ├── WorkDirLockedError another process is running on the same work directory
     │    └── WorkDirError       not a work directory (nothing to report or compare)
     ├── ModelCallError         one model or judge call that failed for good
     │    └── PermanentModelError 401/403/404 or unknown model: stops the whole run
     └── LocalModelError        the embedded llama.cpp server could not start

A per-sample failure is *data on the sample's record*, never an exception that ends a
run; only ``PermanentModelError`` (every later call would fail the same way) and the
configuration errors stop a run.
"""

from __future__ import annotations


class HarnessError(Exception):
    """Base class of every error harness raises on purpose."""


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
    """The SQLite store failed or is unusable."""


class SchemaVersionError(StoreError):
    """The work directory was written by an incompatible schema version."""

    exit_code = 2


class WorkDirLockedError(StoreError):
    """Another harness process holds the work directory."""

    exit_code = 2


class WorkDirError(StoreError):
    """The directory holds no harness results (``report`` and ``compare`` need them)."""

    exit_code = 2


class ModelCallError(HarnessError):
    """A model or judge call failed for good (after retries, or not retryable).

    ``status`` is the HTTP status when there was one; ``kind`` is a short class name
    such as ``'rate_limit'``, ``'server_error'``, ``'timeout'``, ``'connection'``,
    ``'bad_request'`` or ``'bad_response'``.
    """

    def __init__(self, message: str, *, kind: str, status: int | None = None,
                 attempts: int = 1) -> None:
        self.kind, self.status, self.attempts = kind, status, attempts
        super().__init__(message)


class PermanentModelError(ModelCallError):
    """Every call to this endpoint will fail the same way (bad key, unknown model or URL)."""

    exit_code = 2


class LocalModelError(HarnessError):
    """The embedded local model server could not be started or stopped."""


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
