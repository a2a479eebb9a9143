"""``math-boxed``: the final ``\\boxed{…}`` answer of a MATH-style reply, and its helpers."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from ._commit import HEDGE, Candidate, commit, committed_clause
from ._registry import POSTPROCESSORS
from ._text import as_text, prepare, span_after

_BOX = re.compile(r"\\(?:boxed|fbox)\b\s*")
_BARE = re.compile(r"[^\s$]+")  # \boxed 5: up to a space or the closing $


def find_boxed(text: str) -> list[tuple[int, int, str]]:
    """Every complete ``\\boxed{…}`` / ``\\fbox{…}`` / ``\\boxed 5``: (start, end, content).

    Braces nest, and escaped braces (``\\{``) do not count. A box that is never closed
    (a truncated reply) is not an answer and is skipped.
    """
    found = []
    closing: dict[int, int] | None = None
    for m in _BOX.finditer(text):
        i = m.end()
        if i < len(text) and text[i] == "{":
            closing = _brace_pairs(text) if closing is None else closing
            if i in closing:
                found.append((m.start(), closing[i] + 1, text[i + 1:closing[i]]))
        else:
            bare = _BARE.match(text, i)
            if bare and text.startswith("\\boxed", m.start()):  # no bare form of \fbox
                found.append((m.start(), bare.end(), bare.group(0)))
    return found


def _brace_pairs(text: str) -> dict[int, int]:
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


def last_boxed_only_string(text: Any) -> str | None:
    """The last ``\\boxed{…}`` (or ``\\fbox{…}``) with its wrapper, or None (OpenCompass)."""
    raw = as_text(text)
    boxes = find_boxed(raw) if raw else []
    return raw[boxes[-1][0]:boxes[-1][1]] if boxes else None


def extract_boxed_answer(text: Any, strip_double_curly_brace: bool = False) -> str | None:
    """The content of the last ``\\boxed{…}``, or None (OpenCompass).

    With ``strip_double_curly_brace``, ``\\boxed{{5}}`` gives ``5``, not ``{5}``.
    """
    raw = as_text(text)
    boxes = find_boxed(raw) if raw else []
    if not boxes:
        return None
    content = boxes[-1][2].strip()
    if strip_double_curly_brace and _brace_pairs(content).get(0) == len(content) - 1:
        content = content[1:-1].strip()
    return content


_LATEX_NOISE = re.compile(r"\s+|\\left|\\right|\\[!,;: ]|\\displaystyle")


def _latex_key(s: str) -> str:
    return _LATEX_NOISE.sub("", re.sub(r"\\[dt]frac", r"\\frac", s))


_SIMPLE_NUMBER = re.compile(
    r"(?P<sign>-?)(?:(?P<whole>\d+)?\\frac\{(?P<num>\d+)\}\{(?P<den>\d+)\}"
    r"|(?P<dec>\d+(?:\.\d+)?|\.\d+))"
)


def _as_fraction(s: str) -> Fraction | None:
    """The value of a plain number, fraction or mixed number in LaTeX, else None."""
    m = _SIMPLE_NUMBER.fullmatch(_latex_key(s).replace("{,}", ""))
    if not m:
        return None
    if m.group("dec") is not None:
        value = Fraction(m.group("dec"))
    elif int(m.group("den")) == 0:
        return None
    else:
        value = int(m.group("whole") or 0) + Fraction(int(m.group("num")), int(m.group("den")))
    return -value if m.group("sign") else value


def same_latex(a: str, b: str) -> bool:
    """Whether two boxed answers are the same answer.

    Equal ignoring spacing and sizing commands, or plain numbers of equal value
    (``15\\frac{39}{40}`` and ``\\frac{639}{40}``, ``0.5`` and ``\\frac{1}{2}``).
    Anything richer is compared as written: two different expressions are a failure.
    """
    if _latex_key(a) == _latex_key(b):
        return True
    fa, fb = _as_fraction(a), _as_fraction(b)
    return fa is not None and fa == fb


def _clean(content: str) -> str:
    content = content.strip()
    content = re.sub(r"^\$+|\$+$", "", content).strip()
    return content[:-1].rstrip() if content.endswith(".") else content


_FINAL = re.compile(r"(?i:\b(?:the\s+)?(?:final\s+)?answer\s*(?:is|:)\s*[:：]?)")
# LaTeX answers may contain ! and ?-free text only rarely, but "3!" is a factorial:
# the statement ends at a newline or a full stop only.
_STATEMENT_END = re.compile(r"\n|\.(?=\s|$)")
_MATH_DELIMS = re.compile(r"\$+|\\\(|\\\)|\\\[|\\\]")


def _stated(reply: str) -> Any:
    """The answer of the last committed "the final answer is …" sentence, or None."""
    cands = []
    for m in _FINAL.finditer(reply):
        if not committed_clause(reply, m.start()):
            continue
        span = span_after(reply, m.end(), _STATEMENT_END)
        if re.search(r"\$\s*or\s*\$|\bor\b", span):
            cands.append(Candidate(m.start(), m.end(), HEDGE))  # "2 or 3"
            continue
        value = _clean(_MATH_DELIMS.sub("", span))
        if value:
            cands.append(Candidate(m.start(), m.end() + len(span), value))
    return commit(cands, reply, same_latex) if cands else None


@POSTPROCESSORS.register("math-boxed", "boxed", "math_postprocess_v2")
def math_postprocess_v2(text: Any) -> str:
    """The content of the final ``\\boxed{…}`` (nested braces, ``\\boxed 5``, ``\\fbox``).

    Boxes inside ``<think>`` do not count. The same answer boxed twice is fine; two
    *different* boxed answers are a failure '' unless the model visibly corrects itself
    between them. Without a box, a "The final answer is $…$" sentence counts (as in
    OpenCompass). Unlike OpenCompass, no box and no such sentence is '' instead of the
    first sentence of the reply.
    """
    reply = prepare(text, unicode="width")
    if not reply:
        return ""
    boxes = [Candidate(s, e, _clean(c)) for s, e, c in find_boxed(reply)]
    if boxes:
        return commit(boxes, reply, same_latex) or ""
    return _stated(reply) or ""
