"""A stored or shared unparsed verdict serves only a judge allowed no more re-asks.

``max_reasks`` stays out of the verdict key (an ``ok`` verdict serves every judge, and
existing work directories keep theirs), so the re-asks an unparsed verdict was given are
recorded with it: a judge allowed more asks again, in a rerun and within one run.
"""

from __future__ import annotations

import sqlite3

import pytest

import harness
from harness.judge.verdict import FORMAT_REMINDER
from harness.testing import FakeOpenAI

from .helpers import (
    JUDGE_MODEL,
    JUDGE_TEMPLATE,
    arith_datasets,
    write_arith,
    write_judge_config,
)

N = 4


def reminded_judge(body: dict) -> str:
    """A judge that writes a paragraph first and answers ``A`` once reminded; a model
    that answers every question wrong, so every sample reaches the judge."""
    if body["model"] != JUDGE_MODEL:
        return "The answer is 999."
    if body["messages"][-1]["content"] == FORMAT_REMINDER:
        return "A"
    return "The candidate matches the gold, so it is correct."


def judge_requests(server: FakeOpenAI) -> int:
    return sum(r["model"] == JUDGE_MODEL for r in server.requests)


@pytest.fixture
async def server():
    async with FakeOpenAI(responder=reminded_judge) as srv:
        yield srv


@pytest.fixture
def data(tmp_path):
    return write_arith(tmp_path / "a.jsonl", N)


async def run(tmp_path, server, data, max_reasks: int, name: str = "cfg.py") -> dict:
    cfg = write_judge_config(tmp_path / name, data, server.base_url,
                             judge={"max_reasks": max_reasks})
    report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    return report.result("arith")


async def test_raised_max_reasks_asks_a_stored_unparsed_verdict_again(tmp_path, server, data):
    first = await run(tmp_path, server, data, 0)
    assert first["cascade_stats"]["unparsed"] == N and first["correct"] == 0
    before = judge_requests(server)
    second = await run(tmp_path, server, data, 2, "cfg2.py")
    # As a fresh work directory scores it: each sample asked, then reminded once.
    assert second["cascade_stats"]["unparsed"] == 0 and second["correct"] == N
    assert judge_requests(server) - before == 2 * N


async def test_a_verdict_asked_again_is_stored_and_never_bought_twice(tmp_path, server, data):
    await run(tmp_path, server, data, 0)
    await run(tmp_path, server, data, 2, "cfg2.py")
    before = judge_requests(server)
    again = await run(tmp_path, server, data, 2, "cfg3.py")
    # The readable verdict serves any judge, whatever max_reasks it allows.
    lower = await run(tmp_path, server, data, 0, "cfg4.py")
    assert judge_requests(server) == before
    assert again["correct"] == lower["correct"] == N


async def test_an_unparsed_verdict_serves_a_judge_allowed_fewer_reasks(tmp_path, data):
    def never(body: dict) -> str:
        return "It looks fine." if body["model"] == JUDGE_MODEL else "The answer is 999."

    async with FakeOpenAI(responder=never) as srv:
        await run(tmp_path, srv, data, 2)
        before = judge_requests(srv)
        fewer = await run(tmp_path, srv, data, 1, "cfg2.py")
        assert judge_requests(srv) == before
    assert fewer["cascade_stats"]["unparsed"] == N


async def test_one_run_does_not_share_an_unparsed_verdict_with_a_judge_allowed_more(
        tmp_path, server, data):
    cfg = tmp_path / "cfg.py"
    source = write_judge_config(tmp_path / "one.py", data, server.base_url,
                                judge={"max_reasks": 0}).read_text()
    # The same rows and judge prompt under a second name, with re-asks allowed.
    judge_cfg = {"abbr": "judge", "path": JUDGE_MODEL, "openai_api_base": server.base_url,
                 "key": "sk-judge-not-a-secret", "max_reasks": 2}
    llm = (f"dict(type=GenericLLMEvaluator, prompt_template=dict(type=RawPromptTemplate, "
           f"messages=[dict(role='user', content={JUDGE_TEMPLATE!r})]), "
           f"judge_cfg={judge_cfg!r}, dict_postprocessor=dict(type=generic_llmjudge_postprocess))")
    evaluator = (f"dict(type=CascadeEvaluator, rule_evaluator=dict(type=AccEvaluator, "
                 f"pred_postprocessor=dict(type='gsm8k')), llm_evaluator={llm})")
    second = arith_datasets(data, f"dict(evaluator={evaluator}, "
                                  "dataset_postprocessor=dict(type='gsm8k-dataset'))",
                            abbr="arith2")
    cfg.write_text(source + second.replace("datasets = [", "datasets += [", 1))
    report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    assert report.result("arith")["cascade_stats"]["unparsed"] == N
    assert report.result("arith2")["cascade_stats"]["unparsed"] == 0
    assert report.result("arith2")["correct"] == N


async def test_an_unparsed_verdict_of_a_schema_5_store_counts_as_given_no_reasks(
        tmp_path, data):
    """Re-asks were not recorded before schema 6: a migrated unparsed verdict is asked
    again by a judge allowed re-asks, even where a stored outcome points at it."""
    reminders = {"read": False}

    def judge(body: dict) -> str:
        # The same judge, which reads the reminder in the second run only.
        if body["model"] == JUDGE_MODEL and not reminders["read"]:
            return "It looks fine."
        return reminded_judge(body)

    async with FakeOpenAI(responder=judge) as srv:
        await run(tmp_path, srv, data, 2)
        con = sqlite3.connect(tmp_path / "w" / "harness.db")
        con.executescript("ALTER TABLE verdicts DROP COLUMN reasks;"
                          "UPDATE meta SET value = '5' WHERE name = 'schema_version';")
        con.close()
        reminders["read"] = True
        before = judge_requests(srv)
        rerun = await run(tmp_path, srv, data, 2)
        assert judge_requests(srv) - before == 2 * N
    assert rerun["cascade_stats"]["unparsed"] == 0 and rerun["correct"] == N
