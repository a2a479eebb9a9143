"""``math_values.read``: the value of an answer in the LaTeX subset it reads, or ``None``.

A reading that differed from latex2sympy's would let the math fast path call a right
answer wrong, so the subset stops wherever latex2sympy's reading is not the obvious
one (``tests/test_math_fast.py`` holds the decisions themselves to math-verify's).
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from harness.evaluators.math_values import gap, read


@pytest.mark.parametrize("text, value", [
    ("2 \\sqrt{5}", 2 * math.sqrt(5)), ("-\\frac{\\pi}{6}", -math.pi / 6),
    ("\\sqrt[3]{8}", 2.0), ("1+2\\sqrt{3}", 1 + 2 * math.sqrt(3)), ("2^{-1}", 0.5),
    ("-2^2", -4.0), ("3 \\cdot 2", 6.0), ("3\\times 2 - 1", 5.0), (".5", 0.5),
    ("\\frac{\\sqrt{21}}{5}", math.sqrt(21) / 5), ("\\sqrt{2}^3", 2 ** 1.5),
    ("-2^3", -8.0), ("4^{\\frac{1}{2}}", 2.0), ("2^{-\\frac{1}{2}}", 2 ** -0.5),
])
def test_constants(text, value):
    reading = read(text)
    assert reading is not None and not reading.variable and not reading.varies
    low, high = reading.constant
    assert low <= value <= high and high - low < 1e-9


@pytest.mark.parametrize("text, value", [
    # Cancellation and decimals longer than a float: the interval still holds the
    # exact value (a float alone read the first as 0.33331 and the last as 0).
    ("\\frac{10^{7}}{3}-3333333", Fraction(1, 3)),
    ("\\frac{1}{10^{7}+0.001-10^{7}}", Fraction(1000)),
    ("30000000.1234567 - 30000000", Fraction("0.1234567")),
    ("0.1000000000000001 - 0.1", Fraction(1, 10**16)),
])
def test_intervals_hold_the_exact_value_whatever_floats_round(text, value):
    reading = read(text)
    if reading is not None:  # or too wide to read at all
        low, high = reading.constant
        assert low <= value <= high


@pytest.mark.parametrize("text", ["\\frac{x}{x}", "x - x + 5", "10^{7}x+\\frac{1}{3}-10^{7}x"])
def test_variables_that_cancel_are_not_constants_and_do_not_vary(text):
    reading = read(text)
    assert reading is not None and reading.constant is None and not reading.varies


@pytest.mark.parametrize("text", ["x^3+3x-6", "2k", "\\pi r^2", "x^2y", "\\frac{11+9a}{20}",
                                  "\\sqrt{x}", "\\frac{1}{2}x"])
def test_expressions_that_depend_on_their_variables(text):
    reading = read(text)
    assert reading is not None and reading.varies and reading.constant is None


def test_a_bracketed_list_of_constants():
    reading = read("( \\frac{3}{2}, -13 )")
    assert reading is not None and reading.values == ()
    (a_low, a_high), (b_low, b_high) = reading.items
    assert a_low <= 1.5 <= a_high and b_low <= -13 <= b_high
    assert len(read("[-\\sqrt{3}, \\pi)").items) == 2


def test_gap_between_intervals():
    assert gap((0.0, 1.0), (3.0, 4.0)) == gap((3.0, 4.0), (0.0, 1.0)) == 2.0
    assert gap((0.0, 2.0), (1.0, 3.0)) < 0


@pytest.mark.parametrize("text", [
    "2\\frac{1}{2}",           # a mixed number to latex2sympy, not a product
    "xy", "2 3", "x2",         # one name or one number to latex2sympy, maybe
    "e", "2i", "j",            # constants to latex2sympy
    "d", "d\\pi", "\\frac{d}{d\\pi}\\pi",  # a differential to latex2sympy
    "x^10", "2^3^2", "x^{y}",  # x^10 is x^1 0; towers; variable exponents
    "\\sqrt{-4}", "\\sqrt[x]{2}", "(-8)^{1/3}", "\\frac{1}{0}",
    "10^{20}", "1" + "0" * 20,  # past what a float holds to the compared precision
    "10^{9}", "10^{12} - 10^{12}", "0.1234567890123456",  # or sympy's 15-digit floats
    "10^{-320}", "\\sqrt[65]{2}", "x^{y}", "x^{0.5}", "2^{\\frac{1}{0}}",
    "(1)", "(x, 1)", "1, 2", "\\{1, 2\\}", "(1, 2) + 1",
    "(1, 2, 3]", "[1, 2, 3)",  # latex2sympy equates these with 3
    "5\xa0-\xa02", "x\u2009+\u20091", "2\x0c\\cdot 5",  # spaces latex2sympy's lexer refuses
    "30^\\circ", "5\\%", "\\text{(A)}", "x = 5", "\\infty", "1/2", "+5", "",
])
def test_outside_the_subset(text):
    assert read(text) is None
