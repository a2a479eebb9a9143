"""The one anchored verdict parser, JSON mode, constraint extras and verdict probabilities."""

from __future__ import annotations

import json
import math
import re

import pytest

import harness
from harness.judge.verdict import (
    CONSTRAINT_MODES,
    FORMAT_REMINDER,
    JSON_FORMAT_REMINDER,
    constraint_params,
    parse_verdict,
    verdict_from_json,
    verdict_probability,
)
from harness.testing import FakeOpenAI, Reply

from .helpers import JUDGE_MODEL, write_arith, write_judge_config

PARAGRAPH = (
    "The candidate's answer is 42, which matches the standard answer of 42.\n"
    "Therefore the prediction is correct.\n\nA"
)

# (reply, expected verdict); the ids name what each row pins down.
CASES = [
    pytest.param("A", "A", id="bare-A"),
    pytest.param("B", "B", id="bare-B"),
    pytest.param("a", "A", id="lowercase-a"),
    pytest.param("b", "B", id="lowercase-b"),
    pytest.param("  A\n", "A", id="whitespace"),
    pytest.param("A.", "A", id="oc-disagreement-A-period"),
    pytest.param("B!", "B", id="exclamation"),
    pytest.param("A,", "A", id="comma"),
    pytest.param("B;", "B", id="semicolon"),
    pytest.param("A:", "A", id="colon"),
    pytest.param("**A**", "A", id="bold"),
    pytest.param("__B__", "B", id="underscore-bold"),
    pytest.param("*A*", "A", id="italic"),
    pytest.param("`B`", "B", id="code"),
    pytest.param("```\nA\n```", "A", id="code-fence"),
    pytest.param('"A"', "A", id="double-quotes"),
    pytest.param("'B'", "B", id="single-quotes"),
    pytest.param("\u201cA\u201d", "A", id="curly-quotes"),
    pytest.param('"**A.**"', "A", id="layers-quote-bold-period"),
    pytest.param('**"B"**.', "B", id="layers-bold-quote-period"),
    pytest.param("CORRECT", "A", id="oc-disagreement-CORRECT"),
    pytest.param("INCORRECT", "B", id="INCORRECT"),
    pytest.param("correct.", "A", id="lowercase-correct"),
    pytest.param("Incorrect", "B", id="titlecase-incorrect"),
    pytest.param("**CORRECT**", "A", id="bold-CORRECT"),
    pytest.param("A: CORRECT", "A", id="pair-colon"),
    pytest.param("B: INCORRECT", "B", id="pair-colon-B"),
    pytest.param("A) CORRECT", "A", id="pair-paren"),
    pytest.param("B. INCORRECT.", "B", id="pair-period"),
    pytest.param("A - correct", "A", id="pair-dash"),
    pytest.param("B INCORRECT", "B", id="pair-space"),
    pytest.param("**A: CORRECT**", "A", id="pair-bold"),
    pytest.param("A: INCORRECT", None, id="pair-inconsistent-A"),
    pytest.param("B: CORRECT", None, id="pair-inconsistent-B"),
    pytest.param("\uff21", "A", id="fullwidth-A"),
    pytest.param("\ufeffB\u200b", "B", id="bom-and-zero-width"),
    pytest.param("\uff22\uff0e", "B", id="fullwidth-B-period"),
    pytest.param("<think>Is 41 = 42? No, so B.</think>\nA", "A", id="think-block"),
    pytest.param("<THINK>hmm</THINK> **B**", "B", id="think-block-uppercase"),
    pytest.param("The template opened the block, I reason A.</think>B", "B", id="lone-close-think"),
    pytest.param("<think>Is it A? Maybe B", None, id="unterminated-think"),
    pytest.param("<think>done</think>", None, id="only-think"),
    pytest.param("Answer: B", None, id="oc-disagreement-Answer-B"),
    pytest.param("Based on analysis, the answer is A", None, id="oc-disagreement-based-on"),
    pytest.param("The answer is A.", None, id="sentence"),
    pytest.param(PARAGRAPH, None, id="oc-disagreement-paragraph"),
    pytest.param("", None, id="empty"),
    pytest.param("   \n", None, id="blank"),
    pytest.param(None, None, id="none"),
    pytest.param("A or B", None, id="both-options"),
    pytest.param("AB", None, id="AB"),
    pytest.param("NOT CORRECT", None, id="not-correct"),
    pytest.param("Correct answer: A", None, id="correct-answer-A"),
    pytest.param("A: CORRECT\nB: INCORRECT", None, id="echoed-both-lines"),
    pytest.param("A?", None, id="question-mark"),
    pytest.param("C", None, id="other-letter"),
    pytest.param("ACORRECT", None, id="pair-without-separator"),
    # Forms judges write that say one verdict and nothing else.
    pytest.param("\\boxed{A}", "A", id="boxed"),
    pytest.param("</think>\n\n$\\boxed{B}$", "B", id="think-then-boxed-math"),
    pytest.param("\\[\\boxed{B}\\]", "B", id="display-boxed"),
    pytest.param("(A)", "A", id="parenthesised"),
    pytest.param("B)", "B", id="option-paren"),
    pytest.param("[[B]]", "B", id="mt-bench-brackets"),
    pytest.param("(A) CORRECT", "A", id="pair-parenthesised-letter"),
    pytest.param("A (CORRECT)", "A", id="pair-parenthesised-word"),
    pytest.param("A\u3002", "A", id="cjk-full-stop"),
    pytest.param("B\uff1a\u9519\u8bef", "B", id="cjk-pair"),
    pytest.param("\u3010\u6b63\u786e\u3011", "A", id="cjk-word-in-brackets"),
    pytest.param("```text\nA\n```", "A", id="fence-with-language"),
    pytest.param("```A```", "A", id="fence-on-one-line"),
    pytest.param("```B\nA\n```", None, id="fence-first-line-is-a-verdict-not-a-tag"),
    pytest.param("```A-CORRECT\nB\n```", None, id="fence-first-line-is-a-pair-not-a-tag"),
    pytest.param("```A\n```", "A", id="fence-verdict-on-the-tag-line"),
    pytest.param("```c\nB\n```", "B", id="fence-with-one-letter-language"),
    pytest.param("<thinking>So B?</thinking>\nA", "A", id="thinking-tag"),
    pytest.param("\u25c1think\u25b7B\u25c1/think\u25b7A", "A", id="kimi-think-tag"),
    pytest.param("A<|im_end|>", "A", id="leaked-end-token"),
    pytest.param("B</s>", "B", id="leaked-eos"),
    pytest.param("It opens with a <think> block, then says 42 = 42.\n</think>\n\nA", "A",
                 id="reasoning-quotes-a-think-tag"),
    pytest.param("(A or B)", None, id="both-in-brackets"),
    pytest.param("[A] and [B]", None, id="two-bracketed"),
    pytest.param("\\boxed{A} \\boxed{B}", None, id="two-boxes"),
    pytest.param("(It is A)", None, id="sentence-in-brackets"),
    pytest.param("A) B", None, id="option-then-other-letter"),
]


@pytest.mark.parametrize(("reply", "expected"), CASES)
def test_parse_verdict(reply, expected):
    assert parse_verdict(reply) == expected


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        pytest.param('{"verdict": "A"}', "A", id="A"),
        pytest.param('{"verdict": "B"}', "B", id="B"),
        pytest.param(' {"verdict":"CORRECT"}\n', "A", id="value-goes-through-parser"),
        pytest.param('{"verdict": "Answer: B"}', None, id="value-unparsed"),
        pytest.param('{"verdict": 1}', None, id="non-string-value"),
        pytest.param('{"verdict": "A", "why": "same"}', None, id="extra-key"),
        pytest.param('{"answer": "A"}', None, id="wrong-key"),
        pytest.param('["A"]', None, id="array"),
        pytest.param("A", None, id="not-json"),
        pytest.param('```json\n{"verdict": "A"}\n```', "A", id="fenced"),
        pytest.param('<think>B?</think>\n{"verdict": "A"}', "A", id="after-reasoning"),
        pytest.param('{"verdict": "A"', None, id="truncated"),
        pytest.param("", None, id="empty"),
        pytest.param(None, None, id="none"),
    ],
)
def test_verdict_from_json(reply, expected):
    assert verdict_from_json(reply) == expected


def test_format_reminder_asks_for_one_letter():
    assert '"A"' in FORMAT_REMINDER and '"B"' in FORMAT_REMINDER


def test_the_json_reminder_asks_for_what_json_mode_reads():
    # A judge that obeys the reminder must give a readable verdict: in JSON mode a bare
    # letter is not one.
    for verdict in ("A", "B"):
        shown = json.dumps({"verdict": verdict})
        assert shown in JSON_FORMAT_REMINDER and verdict_from_json(shown) == verdict


def test_constraint_none_is_empty():
    assert constraint_params(None) == {}


def test_constraint_grammar():
    assert constraint_params("grammar") == {"grammar": 'root ::= "A" | "B"'}


def test_constraint_guided_choice():
    assert constraint_params("guided_choice") == {"guided_choice": ["A", "B"]}


async def test_json_schema_judge_sends_the_schema_and_reads_json_verdicts(tmp_path):
    """A judge configured with ``constrain="json_schema"`` asks the endpoint for
    structured output, scores ``{"verdict": ...}`` replies, and marks a reply outside the
    schema unparsed (neither correct nor wrong)."""
    # By question 'What is a + ...': a % 3 == 0 says A, 1 says B, 2 ignores the schema.
    replies = ['{"verdict": "A"}', '{"verdict": "B"}', "A"]

    def responder(body):
        if body["model"] != JUDGE_MODEL:
            return "42"
        # The whole conversation: a re-ask ends with the format reminder, not the question.
        a = int(re.search(r"What is (\d+) \+", json.dumps(body["messages"])).group(1))
        return replies[a % 3]

    data = write_arith(tmp_path / "a.jsonl", 6)
    async with FakeOpenAI(responder=responder) as srv:
        cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url, mode="judge",
                                 judge={"constrain": "json_schema"})
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
        bodies = [r for r in srv.requests if r["model"] == JUDGE_MODEL]

    # Four verdicts read at once; the other two asked three times (two re-asks) in vain.
    assert len(bodies) == 4 + 2 * 3
    for body in bodies:  # every request, re-asks included, carries the schema
        fmt = body["response_format"]
        assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
        schema = fmt["json_schema"]["schema"]
        assert schema["required"] == ["verdict"] and schema["additionalProperties"] is False
        assert schema["properties"]["verdict"]["enum"] == ["A", "B"]
        assert "guided_choice" not in body and "grammar" not in body
    rows = [json.loads(line) for line in
            (tmp_path / "w" / "details" / "fake" / "arith.jsonl").read_text().splitlines()]
    outcome = {row["index"]: (row["status"], row["correct"]) for row in rows}
    assert outcome == {0: ("ok", True), 1: ("ok", False), 2: ("judge_unparsed", None),
                       3: ("ok", True), 4: ("ok", False), 5: ("judge_unparsed", None)}
    result = report.result("arith")
    assert (result["correct"], result["pending"], result["complete"]) == (2, 2, False)


async def test_a_judge_reply_cut_at_max_tokens_is_no_verdict(tmp_path):
    """A judge that was writing "A comparison shows 4 is not 3, so B." and was cut at
    its max_tokens sends "A", read as a verdict: every wrong answer counted right.
    Unconstrained, a cut reply is re-asked and, still cut, unparsed; a cap too small
    for anything else is refused before any request."""

    def responder(body):
        if body["model"] != JUDGE_MODEL:
            return "The answer is 1000."  # wrong
        return Reply("A", finish_reason="length")

    data = write_arith(tmp_path / "a.jsonl", 2)
    async with FakeOpenAI(responder=responder) as srv:
        cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url, mode="judge",
                                 judge={"max_out_len": 8})
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
        # Three asks per sample; the client tries each once more, the reply having
        # stopped for length before max_tokens (a suspect truncation).
        assert len([r for r in srv.requests if r["model"] == JUDGE_MODEL]) == 2 * 3 * 2
        result = report.result("arith")
        assert result["correct"] == 0 and result["counts"] == {"judge_unparsed": 2}
        cfg = write_judge_config(tmp_path / "cfg1.py", data, srv.base_url, mode="judge",
                                 judge={"max_out_len": 1})
        with pytest.raises(harness.ConfigError, match="judge capped at 1 token"):
            await harness.evaluate(cfg, work_dir=tmp_path / "w1")
    # Constrained, the server could write nothing but a verdict: one token is one.
    async with FakeOpenAI(responder=responder) as srv:
        cfg = write_judge_config(tmp_path / "cfg2.py", data, srv.base_url, mode="judge",
                                 judge={"max_out_len": 1, "constrain": "guided_choice"})
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w2")
    assert report.result("arith")["correct"] == 2


def test_json_schema_replies_parse():
    enum = constraint_params("json_schema")["response_format"]["json_schema"]["schema"][
        "properties"]["verdict"]["enum"]
    assert [verdict_from_json(json.dumps({"verdict": v})) for v in enum] == ["A", "B"]


def test_constraint_modes_lists_every_mode():
    assert set(CONSTRAINT_MODES) == {"grammar", "guided_choice", "json_schema"}


def test_constraint_params_returns_a_fresh_copy():
    constraint_params("guided_choice")["guided_choice"].append("C")
    assert constraint_params("guided_choice") == {"guided_choice": ["A", "B"]}


def test_unknown_constraint_mode_lists_valid_ones():
    with pytest.raises(ValueError, match="grammar.*guided_choice.*json_schema"):
        constraint_params("regex")


def _lp(p: float) -> float:
    return math.log(p)


def test_probability_normalised_over_both_verdicts():
    logprobs = (("A", _lp(0.6), (("A", _lp(0.6)), ("B", _lp(0.2)), ("C", _lp(0.1)))),)
    assert verdict_probability(logprobs, "A") == pytest.approx(0.75)


def test_probability_of_b():
    logprobs = (("B", _lp(0.7), (("B", _lp(0.7)), ("A", _lp(0.3)))),)
    assert verdict_probability(logprobs, "B") == pytest.approx(0.7)


def test_probability_sums_spellings_of_one_verdict():
    alts = (("A", _lp(0.4)), (" a", _lp(0.2)), ("CORRECT", _lp(0.1)), ("B", _lp(0.1)),
            ("incorrect", _lp(0.1)))
    logprobs = (("A", _lp(0.4), alts), ("<eos>", 0.0, ()))
    assert verdict_probability(logprobs, "A") == pytest.approx(0.7 / 0.9)


def test_probability_correct_token():
    logprobs = (("CORRECT", _lp(0.5), (("CORRECT", _lp(0.5)), ("INCORRECT", _lp(0.5)))),)
    assert verdict_probability(logprobs, "A") == pytest.approx(0.5)


def test_probability_without_rival_is_token_probability():
    logprobs = (("A", _lp(0.9), (("A", _lp(0.9)), ("The", _lp(0.05)))),)
    assert verdict_probability(logprobs, "A") == pytest.approx(0.9)


def test_probability_without_alternatives_is_token_probability():
    assert verdict_probability((("B", _lp(0.8), ()),), "B") == pytest.approx(0.8)


def test_probability_counts_chosen_token_missing_from_alternatives():
    logprobs = (("A", _lp(0.5), (("B", _lp(0.5)),)),)
    assert verdict_probability(logprobs, "A") == pytest.approx(0.5)


def test_probability_survives_tiny_logprobs():
    logprobs = (("A", -800.0, (("A", -800.0), ("B", -801.0))),)
    assert verdict_probability(logprobs, "A") == pytest.approx(1 / (1 + math.exp(-1)))


@pytest.mark.parametrize("logprobs", [None, ()], ids=["none", "empty"])
def test_probability_missing_logprobs(logprobs):
    assert verdict_probability(logprobs, "A") is None


def test_probability_first_token_is_other_verdict():
    logprobs = (("B", _lp(0.9), (("B", _lp(0.9)), ("A", _lp(0.1)))),)
    assert verdict_probability(logprobs, "A") is None


def test_probability_first_token_not_a_verdict():
    logprobs = (("The", _lp(0.9), ()), (" answer", 0.0, ()), (" A", 0.0, ()))
    assert verdict_probability(logprobs, "A") is None
