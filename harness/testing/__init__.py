"""Test helpers: a real, scriptable fake of the OpenAI chat and text completions APIs
(``FakeOpenAI``), and a transport answered by a function (``MockTransport``).

The server names are imported lazily so that ``python -m harness.testing.fake_openai`` does
not find its own module already imported by this package (runpy warns about that, and the
test suite turns warnings into errors).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_exports
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

#: Public name → the module defining it, imported on first use.
_EXPORTS = {"FakeOpenAI": "fake_openai", "Responder": "fake_openai", "Stats": "fake_openai"}

__all__ = [
    "FAULT_KINDS", "FakeOpenAI", "Fault", "FaultPolicy", "MockRequest", "MockResponse",
    "MockTransport", "Reply", "Responder", "Stats", "echo_last_user", "fail_first",
    "fail_for", "fault_rate", "request_key",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
