"""Fake servers for benchmarks that run inside the benchmark's own event loop.

A ``harness.testing.FakeOpenAI`` in this process, with ``python -m harness run`` as a
child process (see ``benchlib.ameasure``), lets a benchmark see every request as it
arrives: its time, the model it is for and the status it got.
"""

from __future__ import annotations

import time
from typing import Any

import benchlib as bl

from harness.testing.fake_openai import FakeOpenAI
from harness.testing.replies import loads


class TimedServer(FakeOpenAI):
    """A ``FakeOpenAI`` that logs ``(arrival monotonic s, model, HTTP status)`` per request."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.log: list[tuple[float, str | None, int]] = []
        self.first_judge: float | None = None

    async def _answer(self, request: Any) -> Any:
        arrival = time.monotonic()
        try:  # aiohttp caches the body, so the server reads it again for free
            model = loads(await request.read()).get("model")
        except (ValueError, AttributeError):
            model = None
        if model == bl.JUDGE_MODEL and self.first_judge is None:
            self.first_judge = arrival
        response = await super()._answer(request)
        self.log.append((arrival, model, response.status))
        return response

    def count(self, model: str | None, since: int = 0) -> int:
        """Requests for ``model`` logged from position ``since`` on."""
        return sum(1 for _, m, _ in self.log[since:] if m == model)
