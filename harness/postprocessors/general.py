"""``general``: exact-match normalization of short answers (OpenCompass semantics)."""

from __future__ import annotations

from typing import Any

from ._lazy_re import compile_lazily
from ._numeric import normalize_numerals
from ._registry import POSTPROCESSORS
from ._text import prepare

# First line, or first sentence/clause: a dot or comma ends it unless it sits inside
# a number ("3.5", which OpenCompass would cut to "3").
_FIRST_PART = compile_lazily(r"\n|(?<!\d)[.,]|[.,](?!\d)")
# Punctuation goes, except a decimal point between digits.
_PUNCT = compile_lazily(r"(?!(?<=\d)\.(?=\d))[^\w\s]")
_ARTICLES = compile_lazily(r"\b(?:a|an|the)\b")


@POSTPROCESSORS.register("general", "general_postprocess")
def general_postprocess(text: Any) -> str:
    """Short-answer normalization for exact match: ``'The Eiffel Tower.'`` → ``'eiffel tower'``.

    Steps (OpenCompass's, plus NFKC and lower-casing): drop ``<think>`` content; keep
    the first line up to the first ``.`` or ``,``; remove punctuation and the articles
    a/an/the; collapse whitespace. Thousands separators are removed first so ``1,000``
    stays one number, and a decimal point survives (``3.5``, not ``35``).
    """
    reply = prepare(text)
    if not reply:
        return ""
    reply = normalize_numerals(reply)
    first = _FIRST_PART.split(reply, maxsplit=1)[0]
    cleaned = _ARTICLES.sub(" ", _PUNCT.sub("", first.lower()))
    return " ".join(cleaned.split())
