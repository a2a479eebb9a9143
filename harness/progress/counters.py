"""The counters a run updates as samples move through its stages.

The stages increment them; the display (``harness.progress.display``) only reads them.
Plain ints on purpose: one event loop updates them, so no locking is needed, and an
increment costs nothing next to a model call.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..retry import CallStats


@dataclass
class StageCounts:
    """Counters of one stage; ``calls`` are the counters of its endpoints' clients.

    ``done`` counts finished work, failures included; ``failed`` is the part of it that
    failed. ``submitted`` counts work handed to the stage, where the stage has a queue;
    ``reused`` the part of ``done`` served from the store; ``offloaded`` the part done
    in a worker process as part of a backlog (rule checks only).
    """

    in_flight: int = 0
    done: int = 0
    failed: int = 0
    submitted: int = 0
    reused: int = 0
    offloaded: int = 0
    calls: list[CallStats] = field(default_factory=list)

    @property
    def ok(self) -> int:
        """Finished without failing."""
        return max(self.done - self.failed, 0)

    @property
    def queued(self) -> int:
        """Handed to the stage, neither started nor finished (0 where not counted)."""
        return max(self.submitted - self.done - self.in_flight, 0)

    @property
    def retries(self) -> int:
        """Attempts repeated so far by the stage's clients (every retry is shown)."""
        return sum(stats.retries for stats in self.calls)

    @property
    def rate_limited(self) -> int:
        """Attempts the stage's endpoints answered with 429 so far."""
        return sum(stats.rate_limited for stats in self.calls)


@dataclass
class Progress:
    """Counters of every stage, updated by the pipeline, read by the display."""

    #: Samples the run will finish (set once the models are known).
    total: int | None = None
    #: Model calls: ``done``/``failed`` are requests made by this run.
    model: StageCounts = field(default_factory=StageCounts)
    #: Predictions reused from the store or from another sample's call of this run (no
    #: model call made for them).
    cached: int = 0
    rules: StageCounts = field(default_factory=StageCounts)
    #: Judge verdicts: ``done`` includes the verdicts reused from the store.
    judge: StageCounts = field(default_factory=StageCounts)
    #: Samples finished (scored, judged or failed).
    results: int = 0
    started: float = field(default_factory=time.monotonic)
    #: Messages for the user about slow set-up steps, shown once each, in order.
    notes: list[str] = field(default_factory=list)

    @property
    def judge_reused(self) -> int:
        """Verdicts reused from the store or another sample's call (no judge call made for
        them)."""
        return self.judge.reused

    @judge_reused.setter
    def judge_reused(self, value: int) -> None:
        self.judge.reused = value

    def note(self, message: str) -> None:
        """Tell the user what a slow step is doing (safe to call from a worker thread:
        a list append is atomic)."""
        self.notes.append(message)

    def line(self) -> str:
        """One plain status line (no ETA: that needs the display's rate window)."""
        from .render import plain_line

        return plain_line(self, time.monotonic() - self.started, None)
