"""A conditional aside after a committed answer ("If instead the pairs were ordered,
there would be \\boxed{20}") neither replaces it nor, by a correction word such as
"instead", "hmm" or "recheck", counts as a change of mind; a visible correction still
replaces the answer, on every path that reads committed answers."""

from __future__ import annotations

import pytest

from harness import (
    bbh_freeform_postprocess,
    bbh_mcq_postprocess,
    gsm8k_postprocess,
    math_postprocess_v2,
)

MATH_KEPT = [
    ("area-if-instead", "So the hexagon's perimeter is $6\\cdot 7 = \\boxed{42}$.\n\nNote: if we "
     "had instead been asked for the area of one triangle, the answer would be "
     "$\\boxed{\\frac{49\\sqrt{3}}{4}}$.", "42"),
    ("area-no-correction-word", "So the perimeter is $\\boxed{42}$.\n\nNote: if we had been "
     "asked for the area of one triangle, the answer would be $\\boxed{\\frac{49\\sqrt{3}}{4}}$.",
     "42"),
    ("final-then-hmm-comparison", "The final answer is $\\boxed{10}$.\n\nHmm, for comparison, "
     "ordered pairs would give $\\boxed{20}$.", "10"),
    ("concluded-then-if-instead", "Therefore the number of unordered pairs is $\\boxed{10}$. If "
     "instead the pairs were ordered, there would be $\\boxed{20}$.", "10"),
]


@pytest.mark.parametrize("name,reply,expected", MATH_KEPT, ids=[c[0] for c in MATH_KEPT])
def test_math_keeps_the_committed_answer_over_a_conditional_aside(name, reply, expected):
    assert math_postprocess_v2(reply) == expected


MATH_REFUSED = [
    # A check after a concluded answer that boxes another number is no correction.
    ("recheck-lower-ranked-box", "So there are $\\boxed{10}$ pairs. Let me recheck with ordered "
     "pairs: $5\\cdot 4 = \\boxed{20}$ ordered pairs, halved gives 10."),
    # Nothing was committed before the aside: two answers, neither settled.
    ("plain-box-then-if-instead", "$\\boxed{10}$. If instead the pairs were ordered, there "
     "would be $\\boxed{20}$."),
    ("alternative-in-one-sentence", "So the answer is $\\boxed{10}$, or if the pairs are "
     "ordered, $\\boxed{20}$."),
]


@pytest.mark.parametrize("name,reply", MATH_REFUSED, ids=[c[0] for c in MATH_REFUSED])
def test_math_correction_word_alone_does_not_replace_an_answer(name, reply):
    assert math_postprocess_v2(reply) == ""


MATH_CORRECTED = [
    ("error-then-declared", "So the answer is $\\boxed{10}$. Actually, I made an error: the "
     "pairs are ordered, so the answer is $\\boxed{20}$.", "20"),
    ("error-then-plain-box", "So the answer is $\\boxed{10}$. Actually, I made an error: the "
     "pairs are ordered: $5\\cdot4=\\boxed{20}$.", "20"),
    ("wait-actually-then-would", "The final answer is $\\boxed{10}$. Wait, actually, ordered "
     "pairs would give $\\boxed{20}$.", "20"),
    ("recheck-then-declared-again", "The final answer is $\\boxed{10}$. Hmm, let me recheck: "
     "$4+6=\\boxed{11}$. So the answer is $\\boxed{11}$.", "11"),
]


@pytest.mark.parametrize("name,reply,expected", MATH_CORRECTED,
                         ids=[c[0] for c in MATH_CORRECTED])
def test_math_visible_correction_still_replaces_the_answer(name, reply, expected):
    assert math_postprocess_v2(reply) == expected


@pytest.mark.parametrize("reply,expected", [
    ("So she makes \\boxed{18} dollars. If instead she sold all 16 eggs, she would make "
     "\\boxed{32}.", "18"),
    ("The answer is 18. Hmm, for comparison, if she sold all eggs the answer would be 32.", "18"),
    ("The answer is 18. Actually, I made a mistake: she sells 11, so the answer is 22.", "22"),
])
def test_gsm8k_conditional_aside_and_correction(reply, expected):
    assert gsm8k_postprocess(reply) == expected


def test_bbh_freeform_conditional_aside_is_no_correction():
    # BBH statements carry no rank, so an aside after one conflicts with it.
    reply = "So the answer is 7. If instead we counted the piano, the answer would be 8."
    assert bbh_freeform_postprocess(reply) == ""
    assert bbh_freeform_postprocess(
        "So the answer is 7. Wait, I forgot the piano, so the answer is 8.") == "8"


def test_bbh_mcq_conditional_aside_is_no_correction():
    reply = ("So the answer is (A). If instead the question asked for the largest, the answer "
             "would be (C).")
    assert bbh_mcq_postprocess(reply) == ""
