"""Time left, from the rate samples finished at over the last half minute."""

from __future__ import annotations

from collections import deque

#: Seconds of history the rate is measured over: long enough to smooth out a burst of
#: retries, short enough that a resumed run's instant store hits stop counting soon.
WINDOW = 30.0


class Eta:
    """Estimates the time left from ``(time, finished)`` points fed at each refresh."""

    def __init__(self, window: float = WINDOW) -> None:
        self.window = window
        self._points: deque[tuple[float, int]] = deque()

    def update(self, now: float, finished: int) -> None:
        """Record that ``finished`` samples were done at ``now``."""
        self._points.append((now, finished))
        # Keep one point at or before the window's start, so the rate spans the window.
        while len(self._points) > 2 and self._points[1][0] <= now - self.window:
            self._points.popleft()

    def remaining(self, total: int | None) -> float | None:
        """Seconds left at the recent rate; None until a sample finished in the window
        (or while the total is unknown)."""
        if total is None or len(self._points) < 2:
            return None
        (t0, f0), (t1, f1) = self._points[0], self._points[-1]
        if f1 >= total:
            return 0.0
        if f1 <= f0 or t1 <= t0:
            return None
        return (total - f1) * (t1 - t0) / (f1 - f0)


def duration(seconds: float) -> str:
    """``m:ss``, or ``h:mm:ss`` from an hour on."""
    whole = int(seconds + 0.5)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
