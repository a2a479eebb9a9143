"""A run's progress: counters the stages update, and the display that shows them.

``Progress`` holds the counters (``counters``); ``print_progress`` shows them live on a
terminal or as plain periodic lines in a log (``display``), rendered by ``render``.
The display (and rich) is imported on first use: stages and worker processes that only
count never load it.
"""

from typing import Any

from .counters import Progress, StageCounts

__all__ = ["Progress", "ProgressDisplay", "StageCounts", "print_progress"]


def __getattr__(name: str) -> Any:
    if name in ("ProgressDisplay", "print_progress"):
        from . import display

        return getattr(display, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
