"""``math_values.read``: the value of an answer in the LaTeX subset it reads, or ``None``.

A reading that differed from latex2sympy's would let the math fast path call a right
answer wrong, so the subset stops wherever latex2sympy's reading is not the obvious
one (``tests/test_math_fast.py`` holds the decisions themselves to math-verify's).
"""

from __future__ import annotations

import math

import pytest

from harness.evaluators.math_values import read


@pytest.mark.parametrize("text, value", [
    ("2 \\sqrt{5}", 2 * math.sqrt(5)), ("-\\frac{\\pi}{6}", -math.pi / 6),
    ("\\sqrt[3]{8}", 2.0), ("1+2\\sqrt{3}", 1 + 2 * math.sqrt(3)), ("2^{-1}", 0.5),
    ("-2^2", -4.0), ("3 \\cdot 2", 6.0), ("3\\times 2 - 1", 5.0), (".5", 0.5),
    ("\\frac{\\sqrt{21}}{5}", math.sqrt(21) / 5), ("\\sqrt{2}^3", 2 ** 1.5),
    ("\\frac{x}{x}", 1.0), ("x - x + 5", 5.0),
])
def test_constants(text, value):
    reading = read(text)
    assert reading is not None and reading.constant == pytest.approx(value)
    assert not reading.varies


@pytest.mark.parametrize("text", ["x^3+3x-6", "2k", "\\pi r^2", "x^2y", "\\frac{11+9a}{20}",
                                  "\\sqrt{x}", "\\frac{1}{2}x"])
def test_expressions_that_depend_on_their_variables(text):
    reading = read(text)
    assert reading is not None and reading.varies and reading.constant is None


def test_a_bracketed_list_of_constants():
    reading = read("( \\frac{3}{2}, -13 )")
    assert reading is not None and reading.items == (1.5, -13.0) and reading.values == ()
    assert read("[-\\sqrt{3}, \\pi)").items == (-math.sqrt(3), math.pi)


@pytest.mark.parametrize("text", [
    "2\\frac{1}{2}",           # a mixed number to latex2sympy, not a product
    "xy", "2 3", "x2",         # one name or one number to latex2sympy, maybe
    "e", "2i", "j",            # constants to latex2sympy
    "x^10", "2^3^2", "x^{y}",  # x^10 is x^1 0; towers; variable exponents
    "\\sqrt{-4}", "\\sqrt[x]{2}", "(-8)^{1/3}", "\\frac{1}{0}",
    "10^{20}", "1" + "0" * 20,  # past what a float holds to the compared precision
    "(1)", "(x, 1)", "1, 2", "\\{1, 2\\}", "(1, 2) + 1",
    "(1, 2, 3]", "[1, 2, 3)",  # latex2sympy equates these with 3
    "30^\\circ", "5\\%", "\\text{(A)}", "x = 5", "\\infty", "1/2", "+5", "",
])
def test_outside_the_subset(text):
    assert read(text) is None
