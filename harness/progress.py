"""Live per-stage counts: what is in flight, done and failed in each stage.

On a terminal one status line is redrawn twice a second; otherwise (CI, a log file) a
line is printed every ``interval`` seconds, so logs stay short.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

import anyio

if TYPE_CHECKING:
    from .retry import CallStats


@dataclass
class StageCounts:
    """Counters of one stage; ``calls`` are the counters of its endpoints' clients."""

    in_flight: int = 0
    done: int = 0
    failed: int = 0
    calls: list[CallStats] = field(default_factory=list)

    @property
    def retries(self) -> int:
        """Attempts repeated so far by the stage's clients (every retry is shown)."""
        return sum(stats.retries for stats in self.calls)


@dataclass
class Progress:
    """Counters of every stage, updated by the pipeline, read by the printer."""

    total: int | None = None
    model: StageCounts = field(default_factory=StageCounts)
    cached: int = 0
    rules: StageCounts = field(default_factory=StageCounts)
    judge: StageCounts = field(default_factory=StageCounts)
    results: int = 0
    started: float = field(default_factory=time.monotonic)

    def line(self) -> str:
        """One status line."""
        elapsed = time.monotonic() - self.started
        total = f"/{self.total}" if self.total is not None else ""
        parts = [f"{self.results}{total} samples",
                 f"model {self.model.in_flight} in flight, {self.model.done} done, "
                 f"{self.cached} stored, {self.model.failed} failed, "
                 f"{self.model.retries} retries",
                 f"rules {self.rules.in_flight} in flight, {self.rules.done} done, "
                 f"{self.rules.failed} failed"]
        if self.judge.done or self.judge.in_flight or self.judge.failed:
            parts.append(f"judge {self.judge.in_flight} in flight, {self.judge.done} done, "
                         f"{self.judge.failed} failed, {self.judge.retries} retries")
        return " | ".join(parts) + f" | {elapsed:.0f}s"


async def print_progress(progress: Progress, stream: TextIO | None = None,
                         interval: float = 10.0) -> None:
    """Print ``progress`` until cancelled (run it in the pipeline's task group)."""
    stream = stream or sys.stderr
    tty = stream.isatty()
    try:
        while True:
            await anyio.sleep(0.5 if tty else interval)
            if tty:
                stream.write("\r\x1b[2K" + progress.line())
            else:
                stream.write(progress.line() + "\n")
            stream.flush()
    finally:
        if tty:
            stream.write("\r\x1b[2K")
            stream.flush()
