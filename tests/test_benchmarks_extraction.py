"""Answer extraction on realistic replies, one table per built-in benchmark.

Replies are modelled on what chat models write: reasoning that names other options and
intermediate numbers before the final answer, markdown, the option's text instead of
its letter, labels and numbers in other spellings. Each case is checked the way the
config scores it: extracted prediction versus the postprocessed gold of a real row.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness import (
    AccEvaluator,
    MATHVerifyEvaluator,
    bbh_freeform_postprocess,
    bbh_mcq_postprocess,
    gsm8k_dataset_postprocess,
    gsm8k_postprocess,
    math_postprocess_v2,
)

DATA = Path(__file__).resolve().parent.parent / "datasets" / "data"


def bbh_row(task: str, index: int = 0) -> dict[str, Any]:
    data = json.loads((DATA / "bbh" / f"{task}.json").read_text(encoding="utf-8"))
    return data["examples"][index]


def jsonl_row(name: str, index: int = 0) -> dict[str, Any]:
    with open(DATA / name / "test.jsonl", encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if i == index:
                return json.loads(line)
    raise IndexError(index)


def ids(table: list[tuple[Any, ...]]) -> list[str]:
    return [case[0] for case in table]


def cases(table: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [case[1:] for case in table]


# --- BBH date_understanding -----------------------------------------------------------
# Row 0: "Today is Christmas Eve of 1937. What is the date tomorrow in MM/DD/YYYY?"
# (A) 12/11/1937 (B) 12/25/1937 (C) 01/04/1938 (D) 12/04/1937 (E) 12/25/2006 (F) 07/25/1937
DATE = bbh_row("date_understanding")
DATE_COT = ("If today is Christmas Eve of 1937, then today's date is December 24, 1937. "
            "The date tomorrow is December 25, 1937, that is 12/25/1937. ")

DATE_CASES = [
    ("exemplar-style-letter", DATE_COT + "So the answer is (B).", "B"),
    ("option-text-instead-of-letter", DATE_COT + "So the answer is 12/25/1937.", "B"),
    ("month-name-date", "Christmas Eve is December 24, so tomorrow is Christmas Day. "
                        "So the answer is December 25, 1937.", "B"),
    ("date-then-reason", "So the answer is 12/25/1937, the day after Christmas Eve.", "B"),
    ("other-options-discussed-first",
     "(A) 12/11/1937 is two weeks earlier and (E) 12/25/2006 has the wrong year. "
     "Tomorrow is 12/25/1937. So the answer is (B).", "B"),
    ("other-option-texts-then-text",
     "12/11/1937 would be 13 days ago and 12/04/1937 three weeks ago. Tomorrow is "
     "12/25/1937. So the answer is 12/25/1937.", "B"),
    ("options-restated-then-text",
     "The options are:\n(A) 12/11/1937\n(B) 12/25/1937\n(C) 01/04/1938\n(D) 12/04/1937\n"
     "(E) 12/25/2006\n(F) 07/25/1937\nTomorrow is December 25, 1937. "
     "So the answer is 12/25/1937.", "B"),
    ("markdown-answer-line", "**Step 1:** Today is 12/24/1937.\n**Step 2:** Add one day.\n\n"
                             "**Answer: (B) 12/25/1937**", "B"),
    ("letter-and-text", "So the answer is (B) 12/25/1937.", "B"),
    ("text-then-letter", "So the answer is 12/25/1937 (B).", "B"),
    ("self-correction-to-text",
     "So the answer is (A). Wait, that is two weeks earlier; tomorrow is the 25th, "
     "so the answer is 12/25/1937.", "B"),
    ("bare-option-text", "12/25/1937", "B"),
    ("bare-letter", "B", "B"),
    # failures
    ("hedge-between-texts", "So the answer is 12/25/1937 or 12/25/2006.", ""),
    ("date-not-an-option", "So the answer is 12/26/1937.", ""),
    ("letter-not-an-option", "So the answer is (G).", ""),
    ("two-answers-no-correction", "The answer is 12/04/1937. So the answer is (B).", ""),
    ("truncated", DATE_COT + "So the answer is", ""),
]


@pytest.mark.parametrize("reply,expected", cases(DATE_CASES), ids=ids(DATE_CASES))
def test_date_understanding(reply: str, expected: str) -> None:
    assert bbh_mcq_postprocess(reply, test_item=DATE) == expected
    gold = bbh_mcq_postprocess(DATE["target"], test_item=DATE)
    assert gold == "B"
    if expected:
        assert AccEvaluator().score_sample(expected, gold)["correct"] is (expected == gold)


# --- BBH logical_deduction_three_objects ------------------------------------------------
# Row 0: quail, blue jay, falcon from the left.
# (A) The blue jay is the second from the left (B) The quail is … (C) The falcon is …
LOGIC = bbh_row("logical_deduction_three_objects")
LOGIC_COT = (
    '(1) The falcon is to the right of the blue jay: "(left) ? blue jay ? falcon ? (right)".\n'
    '(2) The blue jay is to the right of the quail: "(left) ? quail ? blue jay ? (right)".\n'
    '(3) Combining (1) and (2) we get the following ordering: "(left) quail blue jay falcon '
    '(right)".\nAccording to this ordering, the bird that is second from the left is the '
    "blue jay.\nThe blue jay is the second from the left. "
)

LOGIC_CASES = [
    ("exemplar-style", LOGIC_COT + "So the answer is (A).", "A"),
    ("full-option-text",
     LOGIC_COT + "So the answer is: The blue jay is the second from the left.", "A"),
    ("option-text-other-case", "So the answer is the Blue Jay is second from the left.", "A"),
    ("named-object-only", LOGIC_COT + "So the answer is the blue jay.", "A"),
    ("other-options-ruled-out",
     "The quail is the leftmost, so (B) is wrong, and the falcon is the rightmost, so (C) "
     "is wrong too. So the answer is (A).", "A"),
    ("option-discussed-at-line-start",
     "(B) says the quail is second, but the quail is leftmost.\nSo the answer is (A).", "A"),
    # a fragment every option shares names none of them
    ("shared-fragment", "So the answer is second from the left.", ""),
    ("hedge-texts", "So the answer is the quail or the blue jay.", ""),
]


@pytest.mark.parametrize("reply,expected", cases(LOGIC_CASES), ids=ids(LOGIC_CASES))
def test_logical_deduction(reply: str, expected: str) -> None:
    assert bbh_mcq_postprocess(reply, test_item=LOGIC) == expected
    assert bbh_mcq_postprocess(LOGIC["target"], test_item=LOGIC) == "A"


# --- BBH geometric_shapes ---------------------------------------------------------------
# Row 0: a closed path of seven lines. (A) circle (B) heptagon (C) hexagon (D) kite
# (E) line (F) octagon (G) pentagon (H) rectangle (I) sector (J) triangle
SHAPES = bbh_row("geometric_shapes")
SHAPES_COT = (
    'This SVG path element contains "M" and "L" commands.\n'
    "(1) M 55.57,80.69: Move the current point to 55.57,80.69.\n"
    "(2) L 57.38,65.80: Create a line from 55.57,80.69 to 57.38,65.80.\n"
    "This SVG path creates seven consecutive and touching lines, and then returns back to "
    'its starting point, thereby creating a seven-sided shape. "heptagon" is the only '
    "seven-sided polygon on the list. "
)

SHAPES_CASES = [
    ("exemplar-style", SHAPES_COT + "So the answer is (B).", "B"),
    ("shape-name", SHAPES_COT + "So the answer is heptagon.", "B"),
    ("shape-with-article-and-reason",
     "So the answer is a heptagon, since each line touches the next and the path closes.", "B"),
    ("quoted-shape", 'So the answer is "heptagon".', "B"),
    ("other-shapes-mentioned-first",
     '"hexagon" (C) has six sides and "octagon" (F) has eight, so neither fits. '
     "So the answer is heptagon.", "B"),
    ("pronoun-i-is-not-option-i", "I count seven sides. So the answer is (B).", "B"),
    ("letter-i-stated", "So the answer is (I).", "I"),
    ("late-letter-gold", "(K)", ""),  # row 0 lists A-J only
    ("hedge-shapes", "So the answer is kite or rectangle.", ""),
    ("unknown-shape", "So the answer is a star.", ""),
]


@pytest.mark.parametrize("reply,expected", cases(SHAPES_CASES), ids=ids(SHAPES_CASES))
def test_geometric_shapes(reply: str, expected: str) -> None:
    assert bbh_mcq_postprocess(reply, test_item=SHAPES) == expected


def test_reference_side_is_unaffected_by_option_texts() -> None:
    for task in ("date_understanding", "logical_deduction_three_objects", "geometric_shapes"):
        row = bbh_row(task, 3)
        assert bbh_mcq_postprocess(row["target"], test_item=row) == row["target"][1]
        assert bbh_mcq_postprocess(row["target"]) == row["target"][1]


# --- BBH object_counting ----------------------------------------------------------------
# Row 0: a flute, a piano, a trombone, four stoves, a violin, an accordion, a clarinet,
# a drum, two lamps, and a trumpet. How many musical instruments? Gold 8.
COUNT = bbh_row("object_counting")
COUNT_COT = (
    "We first identify the musical instruments on the list and include their quantity in "
    "parentheses:\n- flute (1)\n- piano (1)\n- trombone (1)\n- violin (1)\n- accordion (1)\n"
    "- clarinet (1)\n- drum (1)\n- trumpet (1)\nThe four stoves and two lamps are not "
    "instruments.\nNow, let's add the numbers in parentheses: 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 = 8. "
)

COUNT_CASES = [
    ("exemplar-style", COUNT_COT + "So the answer is 8.", "8"),
    ("number-word", COUNT_COT + "So the answer is eight.", "8"),
    ("capitalized-number-word", "So the answer is Eight.", "8"),
    ("with-unit", "So the answer is 8 musical instruments.", "8"),
    ("a-total-of", "So the answer is a total of 8.", "8"),
    ("i-have", "So the answer is: I have eight musical instruments.", "8"),
    ("bold", "Total: **8**\n\nSo the answer is **8**.", "8"),
    ("answer-colon", COUNT_COT + "\n\nAnswer: 8", "8"),
    ("number-then-word", "So the answer is 8 (eight).", "8"),
    ("correction", "So the answer is 14. Wait, I made a mistake: the four stoves and two lamps "
                   "are not instruments, so the answer is 8.", "8"),
    ("contrast", "So the answer is 8, not 14.", "8"),
    ("hedge", "So the answer is 8 or 9.", ""),
    ("no-statement", COUNT_COT.rstrip(), ""),
    # numbers in an aside or in a clause of what is not counted are not the count
    ("aside-in-parentheses",
     "You have 8 musical instruments (the 4 stoves and 2 lamps are not instruments).", "8"),
    ("aside-sentence-in-parentheses",
     "You have 8 musical instruments. (The stoves and lamps are not instruments.)", "8"),
    ("aside-on-its-own-line",
     "So you have 8 musical instruments.\n(The four stoves and two lamps are not instruments.)",
     "8"),
    ("excluded-items-clause",
     "So you have 8 instruments in total; the four stoves and two lamps don't count.", "8"),
    ("excluded-items-sentence",
     "So you have 8 musical instruments. The four stoves and two lamps are not instruments.",
     "8"),
    ("excluding", "I count 8 instruments, excluding the 4 stoves and 2 lamps.", "8"),
    ("excluded-after-dash",
     "That's 8 musical instruments — the four stoves and two lamps aren't instruments.", "8"),
    ("other-items-with-aside", "There are 8 musical instruments; the 6 other items "
                               "(4 stoves, 2 lamps) are not instruments.", "8"),
    ("sum-in-parentheses",
     "So in total I have 8 (1 + 1 + 1 + 1 + 1 + 1 + 1 + 1) instruments.", "8"),
    ("closing-rejection-is-no-count",
     "I have 3 cabbages and 2 carrots. So the number of vegetables is not 5.", ""),
]


@pytest.mark.parametrize("reply,expected", cases(COUNT_CASES), ids=ids(COUNT_CASES))
def test_object_counting(reply: str, expected: str) -> None:
    assert bbh_freeform_postprocess(reply) == expected
    assert bbh_freeform_postprocess(COUNT["target"]) == "8"


# --- BBH multistep_arithmetic_two -------------------------------------------------------
# Row 0: ((-1 + 2 + 9 * 5) - (-2 + -4 + -4 * -7)) = ; gold 24.
ARITH = bbh_row("multistep_arithmetic_two")
ARITH_COT = (
    'This equation can be written as "A - B", where A = (-1 + 2 + 9 * 5) and '
    "B = (-2 + -4 + -4 * -7).\nLet's calculate A = (-1 + 2 + 9 * 5) = (-1 + 2 + 45) = 46.\n"
    "Let's calculate B = (-2 + -4 + -4 * -7) = (-2 + -4 + 28) = 22.\n"
    "Then, the final equation is A - B = 46 - 22 = 24. "
)

ARITH_CASES = [
    ("exemplar-style", ARITH_COT + "So the answer is 24.", "24"),
    ("number-words", ARITH_COT + "So the answer is twenty-four.", "24"),
    ("computation-as-answer", "The final answer is A - B = 46 - 22 = 24.", "24"),
    ("latex-boxed-in-statement", ARITH_COT + "The answer is $\\boxed{24}$.", "24"),
    ("boxed-only", ARITH_COT + "\n\n$\\boxed{24}$", "24"),
    ("bold", ARITH_COT + "So the answer is **24**.", "24"),
    ("unicode-minus", "So the answer is \u221224.", "-24"),
    ("parenthesized-negative", "So the answer is (-24).", "-24"),
    ("recomputed", "So the answer is 68. Wait, I made an error in B: -4 * -7 = 28, so "
                   "B = 22 and the answer is 24.", "24"),
    ("two-answers", "The answer is 46. So the answer is 24.", ""),
]


@pytest.mark.parametrize("reply,expected", cases(ARITH_CASES), ids=ids(ARITH_CASES))
def test_multistep_arithmetic(reply: str, expected: str) -> None:
    assert bbh_freeform_postprocess(reply) == expected
    assert bbh_freeform_postprocess(ARITH["target"]) == "24"


# --- BBH free form on a task whose golds are numbers ------------------------------------
NOT_A_NUMBER = [
    ("plan", "Let me think step by step."),
    ("unknown", "Unknown"),
    ("pleasantry", "Sure!"),
    ("server-error-text", "NO SCRIPTED REPLY"),
    ("label", "So the answer is yes."),
    ("word-list", "So the answer is apple banana."),
]


@pytest.mark.parametrize("row", [COUNT, ARITH], ids=["object_counting", "arithmetic"])
@pytest.mark.parametrize("reply", [c[1] for c in NOT_A_NUMBER], ids=ids(NOT_A_NUMBER))
def test_number_task_extracts_only_a_number(row: dict[str, Any], reply: str) -> None:
    assert bbh_freeform_postprocess(reply, test_item=row) == ""


@pytest.mark.parametrize("reply,expected", [
    ("Eight.", "8"), ("8", "8"), ("So the answer is eight.", "8"), ("-3", "-3"),
], ids=["word", "digits", "statement", "negative"])
def test_number_task_still_reads_numbers(reply: str, expected: str) -> None:
    assert bbh_freeform_postprocess(reply, test_item=COUNT) == expected
    assert bbh_freeform_postprocess(COUNT["target"], test_item=COUNT) == "8"


def test_label_task_keeps_its_labels() -> None:
    row = {"input": "Does Gwenn tell the truth?", "target": "Yes"}
    assert bbh_freeform_postprocess("yes", test_item=row) == "Yes"
    assert bbh_freeform_postprocess(row["target"], test_item=row) == "Yes"


# --- BBH free-form labels and sequences (the other free-form tasks' formats) -----------
FREEFORM_MEETS_GOLD = [
    ("yes-lower", "So the answer is yes.", "Yes"),
    ("yes-shouted", "So the answer is YES!", "Yes"),
    ("yes-with-aside", "So the answer is yes (the last person tells the truth).", "Yes"),
    ("no-with-reason", "So the answer is No, because Fidel lies.", "No"),
    ("valid-capital", "So the answer is Valid.", "valid"),
    ("not-valid", "So the answer is not valid.", "invalid"),
    ("not-deductively-valid", "So the answer is: the argument is not deductively valid.",
     "invalid"),
    ("that-invalid", "So the answer is that the argument is invalid.", "invalid"),
    ("true-lower", "So the answer is true.", "True"),
    ("false-with-reason", "So the answer is FALSE, because not True is False.", "False"),
    ("number-word", "So the answer is eleven.", "11"),
    ("hyphenated-number-word", "So the answer is twenty-one.", "21"),
    ("dyck-unspaced", "So the answer is )]}.", ") ] }"),
    ("dyck-code", "So the answer is `> ) ]`.", "> ) ]"),
    ("dyck-extra-spaces", "So the answer is )  ]   }", ") ] }"),
    ("words-commas-and", "So the answer is: Apple, banana, and Cherry.", "apple banana cherry"),
    ("words-quoted", "So the answer is 'apple' 'banana' 'cherry'.", "apple banana cherry"),
    ("words-case", "So the answer is Apple Banana CHERRY", "apple banana cherry"),
]


@pytest.mark.parametrize("reply,gold", cases(FREEFORM_MEETS_GOLD), ids=ids(FREEFORM_MEETS_GOLD))
def test_freeform_reply_meets_gold(reply: str, gold: str) -> None:
    assert bbh_freeform_postprocess(reply) == bbh_freeform_postprocess(gold) != ""


FREEFORM_MISSES = [
    ("yes-or-no-is-a-hedge", "So the answer is yes or no.", "Yes", ""),
    ("valid-is-not-invalid", "So the answer is valid.", "invalid", "valid"),
    ("word-order-counts", "So the answer is banana apple cherry.", "apple banana cherry",
     "banana apple cherry"),
    ("brackets-order-counts", "So the answer is ] ).", ") ]", "] )"),
]


@pytest.mark.parametrize("reply,gold,expected", cases(FREEFORM_MISSES), ids=ids(FREEFORM_MISSES))
def test_freeform_wrong_reply_misses_gold(reply: str, gold: str, expected: str) -> None:
    assert bbh_freeform_postprocess(reply) == expected
    assert expected != bbh_freeform_postprocess(gold)


# --- GSM8K ------------------------------------------------------------------------------
# Row 0: Janet's ducks; gold "#### 18".
GSM8K = jsonl_row("gsm8k")

GSM8K_CASES = [
    ("boxed-after-steps",
     "1. **Eggs laid per day:** 16.\n2. **Eggs used:** 3 for breakfast + 4 for muffins = 7.\n"
     "3. **Eggs sold:** 16 - 7 = 9.\n4. **Earnings:** 9 × $2 = $18.\n\n"
     "Janet makes \\(\\boxed{18}\\) dollars every day.", "18"),
    ("final-answer-line", "## Step 1: 16 - 3 - 4 = 9 eggs are left.\n## Step 2: 9 * 2 = 18.\n\n"
                          "The final answer is: $\\boxed{18}$", "18"),
    ("dollars-and-cents", "She sells 9 eggs at $2 each, so the answer is $18.00.", "18"),
    ("boxed-with-unit", "9 eggs × 2 dollars = \\boxed{18 \\text{ dollars}}", "18"),
    ("check-after-answer", "The answer is 18.\n\nCheck: 9 × 2 = 18 ✓", "18"),
    ("correction", "16 - 3 = 13 eggs, so she makes $26. Wait, I made a mistake: she also uses "
                   "4 for muffins, so 9 eggs and 9 * 2 = $18.", "18"),
    ("hash-format", "16 - 3 - 4 = 9\n9 * 2 = 18\n#### 18", "18"),
    ("truncated", "She has 16 eggs. She eats 3 and bakes with 4, so 16 - 3 - 4 =", ""),
]


@pytest.mark.parametrize("reply,expected", cases(GSM8K_CASES), ids=ids(GSM8K_CASES))
def test_gsm8k(reply: str, expected: str) -> None:
    assert gsm8k_postprocess(reply) == expected
    assert gsm8k_dataset_postprocess(GSM8K["answer"]) == "18"


def test_gsm8k_thousands_gold() -> None:
    assert gsm8k_dataset_postprocess("He pays 1,000 + 200 = 1,200.\n#### 1,200") == "1200"
    assert gsm8k_postprocess("So he pays $1,200 in total.\n\n\\boxed{1,200}") == "1200"


# --- MATH-500 ---------------------------------------------------------------------------
# Row 0: (0,3) in polar coordinates; gold "\left( 3, \frac{\pi}{2} \right)".
# Row 2 gold "\frac{14}{3}".
MATH_CASES = [
    ("tuple", 0, "We have $r = \\sqrt{0^2 + 3^2} = 3$ and $\\theta = \\frac{\\pi}{2}$.\n\n"
                 "The polar coordinates are $\\boxed{\\left(3, \\frac{\\pi}{2}\\right)}$.", True),
    ("tuple-wrong-angle", 0, "So the answer is $\\boxed{(3, \\pi)}$.", False),
    ("dfrac", 2, "Adding, $f(-2) + f(-1) + f(0) = \\boxed{\\dfrac{14}{3}}$.", True),
    ("decimal-is-not-exact", 2, "The sum is $\\boxed{4.67}$.", False),
    ("intermediate-boxes-corrected", 2,
     "I first got $\\boxed{4}$. Wait, I made an arithmetic error: the sum is "
     "$\\boxed{\\frac{14}{3}}$.", True),
    # An unambiguous closing statement is an answer, boxed or not.
    ("no-box-closing-statement", 2, "So the sum is 14/3", True),
    ("no-box-no-statement", 2, "Adding the three values gives a sum near 14/3 and", False),
]


@pytest.mark.parametrize("index,reply,correct", cases(MATH_CASES), ids=ids(MATH_CASES))
def test_math500(index: int, reply: str, correct: bool) -> None:
    row = jsonl_row("math500", index)
    extracted = math_postprocess_v2(reply)
    detail = MATHVerifyEvaluator().score_sample(extracted, row["answer"], row)
    assert detail["correct"] is correct


@pytest.mark.parametrize("index,word", [(4, "Evelyn"), (97, "east"), (120, "even"),
                                        (358, "ellipse"), (398, "Navin")])
def test_math500_a_word_boxed_without_text_is_read_as_math_verify_reads_it_boxed(
        index: int, word: str) -> None:
    from math_verify import parse, verify

    row = jsonl_row("math500", index)  # golds such as \text{Evelyn}
    extracted = math_postprocess_v2(f"So the answer is $\\boxed{{{word}}}$.")
    detail = MATHVerifyEvaluator().score_sample(extracted, row["answer"], row)
    assert (detail["pred"], detail["correct"]) == (word, True)
    assert verify(parse(f"\\boxed{{{row['answer']}}}"), parse(f"\\boxed{{{word}}}"))
    wrong = MATHVerifyEvaluator().score_sample("west", row["answer"], row)
    assert (wrong["pred"], wrong["correct"]) == ("west", False)


def test_math_verify_does_not_box_a_prediction_of_several_words_whole() -> None:
    """Boxed whole, prose would become one product of letters; read as it is, it keeps
    math-verify's own extraction (here: none, an extraction failure)."""
    detail = MATHVerifyEvaluator().score_sample("the answer is east", "\\text{east}")
    assert (detail["pred"], detail["correct"]) == ("", False)




def _math500_round_trip_failures() -> set[int]:
    from harness.config import load_config

    (spec,) = load_config(DATA.parent / "math500.py").datasets
    failures = set()
    with open(DATA / "math500" / "test.jsonl", encoding="utf-8") as fh:
        for index, line in enumerate(fh):
            row = json.loads(line)
            reply = f"Putting it all together, the final answer is $\\boxed{{{row['answer']}}}$."
            extracted = spec.pred_postprocessor(reply, test_item=row)
            if not spec.evaluator.score_sample(extracted, row["answer"], row)["correct"]:
                failures.add(index)
    return failures


def test_math500_every_gold_scores_correct_when_boxed_back() -> None:
    # Includes \text{Evelyn}, pmatrix and \$36 golds, which must be read as bare LaTeX.
    assert _math500_round_trip_failures() == set()


def test_math_verify_warm_up_checks_parse_and_compare_as_real_checks_do() -> None:
    """The warm-up only builds parser and sympy state if its checks go all the way:
    every right answer (boxed, in prose, bare) verifies and every wrong one does not."""
    from harness.evaluators.math_verify import WARM_UP_ANSWERS, warm_up_pairs

    pairs = warm_up_pairs()
    assert len(pairs) == 4 * len(WARM_UP_ANSWERS)
    evaluator = MATHVerifyEvaluator()
    outcomes = [bool(evaluator.score_sample(pred, gold)["correct"]) for pred, gold in pairs]
    wrong = [pairs[k] for k, ok in enumerate(outcomes) if ok != (k % 4 != 3)]
    assert wrong == []


def test_math_verify_parses_each_reference_once_per_process(monkeypatch) -> None:
    """References repeat (replicas, common answers): a parsed one is reused; one that
    could not be parsed is tried again, since a parse can time out on a busy machine."""
    import math_verify

    from harness.evaluators import math_verify as mv

    mv._parsed_gold.cache_clear()
    seen: list[str] = []
    real_parse = math_verify.parse

    def counting_parse(text, *args, **kwargs):
        seen.append(text)
        return real_parse(text, *args, **kwargs)

    monkeypatch.setattr(math_verify, "parse", counting_parse)
    evaluator = MATHVerifyEvaluator()
    replies = ["The answer is $\\boxed{\\frac{3}{7}}$.", "So $\\boxed{0.5}$.", "\\frac{6}{14}"]
    assert [evaluator.score_sample(r, "\\frac{3}{7}")["correct"] for r in replies] \
        == [True, False, True]
    assert seen.count("\\boxed{\\frac{3}{7}}") == 1  # the reference, parsed once
    seen.clear()
    for _ in range(2):
        detail = evaluator.score_sample("\\boxed{1}", "}{")
        assert detail["correct"] is False and "could not be parsed" in detail["error"]
    assert seen.count("\\boxed{}{}") == 2
