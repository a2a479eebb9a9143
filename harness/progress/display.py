"""Show a run's progress: a live rich display on a terminal, plain lines elsewhere.

On a terminal (rich decides, so ``TERM=dumb`` and ``NO_COLOR`` are honoured) the
display is redrawn twice a second in place and fits the terminal's width. Anywhere else
(CI logs, pipes, files) a plain line is printed every ``interval`` seconds and once at
the end, with no control characters. Notes (``Progress.note``) are printed once each,
above the live display or as their own line.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

import anyio
from rich.console import Console, RenderableType
from rich.live import Live
from rich.spinner import Spinner

from .counters import Progress
from .eta import Eta
from .render import live_view, plain_line

#: Seconds between redraws of the live display (and between looks for new notes).
TICK = 0.5

#: Seconds between plain lines when the output is not a terminal.
INTERVAL = 5.0


class ProgressDisplay:
    """Renders ``progress`` to ``console``: call :meth:`start`, :meth:`refresh` at each
    tick, then :meth:`stop` (which leaves the final state on screen or in the log)."""

    def __init__(self, progress: Progress, console: Console | None = None, *,
                 interval: float = INTERVAL,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.progress = progress
        self.console = console or Console(stderr=True)
        self.interval = interval
        self._clock = clock
        self._eta = Eta()
        self._live: Live | None = None
        self._spinner = Spinner("dots")
        self._notes_shown = 0
        self._last_line: float | None = None

    @property
    def live(self) -> bool:
        """Whether the output is a terminal that can be redrawn in place."""
        return self.console.is_terminal and not self.console.is_dumb_terminal

    def start(self) -> None:
        """Begin showing progress (draws the live display on a terminal)."""
        self._last_line = self._clock()
        self._eta.update(self._clock(), self.progress.results)
        if self.live:
            self._live = Live(self._view(), console=self.console, auto_refresh=False,
                              transient=False)
            self._live.start()

    def refresh(self) -> None:
        """Show new notes and the current counts (a plain line only once per interval)."""
        now = self._clock()
        self._eta.update(now, self.progress.results)
        self._show_notes()
        if self._live is not None:
            self._live.update(self._view(), refresh=True)
        elif self._last_line is None or now - self._last_line >= self.interval:
            self._write_line(now)

    def stop(self) -> None:
        """Show the final state and give the terminal back."""
        self._eta.update(self._clock(), self.progress.results)
        self._show_notes()
        if self._live is not None:
            self._live.update(self._view(final=True), refresh=True)
            self._live.stop()
            self._live = None
        else:
            self._write_line(self._clock())

    def _elapsed(self) -> float:
        return max(self._clock() - self.progress.started, 0.0)

    def _view(self, final: bool = False) -> RenderableType:
        return live_view(self.progress, self._elapsed(), self._eta.remaining(self.progress.total),
                         None if final else self._spinner)

    def _show_notes(self) -> None:
        notes = self.progress.notes
        while self._notes_shown < len(notes):
            note = notes[self._notes_shown]
            self._notes_shown += 1
            if self._live is not None:
                self.console.print(note, markup=False, highlight=False)
            else:
                self._write(note)

    def _write_line(self, now: float) -> None:
        self._last_line = now
        self._write(plain_line(self.progress, self._elapsed(),
                               self._eta.remaining(self.progress.total)))

    def _write(self, text: str) -> None:
        # Straight to the file: a rich Console would wrap a log line at 80 columns.
        stream = self.console.file
        stream.write(text + "\n")
        stream.flush()


async def print_progress(progress: Progress, stream: TextIO | None = None,
                         interval: float = INTERVAL) -> None:
    """Show ``progress`` on ``stream`` (stderr by default) until cancelled; run it in
    the run's task group."""
    display = ProgressDisplay(progress, Console(file=stream) if stream else None,
                              interval=interval)
    display.start()
    try:
        while True:
            await anyio.sleep(TICK)
            display.refresh()
    finally:
        display.stop()
