"""Option text → letter: parsing a row's options and reading replies that name them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.postprocessors import (
    bbh_mcq_postprocess,
    build_postprocessor,
    first_option_postprocess,
    last_option_postprocess,
)
from harness.postprocessors._option_text import option_texts, words

BBH = Path(__file__).resolve().parent.parent / "datasets" / "data" / "bbh"
MCQ_TASKS = ["date_understanding", "logical_deduction_three_objects", "geometric_shapes"]

DATE_ROW = {"input": "Today is Christmas Eve of 1937. What is the date 10 days ago in MM/DD/YYYY?"
                     "\nOptions:\n(A) 12/14/2026\n(B) 12/14/1950\n(C) 12/14/2007\n(D) 12/14/1937"
                     "\n(E) 07/14/1938\n(F) 12/14/1988",
            "target": "(D)"}


PARSING = [
    ("bbh-options-block", DATE_ROW, "ABCDEFGHIJ",
     {"A": "12/14/2026", "B": "12/14/1950", "C": "12/14/2007", "D": "12/14/1937",
      "E": "07/14/1938", "F": "12/14/1988"}),
    ("letter-columns", {"question": "Capital of France?", "A": "Paris", "B": "Lyon",
                        "C": "Nice", "D": "Lille", "answer": "A"}, "ABCD",
     {"A": "Paris", "B": "Lyon", "C": "Nice", "D": "Lille"}),
    ("dotted-lines", {"question": "Capital of France?\nA. Paris\nB. Lyon\nC. Nice"}, "ABCD",
     {"A": "Paris", "B": "Lyon", "C": "Nice"}),
    ("limited-to-letters", {"question": "Q\n(A) x\n(B) y\n(C) z\n(D) w\n(E) v"}, "ABCD",
     {"A": "x", "B": "y", "C": "z", "D": "w"}),
    ("out-of-order-is-no-list", {"question": "B. Paris\nA. Lyon"}, "ABCD", {}),
    ("one-line-is-no-list", {"question": "A. Paris is the capital."}, "ABCD", {}),
    ("gold-only", {"target": "(B)"}, "ABCD", {}),
    ("no-row", None, "ABCD", {}),
]


@pytest.mark.parametrize("row,letters,expected", [c[1:] for c in PARSING],
                         ids=[c[0] for c in PARSING])
def test_option_texts(row: dict | None, letters: str, expected: dict) -> None:
    assert option_texts(row, letters) == expected


WORDS = [
    ("case-and-articles", "The White book is the LEFTMOST.", ("white", "book", "is", "leftmost")),
    ("month-name-date", "December 4th, 1937", ("12/04/1937",)),
    ("day-month-date", "the 4th of December 1937", ("12/04/1937",)),
    ("unpadded-date", "1/3/1963", ("01/03/1963",)),
    ("quotes-and-markup", '**"octagon"**', ("octagon",)),
    ("full-width", "ｏｃｔａｇｏｎ", ("octagon",)),
]


@pytest.mark.parametrize("text,expected", [c[1:] for c in WORDS], ids=[c[0] for c in WORDS])
def test_words(text: str, expected: tuple[str, ...]) -> None:
    assert words(text) == expected


MAPPING = [
    # the text names one option
    ("exact-text", "So the answer is 12/14/1937.", "D"),
    ("text-in-bold", "So the answer is **12/14/1937**.", "D"),
    ("answer-colon-text", "Answer: 12/14/1937", "D"),
    ("final-answer-text", "The final answer is 12/14/1937.", "D"),
    ("month-name", "So the answer is December 14, 1937.", "D"),
    ("text-then-clause", "So the answer is December 14, 1937, ten days before Christmas Eve.", "D"),
    ("other-options-first",
     "12/14/2026 and 12/14/1950 have the wrong year. 10 days before 12/24/1937 is "
     "12/14/1937. So the answer is 12/14/1937.", "D"),
    ("bare-text-reply", "12/14/1937", "D"),
    # letters keep priority
    ("letter-statement", "So the answer is (D).", "D"),
    # (A) is another date: the reply contradicts itself, and a grader cannot tell which
    # of the two it means.
    ("letter-contradicting-its-text", "So the answer is (A) 12/14/1937.", ""),
    ("letter-in-text-statement", "So the answer is 12/14/1937, which is option (D).", "D"),
    ("negated-letter-in-text-statement", "So the answer is 12/14/1937, not (A).", "D"),
    # commitment rules apply to text statements too
    ("text-corrected-by-letter",
     "So the answer is 12/14/2026. Wait, actually the answer is (D).", "D"),
    ("letter-corrected-by-text",
     "So the answer is (A). Wait, actually the answer is 12/14/1937.", "D"),
    ("same-answer-twice", "The answer is 12/14/1937. So the answer is (D).", "D"),
    ("conflict", "The answer is 12/14/2026. So the answer is (D).", ""),
    ("hypothetical",
     "If the answer is 12/14/2026, the year would be wrong. So the answer is (D).", "D"),
    ("hedge", "So the answer is 12/14/1937 or 12/14/1950.", ""),
    ("either-hedge", "So the answer is either 12/14/1937 or 12/14/1988.", ""),
    # text that names no option is not an answer statement
    ("unmatched-text", "So the answer is 12/15/1937.", ""),
    ("unmatched-text-then-letter",
     "The answer is clear once we count back. So the answer is (D).", "D"),
    ("year-alone-is-no-option", "So the answer is 1937.", ""),
    ("letter-outside-options", "So the answer is (H).", ""),
    ("gold", "(D)", "D"),
]


@pytest.mark.parametrize("reply,expected", [c[1:] for c in MAPPING], ids=[c[0] for c in MAPPING])
def test_bbh_mcq_maps_option_text(reply: str, expected: str) -> None:
    assert bbh_mcq_postprocess(reply, test_item=DATE_ROW) == expected


def test_without_row_text_is_no_answer() -> None:
    assert bbh_mcq_postprocess("So the answer is 12/14/1937.") == ""
    assert bbh_mcq_postprocess("So the answer is 12/14/1937.", test_item=None) == ""


def test_duplicate_option_texts_are_ambiguous() -> None:
    row = {"input": "Q\nOptions:\n(A) red\n(B) blue\n(C) red"}
    assert bbh_mcq_postprocess("So the answer is red.", test_item=row) == ""
    assert bbh_mcq_postprocess("So the answer is blue.", test_item=row) == "B"


VITAMINS = {"input": "Which one is made in the skin?\nOptions:\n(A) vitamin D\n(B) vitamin C"
                     "\n(C) iron\n(D) zinc"}

LETTER_SHAPED_TEXT = [
    ("option-text-ending-in-a-letter", "So the answer is vitamin D.", "A"),
    ("option-text-then-reason", "So the answer is vitamin D, made from sunlight.", "A"),
    ("bare-option-text", "vitamin D", "A"),
    ("bare-letter-statement", "So the answer is D", "D"),
    ("letter-then-its-text", "So the answer is (D) zinc.", "D"),
]


@pytest.mark.parametrize("reply,expected", [c[1:] for c in LETTER_SHAPED_TEXT],
                         ids=[c[0] for c in LETTER_SHAPED_TEXT])
def test_option_text_that_contains_a_letter(reply: str, expected: str) -> None:
    assert bbh_mcq_postprocess(reply, test_item=VITAMINS) == expected


MMLU_ROW = {"question": "What is the capital of France?", "A": "Lyon", "B": "Paris",
            "C": "Marseille", "D": "Nice", "answer": "B"}

FIRST_OPTION = [
    ("letter", "The answer is B.", "B"),
    ("text", "The capital of France is Paris. The answer is Paris.", "B"),
    ("text-with-article-and-reason", "The correct answer is Paris, the seat of government.", "B"),
    ("bare-text", "Paris", "B"),
    ("text-hedge", "The answer is Paris or Lyon.", ""),
    ("other-text-discussed", "Lyon is the third-largest city. The answer is Paris.", "B"),
]


@pytest.mark.parametrize("reply,expected", [c[1:] for c in FIRST_OPTION],
                         ids=[c[0] for c in FIRST_OPTION])
def test_first_option_maps_text_from_letter_columns(reply: str, expected: str) -> None:
    assert first_option_postprocess(reply, options="ABCD", test_item=MMLU_ROW) == expected


def test_last_option_maps_text() -> None:
    assert last_option_postprocess("So the answer is Paris.", test_item=MMLU_ROW) == "B"
    assert last_option_postprocess("(A) then (C)", test_item=MMLU_ROW) == "C"


def test_built_postprocessor_receives_the_row() -> None:
    post = build_postprocessor(dict(type="bbh-mcq"))
    assert post.wants_item
    assert post("So the answer is 12/14/1937.", test_item=DATE_ROW) == "D"
    assert post(["So the answer is 12/14/1937.", "So the answer is (B)."],
                test_item=DATE_ROW) == ["D", "B"]


# --- every real row --------------------------------------------------------------------


def _rows(task: str) -> list[dict]:
    return json.loads((BBH / f"{task}.json").read_text(encoding="utf-8"))["examples"]


@pytest.mark.parametrize("task", MCQ_TASKS)
def test_every_row_lists_its_gold_and_the_gold_reads_the_same(task: str) -> None:
    for row in _rows(task):
        options = option_texts(row, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
        assert row["target"][1] in options, row["input"]
        assert bbh_mcq_postprocess(row["target"], test_item=row) == row["target"][1]


@pytest.mark.parametrize("task", MCQ_TASKS)
def test_every_option_text_of_every_row_maps_to_its_letter(task: str) -> None:
    for row in _rows(task):
        for letter, text in option_texts(row, "ABCDEFGHIJKLMNOPQRSTUVWXYZ").items():
            assert bbh_mcq_postprocess(f"So the answer is {text}.", test_item=row) == letter
            assert bbh_mcq_postprocess(text, test_item=row) == letter
