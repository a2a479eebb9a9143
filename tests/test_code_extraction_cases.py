"""Replies whose program the extraction used to get wrong, each checked as the program
it yields: a HumanEval body written flush left (one line, or all of it), an MBPP task
whose first test calls the function inside ``math.isclose`` (or names it like a
builtin), and a fence indented inside a Markdown list."""

from __future__ import annotations

import ast
import textwrap
import warnings

import pytest

from harness.evaluators import HumanEvalEvaluator, MBPPEvaluator
from harness.postprocessors.code import entry_point_of

from .test_code_evaluators import _score_all
from .test_postprocessors_code import (
    BODY,
    FULL,
    HAS_CLOSE,
    HUMANEVAL,
    MBPP,
    _runs_as_program,
    extract,
)

TRUNCATE = HUMANEVAL[2]  # truncate_number: its canonical body is `return number % 1.0`
MBPP_BY_ID = {row["task_id"]: row for row in MBPP}
VOLUME_SPHERE = MBPP_BY_ID[82]  # assert math.isclose(volume_sphere(10), 4188.79…, …)
SPHERE = "import math\n\n\ndef volume_sphere(r):\n    return 4 / 3 * math.pi * r ** 3\n"


def _listed(code: str) -> str:
    """``code`` in a fence under a Markdown list item, indented with the item."""
    return ("Steps:\n\n1. Here is the code:\n   ```python\n"
            + textwrap.indent(code, "   ") + "   ```\n2. Run the tests.\n")


def _defined(code: str) -> set[str]:
    """The functions ``code`` defines."""
    # Some references hold an invalid escape ("\w"), an error under pytest's filter.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(code)
    return {node.name for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


async def _passes(evaluator, reply: str, row: dict) -> bool:
    """Whether ``reply``'s program passes ``row``'s tests in the sandbox."""
    return (await evaluator.ascore_sample(reply, row["task_id"], row))["correct"]


# A HumanEval body written flush left.

@pytest.mark.parametrize("reply", [
    "return number % 1.0",
    "return number % 1.0\n",
    "```python\nreturn number % 1.0\n```",
    "The fractional part is what the modulo leaves:\n```python\nreturn number % 1.0\n```\n",
])
def test_a_one_line_body_written_flush_left_is_indented(reply):
    code = extract(reply, test_item=TRUNCATE)
    assert code == "    return number % 1.0\n"
    assert _runs_as_program(code, TRUNCATE)
    assert extract(code, test_item=TRUNCATE) == code


@pytest.mark.parametrize("fenced", [False, True])
def test_a_body_that_lost_all_its_indentation_is_indented(fenced):
    flat = textwrap.dedent(BODY)  # the nesting kept, the function's own four spaces lost
    code = extract(f"```python\n{flat}```" if fenced else flat, test_item=HAS_CLOSE)
    assert code == BODY
    assert _runs_as_program(code)


def test_a_flush_left_body_that_starts_with_a_helper_is_indented():
    row = HUMANEVAL[11]  # string_xor: a nested `def xor`, then `return ''.join(…)`
    flat = textwrap.dedent(row["canonical_solution"])
    assert flat.startswith("def xor(")
    code = extract(flat, test_item=row)
    assert code == textwrap.indent(flat, "    ")
    assert _runs_as_program(code, row)


@pytest.mark.parametrize("fenced", [False, True], ids=["bare", "fenced"])
async def test_every_humaneval_canonical_body_written_flush_left_passes(fenced):
    replies = [textwrap.dedent(row["canonical_solution"]) for row in HUMANEVAL]
    items = [(f"```python\n{reply}```" if fenced else reply, row)
             for reply, row in zip(replies, HUMANEVAL, strict=True)]
    details = await _score_all(HumanEvalEvaluator(), items)
    failed = [(row["task_id"], d.get("reason"), d.get("exception"))
              for row, d in zip(HUMANEVAL, details, strict=True) if not d["correct"]]
    assert failed == []


@pytest.mark.parametrize("program", [
    FULL,
    "EPSILON = 0.0\n\n" + FULL,  # a module-level line before the imports and the def
    FULL + "\n\nif __name__ == '__main__':\n    print(has_close_elements([1.0], 0.5))\n",
])
def test_a_complete_program_is_kept_whole(program):
    for reply in (program, f"```python\n{program}```"):
        assert extract(reply, test_item=HAS_CLOSE) == program


@pytest.mark.parametrize("reply, expected", [
    ("```python\nprint(has_close_elements([1.0, 2.0], 0.5))\n```",
     "print(has_close_elements([1.0, 2.0], 0.5))\n"),  # runs as a module: no body
    ("Yes", ""),
    ("It should return True when two numbers are closer than the threshold.", ""),
])
def test_flush_left_text_that_is_no_body_is_not_indented(reply, expected):
    assert extract(reply, test_item=HAS_CLOSE) == expected


# MBPP: the function the first test calls.

def test_every_mbpp_entry_point_is_a_function_the_reference_defines():
    wrong = [(row["task_id"], entry_point_of(row)) for row in MBPP
             if entry_point_of(row) not in _defined(row["code"])]
    assert wrong == []
    assert len(MBPP) == 427


def test_the_mbpp_entry_point_skips_attribute_calls_and_may_shadow_a_builtin():
    assert "math.isclose(volume_sphere(" in VOLUME_SPHERE["test_list"][0]
    assert entry_point_of(VOLUME_SPHERE) == "volume_sphere"
    assert entry_point_of(MBPP_BY_ID[126]) == "sum"  # `assert sum(10,15) == 6`
    assert entry_point_of({"test_list": ["assert obj.method(3) == 4"]}) is None


async def test_an_mbpp_usage_example_before_the_solution_is_not_what_runs():
    reply = ("The volume is 4/3·π·r³, for example:\n```python\nprint(volume_sphere(10))\n"
             f"```\nHere is the function:\n```python\n{SPHERE}```")
    assert extract(reply, test_item=VOLUME_SPHERE) == SPHERE
    assert await _passes(MBPPEvaluator(), reply, VOLUME_SPHERE)


async def test_an_mbpp_draft_before_its_correction_is_not_what_runs():
    draft = "def volume_sphere(r):\n    return 4 / 3 * 3.14 * r ** 2\n"
    reply = (f"My first try:\n```python\n{draft}```\nThat squares r. Corrected:\n"
             f"```python\n{SPHERE}```")
    assert extract(reply, test_item=VOLUME_SPHERE) == SPHERE
    assert await _passes(MBPPEvaluator(), reply, VOLUME_SPHERE)


# A fence indented inside a Markdown list.

def test_a_program_fenced_inside_a_list_item_is_dedented():
    code = extract(_listed(FULL), test_item=HAS_CLOSE)
    assert code == FULL
    assert _runs_as_program(code)


def test_a_body_fenced_inside_a_list_item_is_indented_like_the_prompts():
    code = extract(_listed(BODY), test_item=HAS_CLOSE)
    assert code == BODY
    assert _runs_as_program(code)


async def test_an_mbpp_solution_fenced_inside_a_list_item_passes():
    reply = _listed(SPHERE)
    assert extract(reply, test_item=VOLUME_SPHERE) == SPHERE
    assert await _passes(MBPPEvaluator(), reply, VOLUME_SPHERE)


async def test_a_humaneval_program_fenced_inside_a_list_item_passes():
    assert await _passes(HumanEvalEvaluator(), _listed(FULL), HAS_CLOSE)


def test_a_fenced_continuation_keeps_the_indentation_it_has():
    # Its first line is a nested helper: dedented, it would read as a top-level def.
    row = HUMANEVAL[6]
    body = row["canonical_solution"]
    assert body.startswith("    def parse_paren_group(")
    assert extract(f"```python\n{body}```", test_item=row) == body
