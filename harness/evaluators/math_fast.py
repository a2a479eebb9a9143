"""The checks math-verify's answer is known for, decided in microseconds without sympy.

Most checks of a MATH-style run compare a prediction written exactly like the gold, or
two plain numbers (``1,000`` and ``1000``, ``0.25`` and ``\\frac{1}{4}``). :func:`fast_detail`
decides those in the parent process and returns the detail ``MATHVerifyEvaluator.score_sample``
would return, ``pred`` included (math-verify's normalized extraction); every other pair
gets ``None`` and goes to the worker pool. It decides only where math-verify's outcome
is certain from the strings:

- **plain numbers** on both sides (integers, with ``,``/``{,}``/``,\\!`` thousands
  separators, decimals, ``\\frac{a}{b}``, ``a/b``, an optional ``\\$``): equal exact
  values are equal; two exact values (no decimal point) that differ are not; a
  decimal that differs from the other side by at least ``1e-5`` is not equal (math-verify
  rounds floats to 6 places). Anything closer (``0.333333`` against ``\\frac13``), huge
  or over-precise decimals, percentages and units are left to math-verify;
- **identical strings** of a tame LaTeX subset (digits, single-letter variables, a few
  commands, small exponents): math-verify parses both the same way, and its string
  comparison of the two extractions then holds. Outside that subset a string may fail
  to parse (then math-verify says "wrong"), or its normalization is not known here.

``tests/test_math_fast.py`` holds every decision to math-verify's own, detail for detail,
on every MATH-500 answer and the extraction corpus.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from .math_forms import rewrite

#: Decimals closer than this to the other side are left to math-verify's rounding.
_SURE_APART = Fraction(1, 100_000)
#: Decimals beyond these are left to math-verify (float precision, not values, decides).
_MAX_DECIMAL = 10**9
_MAX_DIGITS = 15

_GROUPED = r"[1-9]\d{0,2}(?:(?:,|\{,\}|,\\!)\d{3})+"
_NUMBER = re.compile(
    rf"(?P<dollar>\\\$)?(?P<sign>[-+]?)(?:(?P<int>{_GROUPED}|\d+)(?:\.(?P<dec>\d+))?"
    rf"|\.(?P<lead>\d+))")
_FRACTION = re.compile(r"(?P<sign>-?)(?:\\[dt]?frac\{(?P<num>\d+)\}\{(?P<den>\d+)\}"
                       r"|(?P<a>\d+)/(?P<b>\d+))")


class _Value:
    """A plain number as math-verify reads it: its exact value, whether it is written
    with a decimal point (math-verify compares those as rounded floats), its digits."""

    __slots__ = ("value", "decimal", "digits")

    def __init__(self, value: Fraction, decimal: bool, digits: int) -> None:
        self.value, self.decimal, self.digits = value, decimal, digits


def _number(text: str) -> _Value | None:
    """``text`` as a plain number, or ``None`` when it is anything else."""
    m = _NUMBER.fullmatch(text)
    if m is not None:
        whole = re.sub(r"\D", "", m["int"] or "") or "0"
        decimals = m["dec"] or m["lead"] or ""
        value = Fraction(int(whole + decimals), 10 ** len(decimals))
        digits = len((whole + decimals).lstrip("0"))
        return _Value(-value if m["sign"] == "-" else value, bool(decimals), digits)
    m = _FRACTION.fullmatch(text)
    if m is not None:
        num, den = int(m["num"] or m["a"]), int(m["den"] or m["b"])
        if den == 0:
            return None
        value = Fraction(num, den)
        return _Value(-value if m["sign"] else value, False, 0)
    return None


def _number_verdict(gold: _Value, pred: _Value) -> bool | None:
    """Whether math-verify equates two plain numbers; ``None`` when unsure."""
    if gold.decimal or pred.decimal:
        if any(v.decimal and (abs(v.value) >= _MAX_DECIMAL or v.digits > _MAX_DIGITS)
               for v in (gold, pred)):
            return None
        if gold.value == pred.value:
            return True
        return False if abs(gold.value - pred.value) >= _SURE_APART else None
    return gold.value == pred.value


def _shown_number(text: str) -> str:
    """math-verify's normalized string of a plain number (``normalize_latex``'s rules
    that touch one: dollar signs and ``\\!`` go, ``{,}`` is a comma, ``\\dfrac`` is
    ``\\frac``, ``.5`` is ``0.5``, ``0.5`` and ``a/b`` are fractions)."""
    text = text.replace("\\$", "").replace("\\!", "").replace("{,}", ",")
    text = _shown_tame(text)
    if text.startswith("."):
        text = "0" + text
    if text == "0.5":
        return "\\frac{1}{2}"
    m = re.fullmatch(r"(-?\d+)/(-?\d+)", text)
    if m is not None and text == f"{int(m[1])}/{int(m[2])}":
        return f"\\frac{{{int(m[1])}}}{{{int(m[2])}}}"
    return text


#: LaTeX commands of the tame subset: none of normalize_latex's rules rewrites them
#: (but ``\\dfrac``/``\\tfrac`` become ``\\frac``).
_COMMANDS = frozenset({"frac", "dfrac", "tfrac", "sqrt", "pi", "infty", "cdot", "times",
                       "pm", "cup", "theta", "alpha", "beta"})
_TAME_CHARS = re.compile(r"[0-9A-Za-z+\-*/()\[\],. ^{}\\]{1,80}")
_UNTAME = re.compile(
    r"[A-Za-z]{2}"             # a word: units, "and"/"or", "inf", "percent" are rewritten
    r"|[\d}\s]\s*[A-Za-z]\s*$"  # a trailing letter after a number: read as a unit
    r"|(?<!\d)\.|\.(?!\d)"      # a dot outside a decimal (".5", "5.")
    r"|\{\s*,"                  # "{,}" is rewritten
    r"|\}\s?\d"                 # "\frac{1}{2}3" is rewritten
    r"|\^(?!\d(?!\d)|[A-Za-z]|\{\d{1,2}\}|\{[A-Za-z]\})")  # only small exponents
_BRACED_COMMAND = re.compile(r"\\(?:[dt]?frac|sqrt)(?!\{)")


def _tame(text: str) -> bool:
    """Whether ``text`` is in the subset math-verify is known to parse and to keep
    as written (up to ``\\dfrac``)."""
    if not _TAME_CHARS.fullmatch(text) or _BRACED_COMMAND.search(text):
        return False
    if any(c not in _COMMANDS for c in re.findall(r"\\([A-Za-z]*)", text)):
        return False
    if text.count("{") != text.count("}"):
        return False
    return _UNTAME.search(re.sub(r"\\[A-Za-z]+", "\\\\", text)) is None


def _shown_tame(text: str) -> str:
    return re.sub(r"\\[dt]frac", r"\\frac", text).strip()


def fast_detail(prediction: Any, reference: Any) -> dict[str, Any] | None:
    """The detail ``MATHVerifyEvaluator.score_sample(prediction, reference)`` returns,
    when it is certain without running math-verify; else ``None``."""
    from .math_verify import NO_GOLD, _looks_bare

    if reference is None or not str(reference).strip():
        return {"answer": reference, "pred": "" if prediction is None else str(prediction),
                "correct": False, "error": NO_GOLD}
    if prediction is None or not str(prediction).strip():
        return None  # math-verify still parses the gold, which decides the detail
    # The texts math-verify is given (see math_verify._parse).
    gold = rewrite(str(reference).strip(), intervals=False)
    pred = rewrite(str(prediction).strip(), intervals=True)
    gold_number, pred_number = _number(gold), _number(pred)
    if gold_number is not None and pred_number is not None:
        verdict = _number_verdict(gold_number, pred_number)
        if verdict is None:
            return None
        return {"answer": reference, "pred": _shown_number(pred), "correct": verdict}
    if pred == gold and _tame(gold) and _looks_bare(gold):
        return {"answer": reference, "pred": _shown_tame(pred), "correct": True}
    return None
