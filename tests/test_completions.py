"""Text prompts and the completions endpoint, through the pipeline and the fake server.

A model's ``api`` decides where a prompt goes: ``chat`` (messages to /chat/completions),
``completions`` (the prompt text to /completions) or ``auto`` (text templates to
/completions, chat messages to /chat/completions). What is sent is part of the
prediction key, so switching never reuses a reply to a different request.
"""

from __future__ import annotations

import json

import pytest

import harness
from harness.testing import FakeOpenAI

from .helpers import (
    JUDGE_MODEL,
    arith_reply,
    expected_cascade,
    expected_correct,
    model_and_judge,
    model_cfg,
    write_arith,
    write_config,
    write_judge_config,
)

N = 8
TEXT_TEMPLATE = "dict(type=PromptTemplate, template='Q: {question}\\nA:')"
CHAT_TEMPLATE = "dict(type=RawPromptTemplate,\n                             messages=[dict(role='user', content='{question}')])"


def config(tmp_path, base_url, api, template="chat"):
    data = write_arith(tmp_path / "a.jsonl", N)
    cfg = write_config(tmp_path / f"cfg-{api}-{template}.py", data,
                       models=[model_cfg(base_url, api=api)],
                       extra="from harness import PromptTemplate")
    if template == "text":
        cfg.write_text(cfg.read_text().replace(CHAT_TEMPLATE, TEXT_TEMPLATE))
    return cfg


@pytest.mark.parametrize("api,template,route", [
    ("chat", "text", "chat"), ("completions", "chat", "completions"),
    ("completions", "text", "completions"), ("auto", "text", "completions"),
    ("auto", "chat", "chat")])
async def test_the_api_decides_the_endpoint(tmp_path, api, template, route):
    async with FakeOpenAI(responder=arith_reply) as srv:
        report = await harness.evaluate(config(tmp_path, srv.base_url, api, template),
                                        work_dir=tmp_path / "w")
    assert srv.stats.by_route == {route: N}
    assert report.result("arith")["correct"] == expected_correct(N)
    first = srv.requests[0]
    if route == "completions":
        text = "Q: What is 0 + 1?\nA:" if template == "text" else "What is 0 + 1?"
        assert first["prompt"] == text and "messages" not in first
    else:
        assert first["messages"][-1]["content"].startswith(
            "Q: What is" if template == "text" else "What is")
    # The details say when the prompt's messages went as one text, and only then.
    rows = [json.loads(line) for line in
            (tmp_path / "w/details/fake/arith.jsonl").read_text().splitlines()]
    assert [r.get("api") for r in rows] == [
        "completions" if route == "completions" else None] * N


async def test_switching_the_api_asks_again_and_switching_back_reuses(tmp_path):
    async with FakeOpenAI(responder=arith_reply) as srv:
        for api, requests in (("chat", N), ("completions", N), ("chat", 0), ("auto", 0)):
            srv.reset()
            await harness.evaluate(config(tmp_path, srv.base_url, api),
                                   work_dir=tmp_path / "w")
            assert srv.stats.total == requests, api


async def test_a_judge_with_api_completions_is_asked_on_completions(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", N)
    async with FakeOpenAI(responder=model_and_judge, models=("fake-model", JUDGE_MODEL)) as srv:
        cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url,
                                 judge={"api": "completions"})
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    judged = [r for r in srv.requests if r["model"] == JUDGE_MODEL]
    assert judged and all("prompt" in r and "messages" not in r for r in judged)
    assert report.result("arith")["correct"] == expected_cascade(N)["final"]
