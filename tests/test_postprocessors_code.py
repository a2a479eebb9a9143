"""Code extraction on replies as models write them, checked against real HumanEval and
MBPP rows: the extracted code, put together with the prompt, must parse and define
the entry point, as the evaluator will run it."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from harness.postprocessors import build_postprocessor
from harness.postprocessors import humaneval_postprocess_v2 as extract

DATA = Path(__file__).resolve().parents[1] / "datasets" / "data"


def _rows(path: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / path).read_text().splitlines()]


HUMANEVAL = _rows("humaneval/HumanEval.jsonl")
MBPP = _rows("mbpp/sanitized-mbpp.jsonl")
HAS_CLOSE = HUMANEVAL[0]  # has_close_elements(numbers, threshold)
BODY = """    for i, a in enumerate(numbers):
        for j, b in enumerate(numbers):
            if i != j and abs(a - b) < threshold:
                return True
    return False
"""
FULL = "from typing import List\n\n\ndef has_close_elements(numbers: List[float], " \
       "threshold: float) -> bool:\n" + BODY


def _runs_as_program(code: str, row: dict = HAS_CLOSE) -> bool:
    namespace: dict = {}
    exec(compile(row["prompt"] + code + "\n" + row["test"], "<test>", "exec"), namespace)
    namespace["check"](namespace[row["entry_point"]])
    return True


def test_a_python_fence_with_prose_around_it():
    reply = (f"Here is an implementation that compares every pair:\n\n```python\n{FULL}```"
             "\n\nThis runs in O(n^2) time, which is fine for short lists.")
    assert extract(reply, test_item=HAS_CLOSE) == FULL
    assert _runs_as_program(extract(reply, test_item=HAS_CLOSE))


def test_a_fence_without_a_language_tag():
    assert extract(f"```\n{FULL}```", test_item=HAS_CLOSE) == FULL


def test_the_block_that_defines_the_entry_point_wins_over_a_usage_example():
    reply = ("First a helper check of the input format:\n```python\nprint(has_close_elements("
             f"[1.0, 2.0], 0.5))\n```\nThe function itself:\n```python\n{FULL}```\n"
             "And to run it:\n```bash\npython solution.py\n```")
    assert extract(reply, test_item=HAS_CLOSE) == FULL


def test_of_two_definitions_the_later_correction_wins():
    wrong = FULL.replace("< threshold", "<= threshold")
    reply = (f"```python\n{wrong}```\nWait, the bound must be strict. Corrected:\n"
             f"```python\n{FULL}```")
    assert extract(reply, test_item=HAS_CLOSE) == FULL


def test_a_full_function_instead_of_a_continuation_still_runs():
    assert _runs_as_program(extract(FULL, test_item=HAS_CLOSE))


def test_unfenced_code_with_prose_before_and_after():
    reply = f"Sure! Here's the code:\n\n{FULL}\nHope this helps, let me know!"
    assert extract(reply, test_item=HAS_CLOSE) == FULL


def test_a_think_block_is_dropped_with_the_code_in_it():
    reply = ("<think>Maybe sort first?\n```python\ndef has_close_elements(n, t):\n"
             f"    return None\n```\nNo, pairs are simpler.</think>\n```python\n{FULL}```")
    assert extract(reply, test_item=HAS_CLOSE) == FULL


def test_an_unclosed_think_block_has_no_answer():
    assert extract(f"<think>I will write\n```python\n{FULL}```", test_item=HAS_CLOSE) == ""


def test_a_fence_cut_off_by_the_token_limit_runs_to_the_end():
    assert extract(f"```python\n{FULL}", test_item=HAS_CLOSE) == FULL


def test_a_bare_continuation_keeps_its_indentation():
    assert extract(BODY, test_item=HAS_CLOSE) == BODY
    assert _runs_as_program(extract(BODY, test_item=HAS_CLOSE))


def test_a_continuation_that_lost_its_first_indent_is_reindented():
    stripped = BODY.lstrip()  # "for i, a in …" at column 0, the rest indented
    code = extract(stripped, test_item=HAS_CLOSE)
    assert code.startswith("    for i, a") and _runs_as_program(code)


def test_a_continuation_with_no_indentation_at_all_is_indented():
    flat = "return any(abs(a - b) < threshold\n           for i, a in enumerate(numbers)\n" \
           "           for j, b in enumerate(numbers) if i != j)\n"
    code = extract("    " + flat, test_item=HAS_CLOSE)
    assert _runs_as_program(code)


def test_mbpp_begin_done_style():
    row = MBPP[0]
    reply = ("[BEGIN]\n 'def similar_elements(test_tup1, test_tup2):\n  return tuple(set("
             "test_tup1) & set(test_tup2))' \n[DONE]\n\nYou are an expert Python programmer")
    code = extract(reply, test_item=row)
    assert code.startswith("def similar_elements(") and code.endswith("set(test_tup2))")
    namespace: dict = {}
    exec(code + "\n" + "\n".join(row["test_list"]), namespace)


def test_the_mbpp_entry_point_is_the_function_the_tests_call():
    from harness.postprocessors.code import entry_point_of

    assert entry_point_of(MBPP[0]) == "similar_elements"  # `assert set(similar_…(…))`
    assert entry_point_of(HAS_CLOSE) == "has_close_elements"


@pytest.mark.parametrize("reply", [
    "I'm sorry, I can't help with that.",
    "The answer is to compare each pair of numbers and return True if any are close.",
    "```bash\npip install numpy\n```",
    "",
])
def test_a_reply_without_python_code_is_an_extraction_failure(reply):
    assert extract(reply, test_item=HAS_CLOSE) == ""


def test_extraction_is_idempotent_so_the_evaluator_may_apply_it_again():
    for reply in (f"Code:\n```python\n{FULL}```", BODY, BODY.lstrip()):
        once = extract(reply, test_item=HAS_CLOSE)
        assert extract(once, test_item=HAS_CLOSE) == once


def test_registered_under_its_opencompass_and_harness_names():
    for name in ("humaneval_postprocess_v2", "code"):
        bound = build_postprocessor(dict(type=name))
        assert bound(f"```py\n{FULL}```", test_item=HAS_CLOSE) == FULL
    assert ast.parse(extract(FULL, entry_point="has_close_elements"))


def test_code_with_an_invalid_escape_is_kept_whole_even_when_warnings_are_errors():
    # MBPP 593's reference: "\\." warns at compile time; pytest makes warnings errors.
    row = next(r for r in MBPP if r["task_id"] == 593)
    assert extract(row["code"], test_item=row).strip() == row["code"].strip()
