"""A reply cut short for length is asked again once, and every retry shows in the progress.

A ``finish_reason='length'`` before ``max_tokens`` may be a server hiccup, or a context
too small for the reply: one more try tells them apart, six would only multiply the
cost of a context that will never fit.
"""

from __future__ import annotations

import json

import harness
from harness.progress import Progress
from harness.testing import FakeOpenAI, Fault, fail_first

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
