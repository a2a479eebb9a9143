"""The math fast path returns math-verify's own detail wherever it decides.

``harness.evaluators.math_fast`` decides plain-number and written-alike checks in the
parent process, without math-verify. Every decision it makes here is compared with
``MATHVerifyEvaluator(fast=False).score_sample`` (math-verify as harness calls it: gold
first, harness's rewrites, the bare-answer boxing), field for field: a decision that
differs would change a verdict or the extraction a run records. The pairs are every
MATH-500 answer against itself, realistic replies to it extracted by the shipped
postprocessor, numeric rewritings of it (and the reverse order, a rewritten gold), and
the hand-labelled extraction corpus, a sample of the pairs of two different MATH-500
answers (``bench/check_math_fast.py`` checks all of them) and random answers in and just
outside the LaTeX ``math_values`` reads. The fast path must also decide most of them, or
it saves nothing.
"""

from __future__ import annotations

import pytest

from harness.evaluators.math_fast import fast_detail
from harness.evaluators.math_verify import MATHVerifyEvaluator
from harness.postprocessors import math_postprocess_v2
from harness.testing.corpus import load_corpus
from harness.testing.math_pairs import (
    math500_answers,
    numeric_variants,
    random_answers,
    reply_pairs,
)


@pytest.fixture(scope="module")
def evaluator() -> MATHVerifyEvaluator:
    return MATHVerifyEvaluator(fast=False)


@pytest.fixture(scope="module")
def answers() -> list[str]:
    return math500_answers()


def _disagreements(evaluator: MATHVerifyEvaluator,
                   pairs: list[tuple[str, str]]) -> tuple[int, list[str]]:
    """How many pairs the fast path decides, and each decision math-verify contradicts."""
    decided, wrong = 0, []
    for pred, gold in dict.fromkeys(pairs):
        fast = fast_detail(pred, gold)
        if fast is None:
            continue
        decided += 1
        slow = evaluator.score_sample(pred, gold)
        if fast != slow:
            wrong.append(f"pred={pred!r} gold={gold!r}: fast {fast} != math-verify {slow}")
    return decided, wrong


def test_every_math500_answer_against_itself(evaluator, answers):
    decided, wrong = _disagreements(evaluator, [(a, a) for a in answers])
    assert wrong == []
    # Most answers are plain numbers or tame LaTeX: the fast path must take them.
    assert decided >= 0.95 * len(set(answers)), decided


def test_realistic_replies_extracted_by_the_math500_postprocessor(evaluator, answers):
    pairs = [(math_postprocess_v2(reply), gold)
             for reply, gold in reply_pairs(answers, 2 * len(answers))]
    decided, wrong = _disagreements(evaluator, pairs)
    assert wrong == []
    assert decided >= 0.55 * len(set(pairs)), decided


def test_numeric_rewritings_of_every_answer(evaluator, answers):
    pairs = [(variant, gold) for gold in answers for variant in numeric_variants(gold)]
    decided, wrong = _disagreements(evaluator, pairs)
    assert wrong == []
    assert decided >= 0.4 * len(set(pairs)), decided


def test_rewritten_golds_against_the_written_answer(evaluator, answers):
    # math-verify is not symmetric (the gold's side decides how an equation is read):
    # the written answer as the prediction, each rewriting as the gold.
    pairs = [(gold, variant) for gold in answers for variant in numeric_variants(gold)[6:]]
    decided, wrong = _disagreements(evaluator, pairs)
    assert wrong == []
    assert decided >= 0.4 * len(set(pairs)), decided


def test_extraction_corpus(evaluator):
    rows = [r for r in load_corpus() if r.task == "math"]
    pairs = [(math_postprocess_v2(r.reply), r.reference) for r in rows]
    pairs += [(r.reference, r.reference) for r in rows]
    decided, wrong = _disagreements(evaluator, pairs)
    assert wrong == []
    assert decided >= 0.5 * len(set(pairs)), decided


def test_pairs_of_different_math500_answers(evaluator, answers):
    # Mostly wrong answers of another form than the gold (2\sqrt{5} for 36, a tuple for
    # a number), decided "certainly apart" by their values; every 37th pair.
    distinct = list(dict.fromkeys(answers))
    pairs = [(pred, gold) for gold in distinct for pred in distinct if pred != gold]
    decided, wrong = _disagreements(evaluator, pairs[::37])
    assert wrong == []
    assert decided >= 0.5 * len(pairs[::37]), decided


def test_random_answers_in_and_around_the_subset_read_by_value(evaluator):
    answers = random_answers(300)
    pairs = [pair for i, a in enumerate(answers)
             for pair in ((a, answers[i - 1]), (answers[i - 1], a))]
    decided, wrong = _disagreements(evaluator, pairs)
    assert wrong == []
    assert decided >= 50, decided


def test_pairs_a_review_found_misread_by_value(evaluator):
    # Floats that cancelled (1e12/3 - 333333333333 read as 0.33331), a decimal longer
    # than a float holds, variables that cancel at a huge scale, and latex2sympy's
    # differential ("d\\pi" is one token), spaces its lexer refuses: each was decided
    # "apart" where math-verify finds the two equal.
    pairs = [
        ("\\frac{10^{12}}{3}-333333333333", "\\frac{1}{3}"),
        ("\\frac{10^{7}}{3}-3333333", "\\frac{1}{3}"),
        ("\\frac{1}{10^{7}+0.001-10^{7}}", "1000"),
        ("3\\cdot 10^{11}+\\frac{1}{10}-3\\cdot 10^{11}", "0.1"),
        ("10^{10}x+\\frac{1}{3}-10^{10}x", "\\frac{1}{3}"),
        ("10^{7}x+\\frac{1}{3}-10^{7}x", "\\frac{1}{3}"),
        ("900000000000.00004000 - 900000000000", "0.00004"),
        ("30000000.00004 - 30000000", "\\frac{1}{25000}"),
        ("\\frac{1}{\\sqrt[32]{10^{-320}}}", "10^{10}"),
        ("\\frac{d}{d\\pi}\\pi", "0"), ("\\frac{d\\pi}{d\\pi}", "0"),
        ("\\frac{d}{d\\pi}x", "0"), ("d\\sqrt{4} - d\\sqrt{2}\\cdot 2", "0"),
        ("[\\frac{10^{12}}{3}-333333333333, \\frac{1}{3}]", "\\frac{1}{3}"),
        ("[\\frac{10^{7}}{3}-3333333, \\frac{1}{3}]", "\\frac{1}{3}"),
    ]
    # A space latex2sympy's lexer refuses (no-break, thin, form feed): math-verify
    # then reads the plain text's last number, 2 here, and equates the two.
    pairs += [("5\xa0-\xa02", "2"), ("2\u2009\\cdot\u20095", "5"), ("(1,\u202f2)", "2"),
              ("x\x0c+\x0c1", "1")]
    pairs += [(gold, pred) for pred, gold in pairs]
    _, wrong = _disagreements(evaluator, pairs)
    assert wrong == []


@pytest.mark.parametrize("pred, gold", [
    ("2 \\sqrt{5}", "36"), ("7\\pi", "2000"), ("-\\frac{\\pi}{6}", "4"),
    ("6.28", "2\\pi"), ("x^3+3x-6", "2"), ("16", "\\frac{11+9a}{20}"), ("2k", "81"),
    ("(8,-2)", "83"), ("83", "(-\\sqrt{3}, \\sqrt{3})"), ("5", "(-2,1)"), ("1", "[1,2]"),
    ("\\left( 3, \\frac{\\pi}{2} \\right)", "-1"),
])
def test_values_certainly_apart_are_decided_unequal(evaluator, pred, gold):
    fast = fast_detail(pred, gold)
    assert fast is not None and fast["correct"] is False
    assert fast == evaluator.score_sample(pred, gold)


@pytest.mark.parametrize("pred, gold", [
    ("0.333333", "\\frac{1}{3}"),      # equal after math-verify's rounding only
    ("0.3333333", "\\frac{1}{3}"),
    ("1,0000", "10000"),               # not a thousands separator: a set to math-verify
    ("5\\%", "5"),                     # percentages
    ("5 \\text{ cm}", "5"),            # units
    ("(6!)!", "(6!)!"),                 # nor one with a huge factorial
    ("x" * 201, "x" * 201),            # nor a long one
    ("10^{10^{10}}", "10^{10^{10}}"),  # a tower math-verify may not finish parsing,
    ("1234567890.5", "1234567890.5"),  # float precision, not the value, decides
    # Equal values in another form are math-verify's to prove (only "apart" is decided
    # by value), and so are values within its rounding.
    ("\\sqrt{2}\\sqrt{2}", "2"), ("10^{6}", "1000000"), ("-2^2", "-4"),
    ("x - x + 5", "5"), ("\\frac{\\pi}{6}", "0.5236"),
    ("[2,2]", "2"),                    # a one-point interval is the set {2}: equal
    ("2\\frac{1}{2}", "2"),            # a mixed number to latex2sympy
    ("e", "1"), ("3i", "1"),           # constants to latex2sympy, not variables
    ("xy", "1"), ("x^10", "1"), ("2^3^2", "5"), ("\\sqrt{-4}", "2"),
    ("(1,2)", "x"), ("(1,2)", "(1,2,3)"), ("1, 2", "1"),
])
def test_defers_where_unsure(pred, gold):
    assert fast_detail(pred, gold) is None


@pytest.mark.parametrize("pred, gold", [
    ("+1,000", "1000"), ("1000", "+1,000"), ("+2{,}500", "2500"), ("+1,000.25", "1000.25"),
    ("\\$+1,000", "1000"), ("+58,500", "58,500"), ("+32,348", "\\$32,\\!348"),
])
def test_a_plus_sign_before_a_grouped_number_is_a_sign_on_both_paths(evaluator, pred, gold):
    # math-verify alone reads "+1,000" as the set {1, 0}; the fast path read it as 1000.
    assert evaluator.score_sample(pred, gold)["correct"] is True
    assert fast_detail(pred, gold) == evaluator.score_sample(pred, gold)


@pytest.mark.parametrize("pred,gold,correct", [
    ("Evelyn", "\\text{Evelyn}", True), ("Evelyn", "Evelyn", True),
    ("east", "\\text{west}", False), ("even", "5", False), ("ellipse", "\\frac{1}{2}", False),
    ("Navin", "x^2 + 1", False), ("7", "Evelyn", False)])
def test_a_word_answer_without_text_is_decided_as_math_verify_does(evaluator, pred, gold,
                                                                    correct):
    # A bare word was not boxed for math-verify: "Evelyn" was an extraction failure.
    assert evaluator.score_sample(pred, gold)["correct"] is correct
    fast = fast_detail(pred, gold)
    assert fast is None or fast == evaluator.score_sample(pred, gold)


@pytest.mark.parametrize("pred, gold, correct", [
    ("10\\,080", "10,\\!080", True), ("1\\,000", "1000", True), ("1\\!000", "1{,}000", True),
    ("+1\\,000\\,000", "1000000", True), ("\\$2\\,500", "2500", True),
    ("1\\,000", "0", False), ("10\\,080", "90", False), ("10\\,080", "10\\,081", False),
])
def test_a_thin_space_between_digit_groups_is_a_separator_on_both_paths(evaluator, pred, gold,
                                                                        correct):
    # math-verify alone reads "1\,000" as 0 and "10\,080" as 90.
    assert evaluator.score_sample(pred, gold)["correct"] is correct
    assert fast_detail(pred, gold) == evaluator.score_sample(pred, gold)


def test_a_missing_reference_is_decided_as_math_verify_does(evaluator):
    for reference in (None, "", "  "):
        assert fast_detail("5", reference) == evaluator.score_sample("5", reference)


def test_shown_strings_come_from_math_verifys_own_settings():
    # The normalizer math_fast loads is latex2sympy2_extended's, with the configuration
    # math-verify reads a boxed answer with.
    from dataclasses import asdict, replace

    from math_verify import LatexExtractionConfig

    from harness.evaluators.math_fast import _normalizer

    normalize = _normalizer()
    assert normalize is not None
    expected = asdict(replace(LatexExtractionConfig().normalization_config, boxed="last"))
    assert asdict(normalize.keywords["config"]) == expected


def test_the_fast_path_never_imports_sympy():
    # The point of the fast path: the parent decides without sympy or math-verify.
    import subprocess
    import sys

    code = ("import sys; from harness.evaluators.math_fast import fast_detail; "
            "assert fast_detail('1,000', '1000')['correct']; "
            "assert fast_detail('\\\\frac{\\\\pi}{2}', '\\\\frac{\\\\pi}{2}')['correct']; "
            "assert fast_detail('2\\\\sqrt{5}', '36')['correct'] is False; "
            "assert not {'sympy', 'math_verify', 'latex2sympy2_extended'} & set(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_number_too_long_for_int_is_left_to_math_verify():
    # int() refuses over 4,300 digits; the fast path must defer, not raise (an exception
    # here made the sample an evaluator error, pending for good).
    evaluator = MATHVerifyEvaluator()
    assert evaluator.fast_score("1" * 5000, "1" * 5000) is None
    assert evaluator.fast_score("1" * 5000, "12") is None
