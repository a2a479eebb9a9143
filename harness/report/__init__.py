"""``python -m harness report``: one self-contained HTML page about a work directory.

The page holds a summary table (datasets × models), a breakdown chart and a sample
browser per (model, dataset), and what judging cost. It needs no network: styles,
script, charts (inline SVG) and data (a JSON island) are all in the file::

    path = write_report("outputs/gsm8k_demo")            # → outputs/gsm8k_demo/report.html

Modules: :mod:`.workdir` reads the files a run wrote, :mod:`.data` turns them into
what the page shows (pure functions), :mod:`.render` and :mod:`.svg` write HTML,
:mod:`.assets` holds the inline CSS and script.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from ..errors import ConfigError
from .data import DEFAULT_CAP, gather
from .render import render_html

__all__ = ["DEFAULT_CAP", "gather", "render_html", "write_report"]


def write_report(work_dir: str | Path, output: str | Path | None = None,
                 cap: int = DEFAULT_CAP) -> Path:
    """Write the report of ``work_dir`` (default ``WORK_DIR/report.html``); return its path.

    Written to a temporary file and renamed, so a browser reloading the page never sees
    half a report.
    """
    out = Path(output) if output is not None else Path(work_dir) / "report.html"
    html = render_html(gather(work_dir, cap))
    tmp = out.with_name(out.name + ".tmp")
    try:
        if out.is_dir():  # os.replace would fail only after the whole page was written
            raise IsADirectoryError(f"{out} is a directory; name the report's file")
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(html, encoding="utf-8")
        os.replace(tmp, out)
    except OSError as exc:
        with contextlib.suppress(OSError):  # no half-written page left beside it
            tmp.unlink()
        raise ConfigError(f"cannot write the report: {exc}", field="--output") from exc
    return out
