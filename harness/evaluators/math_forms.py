"""Answer notations math-verify does not equate, rewritten before it compares.

math-verify (0.9) reads ``0.\\overline{3}`` as 0.3 and so refuses ``\\frac13``, and
equates an interval prediction with an inequality gold but not an inequality prediction
with an interval gold (``-2 \\le x \\le 7`` for ``[-2,7]``). :func:`rewrite` turns
repeating decimals into exact fractions (golds and predictions) and a predicted
inequality into its interval, so both comparisons hold. Only an answer that is *wholly*
an inequality in one variable is rewritten; anything else passes through unchanged.
"""

from __future__ import annotations

import re
import unicodedata
from fractions import Fraction

_REPEATING = re.compile(
    r"(?P<sign>-?)(?P<whole>\d*)\.(?P<fixed>\d*)\s*\\(?:overline|bar|dot)\s*\{\s*(?P<rep>\d+)\s*\}"
)


def _repeating(m: re.Match[str]) -> str:
    fixed, rep = m.group("fixed"), m.group("rep")
    whole = int(m.group("whole") or 0)
    # 0.1(6) = (16 - 1) / (10 * 9): digits through one period minus the fixed part.
    value = whole + Fraction(int(fixed + rep) - int(fixed or 0),
                             10 ** len(fixed) * (10 ** len(rep) - 1))
    if m.group("sign"):
        value = -value
    if value.denominator == 1:
        return str(value.numerator)
    sign = "-" if value < 0 else ""
    return f"{sign}\\frac{{{abs(value.numerator)}}}{{{value.denominator}}}"


_LESS = {"<": False, "\\lt": False, "\\le": True, "\\leq": True, "\\leqslant": True,
         "≤": True, "⩽": True}
_GREATER = {">": False, "\\gt": False, "\\ge": True, "\\geq": True, "\\geqslant": True,
            "≥": True, "⩾": True}
_RELATION = re.compile(r"(\\leqslant|\\geqslant|\\leq|\\geq|\\le|\\ge|\\lt|\\gt|[<>≤≥⩽⩾])")
_VARIABLE = re.compile(r"[a-zA-Z]|\\(?:alpha|beta|theta|phi|lambda|mu|omega)")
_INFINITY = re.compile(r"\\infty|∞")
_DELIMS = re.compile(r"^\$+|\$+$|^\\\(|\\\)$")


def _bound(value: str) -> str | None:
    """An endpoint: a constant expression (no variable letter, no relation), or None."""
    value = value.strip()
    if not value or "=" in value or re.search(r"[a-zA-Z]", re.sub(r"\\[a-zA-Z]+", "", value)):
        return None
    return value


def _interval(parts: list[str]) -> str | None:
    """``[lo, op, x, op, hi]`` or ``[x, op, c]`` / ``[c, op, x]`` as an interval."""
    if len(parts) == 5:
        lo, op1, var, op2, hi = (p.strip() for p in parts)
        if not _VARIABLE.fullmatch(var):
            return None
        if op1 in _GREATER and op2 in _GREATER:  # 7 \ge x \ge -2
            lo, hi, op1, op2 = hi, lo, op2, op1
            closed_lo, closed_hi = _GREATER[op1], _GREATER[op2]
        elif op1 in _LESS and op2 in _LESS:
            closed_lo, closed_hi = _LESS[op1], _LESS[op2]
        else:
            return None
        lo_b, hi_b = _bound(lo), _bound(hi)
        if lo_b is None or hi_b is None:
            return None
        return f"{'[' if closed_lo else '('}{lo_b}, {hi_b}{']' if closed_hi else ')'}"
    if len(parts) == 3:
        left, op, right = (p.strip() for p in parts)
        if _VARIABLE.fullmatch(left):
            var_first, const = True, _bound(right)
        elif _VARIABLE.fullmatch(right):
            var_first, const = False, _bound(left)
        else:
            return None
        if const is None or _INFINITY.search(const):
            return None
        upper = (op in _LESS) == var_first  # x < c and c > x bound x from above
        closed = _LESS.get(op, _GREATER.get(op, False))
        if upper:
            return f"(-\\infty, {const}{']' if closed else ')'}"
        return f"{'[' if closed else '('}{const}, \\infty)"
    return None


_VULGAR = {"½": (1, 2), "⅓": (1, 3), "⅔": (2, 3), "¼": (1, 4), "¾": (3, 4), "⅕": (1, 5),
           "⅖": (2, 5), "⅗": (3, 5), "⅘": (4, 5), "⅙": (1, 6), "⅚": (5, 6), "⅛": (1, 8),
           "⅜": (3, 8), "⅝": (5, 8), "⅞": (7, 8)}
_SYMBOLS = {"π": "\\pi ", "∞": "\\infty ", "×": "\\times ", "·": "\\cdot ", "⋅": "\\cdot ",
            "−": "-", "⁄": "/", "²": "^2", "³": "^3", "≤": "\\le ", "≥": "\\ge ",
            "≠": "\\ne ", "θ": "\\theta "}
_ROOT = re.compile(r"√\s*(\((?:[^()]|\([^()]*\))*\)|\d+(?:\.\d+)?|[A-Za-z])")
_DEGREE = re.compile(r"\s*°")
# Digit groups split by a space or a LaTeX spacing (10\,080, 1\!000, 10{,}080, 10,\!080)
# are joined, since math-verify reads 1\,000 as 0; not after a lone 0 (0{,}125 is 0.125).
_DIGIT_GROUPS = re.compile(
    r"(?<![\d.])[1-9]\d{0,2}(?:(?:[ \u00a0\u202f\u2009]|\\[,!]|\{,\}|,\\!)\d{3})+(?![\d.])")


def unicode_math(text: str) -> str:
    """Unicode math as LaTeX math-verify parses: ``½``, ``3√13``, ``π/2``, ``106°``, digits
    of other scripts, ``10 080`` with a space or a LaTeX thin space between its digit
    groups (``10\\,080``)."""
    text = _DIGIT_GROUPS.sub(lambda m: re.sub(r"\D", "", m.group(0)), text)
    if text.isascii():
        return text
    text = "".join(str(unicodedata.decimal(c)) if c.isdecimal() and not c.isascii() else c
                   for c in text)
    for char, (num, den) in _VULGAR.items():
        text = text.replace(char, f"\\frac{{{num}}}{{{den}}}")
    text = _ROOT.sub(lambda m: "\\sqrt{" + m.group(1).removeprefix("(").removesuffix(")") + "}",
                     text)
    text = _DEGREE.sub(lambda m: "^\\circ", text)
    for char, latex in _SYMBOLS.items():
        text = text.replace(char, latex)
    return text


#: A plus sign before the number that starts an answer (``+1,000``, ``$+2{,}500``).
_PLUS = re.compile(r"^(\s*(?:\\?\$\s*)*)\+(?=\s*\d)")


def rewrite(text: str, intervals: bool = True) -> str:
    """``text`` with repeating decimals as fractions and (with ``intervals``), when the
    whole answer is an inequality in one variable, that inequality as an interval; a
    leading ``+`` goes (math-verify reads ``+1,000`` as the set {1, 0}).

    Only predictions need the interval: math-verify already equates an interval
    prediction with an inequality gold, and a gold rewritten to an interval would no
    longer equal an inequality left inside a reply it reads whole."""
    text = unicode_math(text)
    if "+" in text:
        text = _PLUS.sub(r"\1", text)
    if "\\overline" in text or "\\bar" in text or "\\dot" in text:
        text = _REPEATING.sub(_repeating, text)
    if intervals and _RELATION.search(text):
        bare = _DELIMS.sub("", text.strip()).strip()
        interval = _interval(_RELATION.split(bare))
        if interval is not None:
            return interval
    return text
