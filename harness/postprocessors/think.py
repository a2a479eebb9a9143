"""``strip-think``: drop the reasoning block of a thinking model's reply."""

from __future__ import annotations

from typing import Any

from ._registry import POSTPROCESSORS
from ._text import as_text, strip_think


@POSTPROCESSORS.register("strip-think", "extract-non-reasoning-content",
                         "extract_non_reasoning_content")
def extract_non_reasoning_content(text: Any, think_start_token: str = "<think>",
                                  think_end_token: str = "</think>") -> str:
    """The reply without ``<think>…</think>`` blocks, stripped; '' on failure.

    A lone closing tag means everything before it is reasoning (the opening tag was
    in the prompt). Unlike OpenCompass, an opening tag that is never closed is a
    failure '' rather than the raw reasoning: the model stopped before answering.
    """
    raw = as_text(text)
    if raw is None:
        return ""
    kept = strip_think(raw, think_start_token, think_end_token)
    return "" if kept is None else kept.strip()
