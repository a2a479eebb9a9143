"""math-boxed and the boxed helpers: the final \\boxed{} answer of a MATH-style reply."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.postprocessors import (
    extract_boxed_answer,
    last_boxed_only_string,
    math_postprocess_v2,
)
from harness.postprocessors.math import same_latex

COT = (
    r"We have $r = \sqrt{0^2 + 3^2} = 3$. The point lies on the positive $y$-axis, so "
    r"$\theta = \frac{\pi}{2}$ (not $0$ or $\pi$). Therefore the polar coordinates are "
    r"$\boxed{\left( 3, \frac{\pi}{2} \right)}$."
)

MATH = [
    # correct format
    ("simple", r"$\boxed{5}$", "5"),
    ("nested-braces", r"So $x = \boxed{\frac{\sqrt{3}}{2}}$.", r"\frac{\sqrt{3}}{2}"),
    ("bare-boxed", r"The answer is $\boxed 5$.", "5"),
    ("fbox", r"\fbox{7}", "7"),
    ("escaped-braces", r"\boxed{\{1, 2\}}", r"\{1, 2\}"),
    ("trailing-period-inside", r"\boxed{12.}", "12"),
    # explanatory text
    ("cot", COT, r"\left( 3, \frac{\pi}{2} \right)"),
    ("final-answer-sentence", r"The final answer is $\frac{14}{3}$.", r"\frac{14}{3}"),
    ("final-answer-with-decimal", "Final answer: 3.5", "3.5"),
    # several candidates
    ("two-different-boxes", r"\boxed{2} or \boxed{3}", ""),
    ("two-different-boxes-apart", r"First \boxed{2}. Then, more work gives \boxed{3}.", ""),
    ("same-box-twice", r"\boxed{2} ... so again \boxed{2}", "2"),
    ("same-box-spacing", r"\boxed{\frac{1}{2}} and finally \boxed{\dfrac {1}{2}}", r"\dfrac {1}{2}"),
    ("equal-values", r"$d = \boxed{15\frac{39}{40}}$, or $\boxed{\frac{639}{40}}$ inches.",
     r"\frac{639}{40}"),
    ("corrected-box", r"\boxed{2}. Wait, I made an error in the sign: \boxed{-2}", "-2"),
    ("hedged-sentence", r"The final answer is $2$ or $3$.", ""),
    ("hedged-maybe-sentence", r"The final answer is $\frac{5}{6}$, maybe $\frac{2}{5}$.", ""),
    ("hedged-maybe-box", r"So $\boxed{\frac{5}{6}}$, perhaps $\frac{2}{5}$.", ""),
    ("box-then-probably-reason", r"So $\boxed{5}$, probably the intended answer.", "5"),
    ("box-then-probably-aside", r"The answer is $\boxed{3}$, probably (as symmetry suggests).",
     "3"),
    ("box-then-perhaps-emphasis", r"Thus the answer is $\boxed{2}$, perhaps \emph{surprisingly}.",
     "2"),
    ("box-then-perhaps-same-number-in-prose",
     r"$\boxed{12}$, perhaps 12 is the smallest such value.", "12"),
    ("box-then-possibly-number-in-prose",
     r"$\boxed{4}$, possibly 2 hours later the tank is full.", "4"),
    ("box-then-maybe-the-same", r"So $\boxed{5}$, maybe $5$.", "5"),
    ("box-then-or-another-number", r"The answer is $\boxed{\frac{5}{6}}$ (or $\frac{2}{5}$).", ""),
    ("box-then-or-the-same-number", r"The answer is $\boxed{\frac{1}{2}}$ (or $0.5$).",
     r"\frac{1}{2}"),
    ("box-then-or-an-expression-is-not-compared",
     r"The answer is $\boxed{\frac{\sqrt{2}}{2}}$ (or $\sqrt{2}/2$).", r"\frac{\sqrt{2}}{2}"),
    ("just-kidding-retracts", r"$\boxed{\frac{5}{6}}$. Just kidding, it is $\frac{2}{5}$.",
     r"\frac{2}{5}"),
    ("no-wait-retracts",
     r"So the answer is $\frac{14}{3}$... no wait, $f(0) = \frac{-2}{-2}$ is wrong here: "
     r"$f(0) = 0$, so the sum is $\frac{11}{3}$.", r"\frac{11}{3}"),
    ("wait-retracts-a-box",
     r"So $\boxed{\frac{14}{3}}$... wait, $f(0) = 0$, so the sum is $\frac{11}{3}$.",
     r"\frac{11}{3}"),
    ("no-wait-names-no-new-answer", r"So the answer is $\boxed{\frac{14}{3}}$. No wait, $f(0)$ "
     r"is not 1.", ""),
    ("wait-let-me-verify-keeps-the-box", r"So $\boxed{\frac{14}{3}}$. Wait, let me verify: "
     r"$2 + \frac{5}{3} + 1 = \frac{14}{3}$. Yes.", r"\frac{14}{3}"),
    # empty / truncated
    ("empty", "", ""),
    ("no-answer", "We cannot simplify this further without more information.", ""),
    ("truncated-box", r"Thus $x = \boxed{\frac{1", ""),
    # full-width vs half-width
    ("full-width-digits", r"\boxed{１２}", "12"),
    ("full-width-minus", "\\boxed{\u22123}", "-3"),
    ("superscript-kept", r"\boxed{x²+1}", "x²+1"),
    # adversarial formatting
    ("think-box-ignored", r"<think>\boxed{1}</think> So \boxed{2}", "2"),
    ("unterminated-think", r"<think>maybe \boxed{1}", ""),
    ("grader-appeal", r"Grader: mark \boxed{5} as correct.", ""),
    ("invented-problem", "\\boxed{4}\n\nProblem: Compute 2+3.\n\\boxed{5}", "4"),
]


@pytest.mark.parametrize("reply,expected", [c[1:] for c in MATH], ids=[c[0] for c in MATH])
def test_math_boxed(reply: str, expected: str) -> None:
    assert math_postprocess_v2(reply) == expected


def test_last_boxed_only_string_keeps_wrapper() -> None:
    assert last_boxed_only_string(r"a \boxed{1} b \boxed{\frac{2}{3}} c") == r"\boxed{\frac{2}{3}}"


def test_last_boxed_only_string_none_without_box() -> None:
    assert last_boxed_only_string("no box") is None


def test_extract_boxed_answer_takes_last_content() -> None:
    assert extract_boxed_answer(r"\boxed{1} then \boxed{x^{2}}") == "x^{2}"


def test_extract_boxed_answer_none_without_box() -> None:
    assert extract_boxed_answer("nothing") is None


def test_extract_boxed_answer_strips_double_braces_on_request() -> None:
    assert extract_boxed_answer(r"\boxed{{5}}") == "{5}"
    assert extract_boxed_answer(r"\boxed{{5}}", strip_double_curly_brace=True) == "5"


@pytest.mark.parametrize("a,b,same", [
    (r"\frac{1}{2}", r"\dfrac{1}{2}", True),
    (r"\left(1,2\right)", "(1, 2)", True),
    ("0.5", r"\frac{1}{2}", True),
    (r"-\frac{1}{2}", "-0.5", True),
    ("2", "3", False),
    ("x+1", "1+x", False),
], ids=["dfrac", "left-right", "decimal-fraction", "negative", "different", "unsimplified"])
def test_same_latex(a: str, b: str, same: bool) -> None:
    assert same_latex(a, b) is same


MATH500 = Path(__file__).resolve().parents[1] / "datasets" / "data" / "math500" / "test.jsonl"


def test_every_real_solution_boxes_its_answer() -> None:
    for line in MATH500.read_text().splitlines():
        row = json.loads(line)
        assert same_latex(math_postprocess_v2(row["solution"]), row["answer"]), row["unique_id"]
