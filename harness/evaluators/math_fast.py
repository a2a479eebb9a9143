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
- **identical strings** (after harness's rewrites) that read as a bare answer: math-verify
  parses both from the same text the same way, and its comparison of the two extraction
  strings holds as long as they are not empty (an answer it cannot parse keeps its
  string). Answers it may not parse within its time limit (nested exponents, factorials
  of big numbers, over 200 characters) are left to it;
- **values certainly apart**: answers :mod:`math_values` reads (roots, ``\\pi``,
  fractions, polynomials in one-letter variables, bracketed lists of constants) whose
  values differ beyond any rounding math-verify does: two constants more than ``1e-5``
  apart (the intervals that hold their exact values are), a constant against an
  expression that varies with its variables, a constant against a list of two or more
  distinct items (math-verify's numeric, symbolic and set comparisons all say unequal).
  Only "unequal" is decided this way: proving two forms equal is math-verify's work.

The extraction string (``pred``) comes from latex2sympy2_extended's own ``normalize_latex``,
loaded without the rest of that package (see :func:`_normalizer`).

``tests/test_math_fast.py`` holds its decisions to math-verify's own, detail for detail,
on every MATH-500 answer, the extraction corpus and samples of the pairs
``bench/check_math_fast.py`` checks in full (every pair of two MATH-500 answers, random
answers).
"""

from __future__ import annotations

import itertools
import re
import types
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

from .math_forms import rewrite
from .math_values import MAX_DIGITS, SURE_APART, Reading, gap, read

#: Decimals closer than this to the other side are left to math-verify's rounding.
_SURE_APART = Fraction(str(SURE_APART))
#: Decimals beyond these are left to math-verify (float precision, not values, decides).
_MAX_DECIMAL = 10**9

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


#: Longer answers go to math-verify, which bounds its own work with a timeout.
MAX_CHARS = 200


def _number(text: str) -> _Value | None:
    """``text`` as a plain number, or ``None`` when it is anything else (or too long to
    be worth deciding here: Python refuses ``int()`` of over 4,300 digits)."""
    if len(text) > MAX_CHARS:
        return None
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
        if any(v.decimal and (abs(v.value) >= _MAX_DECIMAL or v.digits > MAX_DIGITS)
               for v in (gold, pred)):
            return None
        if gold.value == pred.value:
            return True
        return False if abs(gold.value - pred.value) >= _SURE_APART else None
    return gold.value == pred.value


@lru_cache(maxsize=1)
def _normalizer() -> Callable[[str], str] | None:
    """latex2sympy2_extended's ``normalize_latex`` with the settings math-verify reads a
    boxed answer with: the string math-verify shows as its extraction. Loaded from its
    own file, which needs only the standard library, so the parent never imports the
    package (sympy, ANTLR). ``None`` if that file is missing or now imports more."""
    import importlib.util
    import sys

    spec = importlib.util.find_spec("latex2sympy2_extended")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "math_normalization.py"
    try:
        source = path.read_text(encoding="utf-8")
    except OSError:
        return None
    if any(line.startswith(("import ", "from ")) and line.split()[1] not in _STDLIB
           for line in source.splitlines()):
        return None
    module = types.ModuleType("harness._math_normalization")
    module.__file__ = str(path)
    sys.modules[module.__name__] = module  # dataclasses look their module up there
    exec(compile(source, str(path), "exec"), module.__dict__)  # noqa: S102
    # math_verify.parser.LatexExtractionConfig's defaults, with boxed="last" as
    # math_verify.parser.extract_latex sets it for a \boxed match.
    config = module.NormalizationConfig(basic_latex=True, units=True, malformed_operators=True,
                                        nits=True, boxed="last", equations=False)
    return partial(module.normalize_latex, config=config)


_STDLIB = frozenset({"re", "dataclasses", "typing", "logging"})


def shown(text: str) -> str | None:
    """math-verify's extraction string of the bare answer ``text`` (read boxed, as
    ``math_verify._parse`` reads it), or ``None`` without the normalizer."""
    normalize = _normalizer()
    return None if normalize is None else normalize(f"\\boxed{{{text}}}")


#: Answers math-verify may not finish parsing within its time limit: nested exponents,
#: factorials of big numbers, long ones.
_HEAVY = re.compile(r"\^\s*\{[^{}]*\^|(?:\d{3,}|\))\s*!")


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
        display = shown(pred)
        return None if display is None else {"answer": reference, "pred": display,
                                             "correct": verdict}
    if pred == gold and len(gold) <= MAX_CHARS and not _HEAVY.search(gold) \
            and _looks_bare(gold):
        # Both sides are parsed from the same text the same way, and math-verify's
        # comparison of the two (non-empty) extraction strings then holds.
        display = shown(pred)
        if display:
            return {"answer": reference, "pred": display, "correct": True}
        return None
    if max(len(gold), len(pred)) <= MAX_CHARS and _looks_bare(pred) and _looks_bare(gold):
        display, gold_shown = shown(pred), shown(gold)
        if display and gold_shown and display != gold_shown \
                and _apart(read(gold_shown), read(display)):
            return {"answer": reference, "pred": display, "correct": False}
    return None


def _apart(gold: Reading | None, pred: Reading | None) -> bool:
    """Whether math-verify certainly finds the two readings unequal (see the module
    docstring); ``False`` when it might not."""
    if gold is None or pred is None:
        return False
    a, b = gold.constant, pred.constant
    if a is not None and b is not None:
        return gap(a, b) > SURE_APART
    for one, other in ((a, pred), (b, gold)):
        if one is None:
            continue
        if other.varies:
            return True
        items = sorted(other.items)
        if len(items) >= 2 and all(gap(x, y) > SURE_APART
                                   for x, y in itertools.pairwise(items)):
            return True
    return False
