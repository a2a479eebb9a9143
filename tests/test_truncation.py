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

from .helpers import arith_reply, expected_correct, model_cfg, write_arith, write_config

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
