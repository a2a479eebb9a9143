"""Every ``\\boxed{…}`` of a reply, for the extractors that read boxes (math, GSM8K, BBH)
without the rest of ``math``'s patterns."""

from __future__ import annotations

from ._lazy_re import compile_lazily

_BOX = compile_lazily(r"\\(?:boxed|fbox)\b\s*")
_BARE = compile_lazily(r"[^\s$]+")  # \boxed 5: up to a space or the closing $


def find_boxed(text: str) -> list[tuple[int, int, str]]:
    """Every complete ``\\boxed{…}`` / ``\\fbox{…}`` / ``\\boxed 5``: (start, end, content).

    Braces nest, and escaped braces (``\\{``) do not count. A box that is never closed
    (a truncated reply) is not an answer and is skipped.
    """
    found: list[tuple[int, int, str]] = []
    if "\\" not in text:  # every box starts with one
        return found
    closing: dict[int, int] | None = None
    for m in _BOX.finditer(text):
        i = m.end()
        if i < len(text) and text[i] == "{":
            closing = brace_pairs(text) if closing is None else closing
            if i in closing:
                found.append((m.start(), closing[i] + 1, text[i + 1:closing[i]]))
        else:
            bare = _BARE.match(text, i)
            if bare and text.startswith("\\boxed", m.start()):  # no bare form of \fbox
                found.append((m.start(), bare.end(), bare.group(0)))
    return found


def brace_pairs(text: str) -> dict[int, int]:
    """Index of each ``{`` that is closed → index of its ``}``, in one pass."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    j = 0
    while j < len(text):
        c = text[j]
        if c == "\\":
            j += 2  # \{ and \} are literal braces
            continue
        if c == "{":
            stack.append(j)
        elif c == "}" and stack:
            pairs[stack.pop()] = j
        j += 1
    return pairs
