"""Notations math-verify does not equate on its own, through MATHVerifyEvaluator.

Each equivalence the rewrite adds comes with the near misses it must still refuse.
"""

from __future__ import annotations

import pytest

from harness import MATHVerifyEvaluator
from harness.evaluators.math_forms import rewrite

EQUAL = [
    # (prediction, gold)
    (r"0.\overline{3}", r"\frac13"),
    (r"\frac13", r"0.\overline{3}"),
    (r"0.\overline{36}", r"\frac{4}{11}"),
    (r"0.1\overline{6}", r"\frac16"),
    (r"-0.\overline{6}", r"-\frac23"),
    (r"-2 \le x \le 7", "[-2,7]"),
    (r"-2 \leq x < 7", "[-2,7)"),
    (r"7 \ge x > -2", "(-2,7]"),
    ("x > 3", r"(3,\infty)"),
    (r"x \ge 3", r"[3,\infty)"),
    ("3 < x", r"(3,\infty)"),
    (r"x \le \frac{1}{2}", r"(-\infty,\frac12]"),
    ("½", r"\frac{1}{2}"),
    ("3√13", r"3\sqrt{13}"),
    ("(3, π/2)", r"\left( 3, \frac{\pi}{2} \right)"),
    ("106°", r"106^\circ"),
    ("٢٤٠", "240"),
    ("10 080", r"10,\!080"),
    (r"10\,080", r"10,\!080"),   # a LaTeX thin space between digit groups
    (r"10,\!080", r"10\,080"),
    (r"1\,000", "1000"),
    (r"1\!000", "1000"),
    (r"1\,000\,000", r"1{,}000{,}000"),
]

DIFFERENT = [
    (r"0.\overline{3}", "0.3"),
    (r"0.\overline{6}", r"\frac13"),
    (r"0.\overline{36}", r"\frac{36}{100}"),
    ("x > 3", r"[3,\infty)"),
    (r"x \ge 3", r"(3,\infty)"),
    ("x < 3", r"(3,\infty)"),
    (r"-2 < x \le 7", "[-2,7]"),
    (r"-2 \le x \le 7", "[-2,8]"),
    ("½", r"\frac{1}{3}"),
    ("3√13", r"\sqrt{13}"),
    ("106°", r"107^\circ"),
    ("10 080", "10080.5"),
    (r"1\,000", "0"),          # math-verify alone reads 1\,000 as 0
    (r"10\,080", "90"),        # and 10\,080 as 90
    (r"1\,00", "100"),         # a group of two digits is no thousands group
    (r"0{,}125", "125"),       # a decimal comma, not a separator
]


@pytest.fixture(scope="module")
def evaluator():
    return MATHVerifyEvaluator()


@pytest.mark.parametrize("prediction,gold", EQUAL)
def test_equal_values_in_other_notations_are_correct(evaluator, prediction, gold):
    assert evaluator.score_sample(prediction, gold)["correct"] is True


@pytest.mark.parametrize("prediction,gold", DIFFERENT)
def test_near_misses_stay_wrong(evaluator, prediction, gold):
    assert evaluator.score_sample(prediction, gold)["correct"] is False


@pytest.mark.parametrize("text", [
    "x + y > 3",            # two variables: not an interval
    "x^2 > 4",              # not a bound on x itself
    r"3 < x \text{ or } x < 1",
    "f(x) = 2x + 1",
    r"\frac{1}{2}",
])
def test_only_a_whole_inequality_in_one_variable_becomes_an_interval(text):
    assert rewrite(text) == text
