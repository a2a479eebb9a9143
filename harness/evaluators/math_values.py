"""The real value of a small LaTeX answer, read without sympy, for telling answers apart.

``math_fast`` decides a wrong answer in another form than its gold (``2\\sqrt{5}`` for
``36``, ``x^3+3x-6`` for ``2``, ``(8,-2)`` for ``83``) when both sides are in the subset
:func:`read` takes and their values are certainly different. The subset is one whose
reading latex2sympy shares: integers and decimals, ``\\frac``, ``\\sqrt`` (with an
integer index), ``\\pi``, powers with a single-digit or braced rational exponent, ``+``,
``-``, ``\\cdot``, ``\\times``, lowercase one-letter variables other than ``d``, ``e``,
``i`` and ``j`` (a differential, constants), a product written by juxtaposition only
where it cannot be a mixed number or a longer name (``2\\sqrt{5}``, ``3x``, ``\\pi r^2``,
not ``2\\frac{1}{2}``, ``xy`` or ``2 3``), and at the top level a bracketed list of such
constants: two in any brackets, more in ``()`` or ``[]``. Anything else is ``None``.

Values are intervals that hold the exact value, whatever floating point rounds (every
operation widens its result by more than its rounding error), so "apart" is never an
artefact of cancellation or of a decimal longer than a float holds. A variable is read
at three fixed points: an expression is its intervals there, and it varies with its
variables when two of them are disjoint.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

#: How far apart two values must be for math-verify to find them unequal whatever it
#: rounds (floats to 6 places).
SURE_APART = 1e-5
#: Values (and every intermediate value) beyond this are not read: there sympy's
#: 15-digit floats, which a decimal in an answer brings in, no longer hold SURE_APART.
MAX_MAGNITUDE = 1e8

_VARIABLES = frozenset("abcfghklmnopqrstuvwxyz")
_PROBES = 3
#: Widening of each result: a basic operation, a correctly rounded conversion and
#: math.pi are within one unit in the last place (2.2e-16); pow is within a few, plus
#: the rounding of a rational exponent to a float, a relative error of about
#: |ln(a^e)| × 1.1e-16, at most 7.6e-14 for results between 1e-300 and 1e8.
_REL, _REL_POW, _ABS = 4e-15, 1e-12, 1e-300
_MAX_EXPONENT = 64
#: Digits of a number beyond what a float (and sympy's Float) holds exactly.
MAX_DIGITS = 15
#: Only the spaces latex2sympy's lexer skips: another (a no-break space, say) makes it
#: fail, and math-verify then reads a number out of the plain text instead.
_SPACES = " \t\n\r"
_TOKEN = re.compile(rf"[{_SPACES}]*(?:(?P<num>[0-9]+(?:\.[0-9]+)?|\.[0-9]+)"
                    r"|(?P<cmd>\\[A-Za-z]+)|(?P<var>[a-z])|(?P<sym>[-+^{}()\[\],]))")

#: A closed interval ``(low, high)`` that holds a value.
Interval = tuple[float, float]


def gap(a: Interval, b: Interval) -> float:
    """How far apart two intervals are (negative when they overlap)."""
    return max(a[0] - b[1], b[0] - a[1])


@dataclass(frozen=True, slots=True)
class Reading:
    """What an answer is worth: one expression's intervals at the probe points and
    whether a variable occurs in it, or the constant items of a bracketed list
    (``items``, with ``values`` empty)."""

    values: tuple[Interval, ...] = ()
    variable: bool = False
    items: tuple[Interval, ...] = ()

    @property
    def constant(self) -> Interval | None:
        """The expression's value if no variable occurs in it."""
        return self.values[0] if self.values and not self.variable else None

    @property
    def varies(self) -> bool:
        """Whether the expression's value certainly depends on its variables."""
        return self.variable and (max(lo for lo, _ in self.values)
                                  > min(hi for _, hi in self.values))


@dataclass(frozen=True, slots=True)
class _Probed:
    points: tuple[Interval, ...]
    variable: bool = False


class _Unread(Exception):
    """The text is outside the subset."""


def _interval(low: float, high: float, rel: float = _REL) -> Interval:
    """``[low, high]`` widened by more than the rounding that computed it; refused
    beyond :data:`MAX_MAGNITUDE`."""
    low, high = low - abs(low) * rel - _ABS, high + abs(high) * rel + _ABS
    if not (math.isfinite(low) and math.isfinite(high)) \
            or max(-low, high) > MAX_MAGNITUDE:
        raise _Unread
    return low, high


def _add(a: Interval, b: Interval) -> Interval:
    return _interval(a[0] + b[0], a[1] + b[1])


def _sub(a: Interval, b: Interval) -> Interval:
    return _interval(a[0] - b[1], a[1] - b[0])


def _mul(a: Interval, b: Interval) -> Interval:
    corners = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
    return _interval(min(corners), max(corners))


def _div(a: Interval, b: Interval) -> Interval:
    if b[0] <= 0 <= b[1]:
        raise _Unread
    corners = (a[0] / b[0], a[0] / b[1], a[1] / b[0], a[1] / b[1])
    return _interval(min(corners), max(corners))


def _pow(a: Interval, exponent: Fraction) -> Interval:
    """``a`` to a rational power, as sympy takes it (real only: a fractional power
    of a negative number is complex there, so refused)."""
    if exponent == 0:
        return 1.0, 1.0
    if exponent < 0:
        return _div((1.0, 1.0), _pow(a, -exponent))
    e = float(exponent)
    if a[0] >= 0:
        return _interval(a[0] ** e, a[1] ** e, _REL_POW)
    if exponent.denominator != 1:
        raise _Unread
    ends = (abs(a[0]) ** e, abs(a[1]) ** e)
    if exponent.numerator % 2:  # odd: increasing
        return _interval(-ends[0], ends[1] if a[1] >= 0 else -ends[1], _REL_POW)
    low = 0.0 if a[1] >= 0 else ends[1]
    return _interval(low, max(ends), _REL_POW)


class _Reader:
    """A recursive-descent reader over the tokens of one answer."""

    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        for m in _TOKEN.finditer(text):
            if m.start() != pos:
                raise _Unread
            kind = m.lastgroup
            assert kind is not None
            self.tokens.append((kind, m[kind]))
            pos = m.end()
        if text[pos:].strip(_SPACES):
            raise _Unread
        self.at = 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.at] if self.at < len(self.tokens) else ("end", "")

    def take(self, token: str) -> None:
        if self.peek()[1] != token:
            raise _Unread
        self.at += 1

    def answer(self) -> Reading:
        if self.peek()[1] in ("(", "["):
            return self.bracketed()
        value = self.expression()
        if self.peek()[0] != "end":
            raise _Unread
        return Reading(values=value.points, variable=value.variable)

    def bracketed(self) -> Reading:
        opening = self.tokens[self.at][1]
        self.at += 1
        items = [self.expression()]
        while self.peek()[1] == ",":
            self.at += 1
            items.append(self.expression())
        closing = self.peek()[1]
        if closing not in (")", "]"):
            raise _Unread
        self.at += 1
        if self.peek()[0] != "end" or len(items) < 2:
            raise _Unread
        # Two items in any brackets are an interval or a pair; more in mismatched ones
        # (``(1, 2, 3]``) latex2sympy reads as something else (equal to 3).
        if len(items) > 2 and opening + closing not in ("()", "[]"):
            raise _Unread
        if any(item.variable for item in items):
            raise _Unread
        return Reading(items=tuple(item.points[0] for item in items))

    def expression(self) -> _Probed:
        negative = self.peek()[1] == "-"
        if negative:
            self.at += 1
        total = self.term()
        if negative:
            total = _Probed(tuple((-hi, -lo) for lo, hi in total.points), total.variable)
        while self.peek()[1] in ("+", "-"):
            op = _sub if self.tokens[self.at][1] == "-" else _add
            self.at += 1
            total = _combine(op, total, self.term())
        return total

    def term(self) -> _Probed:
        product = self.power()
        while True:
            kind, text = self.peek()
            if text in ("\\cdot", "\\times"):
                self.at += 1
            # Juxtaposition: a root, pi or a variable after anything but a variable
            # (``xy`` may be one name); never a number or a fraction (``2\frac12`` is a
            # mixed number to latex2sympy).
            elif not (text in ("\\sqrt", "\\pi")
                      or (kind == "var" and self.tokens[self.at - 1][0] != "var")):
                return product
            product = _combine(_mul, product, self.power())

    def power(self) -> _Probed:
        base = self.atom()
        if self.peek()[1] != "^":
            return base
        self.at += 1
        exponent = self.rational()
        if self.peek()[1] == "^":
            raise _Unread
        return _Probed(tuple(_pow(p, exponent) for p in base.points), base.variable)

    def rational(self) -> Fraction:
        """An exponent: one digit (``x^10`` is ``x^1 0`` in LaTeX), or a braced
        integer or ``\\frac`` of integers, optionally negative."""
        kind, text = self.peek()
        if kind == "num" and len(text) == 1:
            self.at += 1
            return Fraction(int(text))
        self.take("{")
        negative = self.peek()[1] == "-"
        self.at += negative
        if self.peek()[1] == "\\frac":
            self.at += 1
            numerator, denominator = self.integer(braced=True), self.integer(braced=True)
            if denominator == 0:
                raise _Unread
            value = Fraction(numerator, denominator)
        else:
            value = Fraction(self.integer())
        self.take("}")
        if abs(value.numerator) > _MAX_EXPONENT or value.denominator > _MAX_EXPONENT:
            raise _Unread
        return -value if negative else value

    def integer(self, braced: bool = False) -> int:
        if braced:
            self.take("{")
        kind, text = self.peek()
        if kind != "num" or "." in text or len(text) > MAX_DIGITS:
            raise _Unread
        self.at += 1
        if braced:
            self.take("}")
        return int(text)

    def atom(self) -> _Probed:
        kind, text = self.peek()
        self.at += 1
        if kind == "num":
            if sum(c.isdigit() for c in text) > MAX_DIGITS:
                raise _Unread
            value = float(text)
            return _Probed((_interval(value, value),) * _PROBES)
        if kind == "var" and text in _VARIABLES:
            return _Probed(_probe(text), variable=True)
        if text == "\\pi":
            return _Probed((_interval(math.pi, math.pi),) * _PROBES)
        if text == "\\frac":
            return _combine(_div, self.braced(), self.braced())
        if text == "\\sqrt":
            index = 2
            if self.peek()[1] == "[":
                self.at += 1
                index = self.integer()
                self.take("]")
                if not 2 <= index <= _MAX_EXPONENT:
                    raise _Unread
            radicand = self.braced()
            if any(lo < 0 for lo, _ in radicand.points):  # complex to sympy, maybe
                raise _Unread
            return _Probed(tuple(_pow(p, Fraction(1, index)) for p in radicand.points),
                          radicand.variable)
        raise _Unread

    def braced(self) -> _Probed:
        self.take("{")
        value = self.expression()
        self.take("}")
        return value


def _probe(letter: str) -> tuple[Interval, ...]:
    """A variable's values at the probe points: positive, distinct for each letter."""
    base = 1.3 + 0.0917 * (ord(letter) - ord("a"))
    return tuple((base + 0.618 * k,) * 2 for k in range(_PROBES))


def _combine(op: Callable[[Interval, Interval], Interval], a: _Probed, b: _Probed) -> _Probed:
    """``op`` at every probe point."""
    return _Probed(tuple(op(x, y) for x, y in zip(a.points, b.points, strict=True)),
                  a.variable or b.variable)


def read(text: str) -> Reading | None:
    """The value of ``text`` (an answer as latex2sympy gets it: normalized, unboxed),
    or ``None`` when it is outside the subset this module reads."""
    try:
        reader = _Reader(text)
        if not reader.tokens:
            return None
        return reader.answer()
    except (_Unread, ArithmeticError, ValueError):
        return None
