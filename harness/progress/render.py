"""What the counters look like: a plain line for logs, a rich table for a terminal.

Both show the same buckets. Per stage, ``done``, ``in flight`` and ``failed`` are
disjoint (done means done without failing); ``reused`` counts predictions and verdicts
taken from the store, ``new`` those this run made.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.progress_bar import ProgressBar
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from .counters import Progress, StageCounts
from .eta import duration


def judging(progress: Progress) -> bool:
    """Whether the run has a judge stage (configured, or already at work)."""
    judge = progress.judge
    return bool(judge.calls or judge.submitted or judge.done or judge.in_flight)


def _samples(progress: Progress) -> str:
    if progress.total is None:
        return f"{progress.results} samples"
    percent = 100 * progress.results // progress.total if progress.total else 100
    return f"{progress.results}/{progress.total} samples ({percent}%)"


def _times(elapsed: float, eta: float | None) -> str:
    left = f", ETA {duration(eta)}" if eta is not None else ""
    return f"{duration(elapsed)} elapsed{left}"


def _reuse(progress: Progress) -> str:
    text = f"predictions {progress.cached} reused, {progress.model.ok} new"
    if judging(progress):
        fresh = max(progress.judge.ok - progress.judge_reused, 0)
        text += f"; verdicts {progress.judge_reused} reused, {fresh} new"
    return text


def _stage(name: str, stage: StageCounts, calls: bool) -> str:
    text = f"{name} {stage.ok} done, {stage.in_flight} in flight, {stage.failed} failed"
    if calls:
        text += f", {stage.retries} retries, {stage.rate_limited} 429s"
    return text


def plain_line(progress: Progress, elapsed: float, eta: float | None) -> str:
    """The whole state on one line of plain text (for logs: no control characters)."""
    parts = [_samples(progress), _stage("model calls", progress.model, True),
             _stage("rule checks", progress.rules, False)]
    if judging(progress):
        parts.append(f"judge {progress.judge.queued} queued, "
                     + _stage("", progress.judge, True).lstrip())
    parts += [_reuse(progress), _times(elapsed, eta)]
    return " | ".join(parts)


def _count(value: int, style: str = "") -> Text:
    return Text(str(value), style=style if value else "dim")


def _stage_row(stage: StageCounts, calls: bool, queue_column: bool,
               queue: bool) -> list[Text]:
    blank = Text("")
    row = [_count(stage.ok), _count(stage.in_flight, "cyan"), _count(stage.failed, "red"),
           _count(stage.retries, "yellow") if calls else blank,
           _count(stage.rate_limited, "yellow") if calls else blank]
    if queue_column:
        row.append(_count(stage.queued, "cyan") if queue else blank)
    return row


def live_view(progress: Progress, elapsed: float, eta: float | None,
              spinner: Spinner | None = None) -> RenderableType:
    """The terminal display: a bar with the sample count and times, one row per stage,
    and the reuse line. Every part wraps or shrinks to the console's width; without
    ``spinner`` (the final frame) nothing spins."""
    header = Table.grid(padding=(0, 1), expand=True)
    header.add_column(no_wrap=True)
    header.add_column(no_wrap=True)
    header.add_column(ratio=1, min_width=5)
    header.add_column(justify="right")
    bar = ProgressBar(total=progress.total or 1, completed=progress.results,
                      pulse=progress.total is None)
    header.add_row(spinner or Text(" "), Text(_samples(progress), style="bold"), bar,
                   Text(_times(elapsed, eta)))

    stages = Table(box=None, pad_edge=False, show_edge=False, header_style="dim",
                   padding=(0, 1, 0, 1))
    judge = judging(progress)
    stages.add_column("", no_wrap=True)
    for title in ("done", "in flight", "failed", "retries", "429s") + ("queued",) * judge:
        stages.add_column(title, justify="right")
    stages.add_row(Text("model calls"), *_stage_row(progress.model, True, judge, False))
    stages.add_row(Text("rule checks"), *_stage_row(progress.rules, False, judge, False))
    if judge:
        stages.add_row(Text("judge"), *_stage_row(progress.judge, True, judge, True))
    return Group(header, stages, Text(_reuse(progress), style="dim"))
