"""A hand-made horizontal bar chart in inline SVG: no library, no script, no network.

One bar per category, its length proportional to the count, with the count and the
share of the total written beside it, so the chart reads without hovering and prints.
"""

from __future__ import annotations

from html import escape
from typing import Any

#: Bar colour per category (colour-blind-safe where it matters: green vs orange/red).
COLORS = {
    "rule_correct": "#2e7d32", "correct": "#2e7d32", "judge_correct": "#2e7d32",
    "judge_rescued": "#1e88e5", "wrong": "#c62828", "extract_failed": "#ef6c00",
    "unparsed": "#f9a825", "error": "#616161", "unscored": "#78909c",
}

_LABEL_W, _BAR_W, _VALUE_W, _ROW_H, _BAR_H = 150, 360, 110, 26, 18


def bar_chart(bars: list[dict[str, Any]], title: str) -> str:
    """SVG markup for ``bars`` (``key``, ``label``, ``count``); every text is escaped."""
    total = sum(b["count"] for b in bars)
    width = _LABEL_W + _BAR_W + _VALUE_W
    height = _ROW_H * len(bars) + 6
    parts = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" role="img" '
             f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
             f'aria-label="{escape(title)}"><title>{escape(title)}</title>']
    for i, bar in enumerate(bars):
        y = 3 + i * _ROW_H
        share = bar["count"] / total if total else 0.0
        # A non-zero count always shows a sliver, so a rare failure is not invisible.
        length = max(2.0, share * _BAR_W) if bar["count"] else 0.0
        color = COLORS.get(bar["key"], "#9e9e9e")
        mid = y + _BAR_H / 2 + 4
        parts.append(
            f'<g class="bar" data-key="{escape(bar["key"])}">'
            f'<title>{escape(bar["label"])}: {bar["count"]} of {total}</title>'
            f'<text x="{_LABEL_W - 8}" y="{mid:.1f}" text-anchor="end">{escape(bar["label"])}'
            f'</text><rect x="{_LABEL_W}" y="{y}" width="{_BAR_W}" height="{_BAR_H}" '
            f'fill="#eceff1"/><rect x="{_LABEL_W}" y="{y}" width="{length:.1f}" '
            f'height="{_BAR_H}" fill="{color}"/>'
            f'<text x="{_LABEL_W + _BAR_W + 8}" y="{mid:.1f}">{bar["count"]} '
            f'({100 * share:.1f}%)</text></g>')
    parts.append("</svg>")
    return "".join(parts)
