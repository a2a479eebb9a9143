"""Test helpers: a real, scriptable fake of the OpenAI chat and text completions APIs
(``FakeOpenAI``), and a transport answered by a function (``MockTransport``).

The server names are imported lazily so that ``python -m harness.testing.fake_openai`` does
not find its own module already imported by this package (runpy warns about that, and the
test suite turns warnings into errors).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from harness.testing.mock_transport import MockRequest, MockResponse, MockTransport
from harness.testing.replies import (
    FAULT_KINDS,
    Fault,
    FaultPolicy,
    Reply,
    echo_last_user,
    fail_first,
    fail_for,
    fault_rate,
    request_key,
)

if TYPE_CHECKING:
    from harness.testing.fake_openai import FakeOpenAI, Responder, Stats

_LAZY = {"FakeOpenAI", "Responder", "Stats"}

__all__ = [
    "FAULT_KINDS", "FakeOpenAI", "Fault", "FaultPolicy", "MockRequest", "MockResponse",
    "MockTransport", "Reply", "Responder", "Stats", "echo_last_user", "fail_first",
    "fail_for", "fault_rate", "request_key",
]


def __getattr__(name: str) -> Any:
    """Resolve the server names from ``harness.testing.fake_openai`` on first use."""
    if name in _LAZY:
        return getattr(importlib.import_module("harness.testing.fake_openai"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """Module attributes including the lazily imported ones."""
    return sorted(set(globals()) | _LAZY)
