"""A reply cut short for length is asked again once, and every retry shows in the progress.

A ``finish_reason='length'`` before ``max_tokens`` may be a server hiccup, or a context
too small for the reply: one more try tells them apart, six would only multiply the
cost of a context that will never fit.
"""

from __future__ import annotations

import json
import re

import pytest

import harness
from harness.progress import Progress
from harness.testing import FakeOpenAI, Fault, fail_first
from harness.testing.workloads import echo_last_user

from .helpers import (
    JUDGE_MODEL,
    arith_reply,
    expected_correct,
    fake_judge,
    model_cfg,
    write_arith,
    write_config,
    write_judge_config,
)

N = 12


def always(kind: str):
    return lambda body, attempt: Fault(kind)


async def test_a_reply_cut_short_every_time_is_asked_again_once_then_kept(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", N)
    async with FakeOpenAI(responder=arith_reply, faults=always("length")) as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(srv.base_url)])
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    assert srv.stats.total == 2 * N
    assert report.call_stats["fake"]["retries"] == N
    rows = [json.loads(line) for line in
            (tmp_path / "w/details/fake/arith.jsonl").read_text().splitlines()]
    # The second cut is the server's real answer: kept, and marked as cut.
    assert all(r["finish_reason"] == "length" and r["prediction"] for r in rows)
    assert report.result("arith")["complete"] is True


async def test_a_reply_cut_short_once_gets_its_full_answer(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", N)
    async with FakeOpenAI(responder=arith_reply, faults=fail_first(1, "length")) as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(srv.base_url)])
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    assert srv.stats.total == 2 * N
    assert report.result("arith")["correct"] == expected_correct(N)


async def test_every_retry_is_counted_in_the_progress_line(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", N)
    progress = Progress()
    async with FakeOpenAI(responder=arith_reply, faults=fail_first(2, "server_error")) as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(srv.base_url)])
        await harness.evaluate(cfg, work_dir=tmp_path / "w", progress=progress)
    assert f"{2 * N} retries" in progress.line()
    assert f"{N}/{N} samples" in progress.line()


async def test_an_empty_reply_cut_short_is_asked_again_once_too(tmp_path):
    # What a full context slot sends: no answer at all, stopped for length.
    data = write_arith(tmp_path / "a.jsonl", N)
    async with FakeOpenAI(responder=arith_reply,
                          faults=lambda body, attempt: Fault("length", keep=0)) as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(srv.base_url)])
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    assert srv.stats.total == 2 * N
    assert report.result("arith")["counts"] == {"empty_reply": N}
    assert report.call_stats["fake"]["by_kind"] == {"truncated": 2 * N}


def sum_reply(template: str):
    """A responder that states the right sum of the question through ``template``."""
    def reply(body):
        a, b = (int(x) for x in re.findall(r"\d+", echo_last_user(body))[:2])
        return template.format(a=a, b=b, total=a + b)
    return reply


@pytest.mark.parametrize("template, counts, correct", [
    # Only the number it ends on, which a reply stopped for length never concluded.
    ("{a} plus {b} makes {total}", {"extract_failed": N}, 0),
    # An answer the reply committed to counts, cut off after it or not.
    ("{a} plus {b}. The answer is {total}. Let me check", {"ok": N}, N),
], ids=["ends-on-a-number", "committed-answer"])
async def test_a_reply_kept_cut_off_counts_only_an_answer_it_committed_to(
        tmp_path, template, counts, correct):
    data = write_arith(tmp_path / "a.jsonl", N)
    # Cut twice (the retry too) and kept whole: only the finish reason says it stopped.
    async with FakeOpenAI(responder=sum_reply(template),
                          faults=lambda body, attempt: Fault("length", keep=1000)) as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(srv.base_url)])
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    result = report.result("arith")
    assert result["counts"] == counts
    assert result["correct"] == correct
    rows = [json.loads(line) for line in
            (tmp_path / "w/details/fake/arith.jsonl").read_text().splitlines()]
    assert all(r["finish_reason"] == "length" for r in rows)


async def test_a_reply_that_stopped_on_its_own_may_end_on_its_answer(tmp_path):
    # The same replies, not cut: the number a finished reply ends on is its answer.
    data = write_arith(tmp_path / "a.jsonl", N)
    async with FakeOpenAI(responder=sum_reply("{a} plus {b} makes {total}")) as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(srv.base_url)])
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    assert report.result("arith")["correct"] == N


def cut_model_and_judge(replies) -> FakeOpenAI:
    """A server whose model sends ``replies`` stopped for length (whole), and an exact
    judge."""
    return FakeOpenAI(
        responder=lambda body: fake_judge(body) if body["model"] == JUDGE_MODEL
        else replies(body),
        faults=lambda body, attempt: (None if body["model"] == JUDGE_MODEL
                                      else Fault("length", keep=1000)),
        models=("fake-model", JUDGE_MODEL))


MATH_RULE = "dict(type=MATHVerifyEvaluator, pred_postprocessor=dict(type='math_postprocess_v2'))"
GSM8K_RULE = "dict(type=AccEvaluator, pred_postprocessor=dict(type='gsm8k'))"


@pytest.mark.parametrize("rule", [GSM8K_RULE, MATH_RULE], ids=["gsm8k", "math"])
async def test_a_cascade_rule_layer_reads_a_cut_reply_as_cut_and_asks_the_judge(tmp_path, rule):
    # The rule layer's own pred_postprocessor extracts here (as in math500_cascade.py):
    # it must see the finish reason as a dataset's does, so the judge decides instead.
    data = write_arith(tmp_path / "a.jsonl", N)
    replies = sum_reply("{a} plus {b}, so the sum is {total}.")
    async with cut_model_and_judge(replies) as srv:
        cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url, rule=rule)
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    rows = [json.loads(line) for line in
            (tmp_path / "w/details/fake/arith.jsonl").read_text().splitlines()]
    # Nothing extracted by the rule layer (it took the sum the reply ends on before).
    assert [r["rule_evaluation"]["pred"] for r in rows] == [""] * N
    assert sum(r["model"] == JUDGE_MODEL for r in srv.requests) == N
    assert report.result("arith")["cascade_stats"]["llm_correct"] == N


async def test_the_same_cut_reply_scores_alike_with_and_without_a_judge(tmp_path):
    # math500.py's extraction sits on the dataset, math500_cascade.py's on the rule
    # layer: the same cut replies must get the same rule verdicts from both.
    data = write_arith(tmp_path / "a.jsonl", N)
    replies = sum_reply("{a} plus {b}, so the sum is {total}.")
    async with cut_model_and_judge(replies) as srv:
        plain = write_config(tmp_path / "plain.py", data, models=[model_cfg(srv.base_url)],
                             evaluator="MATHVerifyEvaluator", pred_pp="math_postprocess_v2")
        cascade = write_judge_config(tmp_path / "cascade.py", data, srv.base_url,
                                     rule=MATH_RULE)
        await harness.evaluate(plain, work_dir=tmp_path / "plain")
        await harness.evaluate(cascade, work_dir=tmp_path / "cascade")
    plain_rows = [json.loads(line) for line in
                  (tmp_path / "plain/details/fake/arith.jsonl").read_text().splitlines()]
    cascade_rows = [json.loads(line) for line in
                    (tmp_path / "cascade/details/fake/arith.jsonl").read_text().splitlines()]
    assert [(r["status"], r["pred"]) for r in plain_rows] == [("extract_failed", "")] * N
    assert [r["rule_evaluation"]["pred"] for r in cascade_rows] == [r["pred"] for r in plain_rows]


async def test_a_cut_reply_cleaned_of_its_reasoning_is_still_read_as_cut(tmp_path):
    # strip-think on the dataset only removes the reply's start: the evaluator's gsm8k
    # extractor still reads a reply that stopped for length, not a finished one.
    data = write_arith(tmp_path / "a.jsonl", N)
    async with FakeOpenAI(responder=sum_reply("<think>add</think>{a} plus {b} makes {total}"),
                          faults=lambda body, attempt: Fault("length", keep=1000)) as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(srv.base_url)],
                           evaluator="AccEvaluator, pred_postprocessor=dict(type='gsm8k')",
                           pred_pp="'strip-think'", extra="from harness import AccEvaluator")
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    assert report.result("arith")["counts"] == {"extract_failed": N}


async def test_an_answer_extracted_from_a_cut_reply_is_not_read_as_cut_again(tmp_path):
    # The dataset's and the evaluator's pred_postprocessor both extract: the second reads
    # the answer the first took from the reply, which the cut did not shorten.
    data = write_arith(tmp_path / "a.jsonl", N)
    async with FakeOpenAI(responder=lambda body: "The answer is red green blue yellow. Let",
                          faults=lambda body, attempt: Fault("length", keep=1000)) as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(srv.base_url)],
                           evaluator="AccEvaluator, pred_postprocessor=dict(type='bbh-freeform')",
                           pred_pp="bbh_freeform_postprocess", ref_pp=None,
                           extra="from harness import AccEvaluator")
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    rows = [json.loads(line) for line in
            (tmp_path / "w/details/fake/arith.jsonl").read_text().splitlines()]
    assert report.result("arith")["counts"] == {"ok": N}
    assert all(r["pred"] == "red green blue yellow" for r in rows)
