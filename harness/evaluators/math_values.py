"""The real value of a small LaTeX answer, read without sympy, for telling answers apart.

``math_fast`` decides a wrong answer in another form than its gold (``2\\sqrt{5}`` for
``36``, ``x^3+3x-6`` for ``2``, ``(8,-2)`` for ``83``) when both sides are in the subset
:func:`read` takes and their values are certainly different. The subset is one whose
reading latex2sympy shares: integers and decimals, ``\\frac``, ``\\sqrt`` (with an
integer index), ``\\pi``, powers with a single-digit or braced constant exponent, ``+``,
``-``, ``\\cdot``, ``\\times``, lowercase one-letter variables other than ``e``, ``i``
and ``j`` (which latex2sympy may read as constants), a product written by juxtaposition
only where it cannot be a mixed number or a longer name (``2\\sqrt{5}``, ``3x``,
``\\pi r^2``, not ``2\\frac{1}{2}``, ``xy`` or ``2 3``), and at the top level a bracketed
list of such constants: two in any brackets, more in ``()`` or ``[]``. Anything else is
``None``.

A variable is read at three fixed points, so an expression is its values there: the
same at every point for a constant, different for one that depends on its variables.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

#: Values beyond this are not read: a float no longer holds them to the precision
#: math_fast compares at.
MAX_MAGNITUDE = 1e12

_VARIABLES = frozenset("abcdfghklmnopqrstuvwxyz")
_PROBES = 3
_TOKEN = re.compile(r"\s*(?:(?P<num>\d+(?:\.\d+)?|\.\d+)|(?P<cmd>\\[A-Za-z]+)"
                    r"|(?P<var>[a-z])|(?P<sym>[-+^{}()\[\],]))")

#: An expression's values at the probe points.
Values = tuple[float, ...]


@dataclass(frozen=True, slots=True)
class Reading:
    """What an answer is worth: one expression's values at the probe points, or the
    constant items of a bracketed list (``items``, with ``values`` empty)."""

    values: Values = ()
    items: tuple[float, ...] = ()

    @property
    def constant(self) -> float | None:
        """The expression's value if it is the same at every probe point."""
        if not self.values or any(v != self.values[0] for v in self.values):
            return None
        return self.values[0]

    @property
    def varies(self) -> bool:
        """Whether the expression's value depends on its variables, beyond doubt."""
        if not self.values:
            return False
        low, high = min(self.values), max(self.values)
        return high - low > 1e-6 * max(1.0, abs(low), abs(high))


def _probe(letter: str) -> Values:
    """A variable's values at the probe points: positive, distinct for each letter."""
    base = 1.3 + 0.0917 * (ord(letter) - ord("a"))
    return tuple(base + 0.618 * k for k in range(_PROBES))


class _Unread(Exception):
    """The text is outside the subset."""


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
        if text[pos:].strip():
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
        values = self.expression()
        if self.peek()[0] != "end":
            raise _Unread
        return Reading(values=values)

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
        constants = [Reading(values=v).constant for v in items]
        if any(c is None for c in constants):
            raise _Unread
        return Reading(items=tuple(c for c in constants if c is not None))

    def expression(self) -> Values:
        negative = self.peek()[1] == "-"
        if negative:
            self.at += 1
        total = self.term()
        if negative:
            total = _map(operator.neg, total)
        while self.peek()[1] in ("+", "-"):
            subtract = self.tokens[self.at][1] == "-"
            self.at += 1
            total = _map(operator.sub if subtract else operator.add, total, self.term())
        return total

    def term(self) -> Values:
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
            product = _map(operator.mul, product, self.power())

    def power(self) -> Values:
        base = self.atom()
        if self.peek()[1] != "^":
            return base
        self.at += 1
        kind, text = self.peek()
        if kind == "num" and len(text) == 1:  # x^10 is x^1 0 in LaTeX
            self.at += 1
            exponent = float(text)
        else:
            exponent = self.constant(self.braced())
        if exponent != int(exponent) and min(base) < 0:
            raise _Unread
        if self.peek()[1] == "^":
            raise _Unread
        return _map(lambda a: math.pow(a, exponent), base)

    def atom(self) -> Values:
        kind, text = self.peek()
        self.at += 1
        if kind == "num":
            return _map(lambda: float(text))
        if kind == "var" and text in _VARIABLES:
            return _probe(text)
        if text == "\\pi":
            return _map(lambda: math.pi)
        if text == "\\frac":
            numerator, denominator = self.braced(), self.braced()
            if min(abs(d) for d in denominator) < 1e-12:
                raise _Unread
            return _map(operator.truediv, numerator, denominator)
        if text == "\\sqrt":
            index = 2.0
            if self.peek()[1] == "[":
                self.at += 1
                index = self.constant(self.expression())
                self.take("]")
                if index != int(index) or index < 2:
                    raise _Unread
            radicand = self.braced()
            if min(radicand) < 0:  # sympy's root of a negative number is complex
                raise _Unread
            return _map(lambda a: a ** (1 / index), radicand)
        raise _Unread

    def braced(self) -> Values:
        self.take("{")
        values = self.expression()
        self.take("}")
        return values

    @staticmethod
    def constant(values: Values) -> float:
        value = Reading(values=values).constant
        if value is None:
            raise _Unread
        return value


def _map(op: Callable[..., float], *args: Values) -> Values:
    """``op`` at every probe point (a constant without ``args``), refused when it fails
    or leaves the range a float holds to the precision compared at."""
    try:
        points = zip(*args, strict=True) if args else [()] * _PROBES
        out = tuple(op(*point) for point in points)
    except (ArithmeticError, ValueError) as exc:
        raise _Unread from exc
    if not all(math.isfinite(v) and abs(v) <= MAX_MAGNITUDE for v in out):
        raise _Unread
    return out


def read(text: str) -> Reading | None:
    """The value of ``text`` (an answer as latex2sympy gets it: normalized, unboxed),
    or ``None`` when it is outside the subset this module reads."""
    try:
        reader = _Reader(text)
        if not reader.tokens:
            return None
        return reader.answer()
    except _Unread:
        return None
