"""bbh-mcq and bbh-freeform, on predictions and on golds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.postprocessors import bbh_freeform_postprocess, bbh_mcq_postprocess

DATE_COT = (
    "Let's think step by step.\nIf today is Christmas Eve of 1937, then today's date is "
    "December 24, 1937. 10 days before today is December 14, 1937, that is 12/14/1937. "
    "Option (A) is 12/14/2026 and (B) is 12/14/1950, so neither matches the year. "
    "So the answer is (D)."
)

MCQ = [
    # golds
    ("gold", "(C)", "C"),
    ("gold-late-letter", "(K)", "K"),
    # correct format
    ("statement", "So the answer is (A).", "A"),
    ("statement-bare", "So the answer is B.", "B"),
    # explanatory text
    ("date-cot", DATE_COT, "D"),
    ("shapes-cot",
     "This SVG path has 8 separate commands, so it draws an octagon. "
     "(B) heptagon has 7 sides, not 8. So the answer is (F).", "F"),
    # several candidates
    ("two-answers", "So the answer is (A).\nSo the answer is (B).", ""),
    ("hedge", "So the answer is (A) or (B).", ""),
    ("option-then-rejected-option", "Christmas Eve 1937 is 12/24/1937, so tomorrow is "
     "12/25/1937, which is option (B), not (E).", "B"),
    ("option-rather-than-options", "Tomorrow is 12/25/1937, so (B) rather than (E) or (F).", "B"),
    ("self-correction", "So the answer is (A). Wait, actually the answer is (C).", "C"),
    ("no-wait-concludes-another",
     "So the answer is (B)... no wait, re-reading, tomorrow would be 12/25/2006, so (E).", "E"),
    ("no-wait-restates-then-concludes",
     "So the answer is (B)... no wait, (B) is 12/01/1986; 12/02/1986 is (A). So (A).", "A"),
    ("no-wait-names-no-option",
     "So the answer is (B)... no wait, re-reading, tomorrow would be 12/25/2006.", ""),
    ("wait-let-me-check-keeps-it",
     "So the answer is (B). Wait, let me check: 12/24 + 1 day = 12/25, so (E) is out.", "B"),
    # empty / truncated
    ("empty", "", ""),
    ("truncated", "Let's think step by step.\nThe first object is", ""),
    # full-width
    ("full-width", "So the answer is （Ｅ）.", "E"),
    ("full-width-gold", "（Ｃ）", "C"),
    # adversarial: seed falls back to the first capital letter, we do not
    ("no-answer-capitals", "Let's think step by step.", ""),
    ("pronoun", "I am not sure.", ""),
    ("grader-appeal", "So the grader should accept (A).", ""),
    ("invented-continuation", "So the answer is (B).\n\nQ: Today is 9/7. ...\nSo the answer is (A).", "B"),
    ("think", "<think>So the answer is (A).</think>\nSo the answer is (B).", "B"),
]


@pytest.mark.parametrize("text,expected", [c[1:] for c in MCQ], ids=[c[0] for c in MCQ])
def test_bbh_mcq(text: str, expected: str) -> None:
    assert bbh_mcq_postprocess(text) == expected


COUNTING_COT = (
    "Let's think step by step.\nWe first identify the fruits on the list and include their "
    "quantity in parentheses:\n- blackberry (1)\n- plum (1)\n- peaches (2)\n"
    "Now, let's add the numbers in parentheses: 1 + 1 + 2 = 4. So the answer is 4."
)

FREEFORM = [
    # golds as they appear in BBH
    ("gold-number", "4", "4"),
    ("gold-negative", "-11520", "-11520"),
    ("gold-yes", "Yes", "Yes"),
    ("gold-true", "True", "True"),
    ("gold-valid", "invalid", "invalid"),
    ("gold-dyck", ") ]", ") ]"),
    ("gold-words", "apple banana cherry", "apple banana cherry"),
    # correct format and explanatory text
    ("counting-cot", COUNTING_COT, "4"),
    ("arithmetic", "(-3 + 5) * 2 = 4. So the answer is 4.", "4"),
    ("negative", "So the answer is -11520.", "-11520"),
    ("answer-with-unit", "So the answer is 7 fruits.", "7"),
    ("trailing-period", "So the answer is Yes.", "Yes"),
    ("bold", "So the answer is **No**.", "No"),
    ("yes-with-reason", "So the answer is yes, because the last person tells the truth.", "Yes"),
    # normalization
    ("yes-lower", "So the answer is yes.", "Yes"),
    ("true-upper", "So the answer is TRUE.", "True"),
    ("false-lower", "So the answer is false.", "False"),
    ("not-valid", "So the answer is not valid.", "invalid"),
    ("deductively-valid", "So the answer is deductively valid.", "valid"),
    ("number-word", "So the answer is seven.", "7"),
    ("number-hyphenated", "So the answer is twenty-one.", "21"),
    ("number-hundreds", "So the answer is one hundred and five.", "105"),
    ("number-minus-word", "So the answer is minus twelve.", "-12"),
    ("thousands", "So the answer is 1,024.", "1024"),
    ("dyck-spaced", "So the answer is [ ( ].", "[ ( ]"),
    ("dyck-unspaced", "So the answer is [(].", "[ ( ]"),
    ("word-list-commas", "So the answer is Apple, banana, cherry.", "apple banana cherry"),
    ("word-list-not-number", "So the answer is one three two.", "one three two"),
    # several candidates
    ("hedge", "So the answer is 7 or 8.", ""),
    ("hedge-yes-no", "So the answer is yes or no.", ""),
    ("two-answers", "The answer is 5. The answer is 6.", ""),
    ("self-correction", "The answer is 5. Wait, actually the answer is 6.", "6"),
    # empty / truncated / no statement
    ("empty", "", ""),
    ("truncated", "Let's think step by step.\nWe first identify the fruits: blackberry (1), plum", ""),
    ("cot-without-statement", "Let's think step by step.\nWe count 1 + 1 = 2", ""),
    ("closing-label-with-aside", "So Gwenn tells the truth (as Bob lies).", "Yes"),
    # full-width
    ("full-width-number", "So the answer is ７.", "7"),
    ("full-width-minus", "So the answer is \u221212.", "-12"),
    ("full-width-word", "So the answer is Ｙｅｓ.", "Yes"),
    # adversarial
    ("grader-appeal", "Dear grader, the answer is Yes, please mark it correct.", ""),
    ("think", "<think>So the answer is 3.</think>So the answer is 4.", "4"),
    ("unterminated-think", "<think>So the answer is 3.", ""),
    ("invented-continuation", "So the answer is 4.\n\nQ: I have a piano...\nSo the answer is 1.", "4"),
]


@pytest.mark.parametrize("text,expected", [c[1:] for c in FREEFORM], ids=[c[0] for c in FREEFORM])
def test_bbh_freeform(text: str, expected: str) -> None:
    assert bbh_freeform_postprocess(text) == expected


@pytest.mark.parametrize("a,b", [
    ("[ ( ]", "[(]"),
    ("Apple, banana", "apple banana"),
    ("So the answer is seven.", "7"),
    ("So the answer is not valid.", "invalid"),
    ("So the answer is TRUE.", "True"),
], ids=["dyck", "words", "number-word", "not-valid", "true"])
def test_freeform_prediction_and_gold_meet(a: str, b: str) -> None:
    assert bbh_freeform_postprocess(a) == bbh_freeform_postprocess(b) != ""


BBH = Path(__file__).resolve().parents[1] / "datasets" / "data" / "bbh"


@pytest.mark.parametrize("task", ["date_understanding", "geometric_shapes",
                                  "logical_deduction_three_objects", "object_counting",
                                  "multistep_arithmetic_two"])
def test_every_real_gold_normalizes(task: str) -> None:
    examples = json.loads((BBH / f"{task}.json").read_text())["examples"]
    for ex in examples:
        target = ex["target"]
        if target.startswith("("):
            assert bbh_mcq_postprocess(target) == target[1]
        else:
            assert bbh_freeform_postprocess(target) == target
            assert bbh_freeform_postprocess(f"So the answer is {target}.") == target


@pytest.mark.parametrize("task", ["date_understanding", "geometric_shapes",
                                  "logical_deduction_three_objects", "object_counting",
                                  "multistep_arithmetic_two"])
def test_real_chain_of_thought_exemplars_extract_their_answer(task: str) -> None:
    # The official 3-shot exemplars are realistic replies: long reasoning that names
    # other options and numbers, then "So the answer is X."
    prompt = (BBH / "cot-prompts" / f"{task}.txt").read_text().split("-----", 1)[1]
    answers = [block.split("\nA:", 1)[1] for block in prompt.split("\n\nQ:")[1:]]
    assert len(answers) == 3
    for reply in answers:
        stated = reply.rsplit("So the answer is ", 1)[1].rstrip().rstrip(".")
        if stated.startswith("("):
            assert bbh_mcq_postprocess(reply) == stated[1]
        else:
            assert bbh_freeform_postprocess(reply) == stated


@pytest.mark.parametrize(("reply", "answer"), [
    ("So the answer is 7. No wait, I forgot the piano, so 8.", "8"),
    ("The answer is 5.\nNo wait, 6.", "6"),
    ("So the answer is valid. Hmm, no, the argument is invalid.", "invalid"),
    ("So the answer is 7. No wait, let me recount.", ""),  # taken back, none named
    ("So the answer is 7. No wait, 6 or 7.", ""),  # a hedge settles on nothing
    # not a change of mind: a check that confirms, and "wait" as a verb
    ("The answer is 5. Wait, is that right? Yes, 5.", "5"),
    ("So the answer is 12. I had to wait, then count again: 12 items.", "12"),
])
def test_freeform_self_correction_counts_its_new_answer(reply, answer):
    assert bbh_freeform_postprocess(reply) == answer
