"""An empty reply is not an answer: retried like a malformed one, scored only when it stays.

A reply whose content is ``""`` with tokens counted is what a broken proxy sends, or a
reasoning model that put everything in ``reasoning_content``. It must cost a retry,
never a wrong answer; a model that really answers nothing scores zero under its own
count (``empty_reply``).
"""

from __future__ import annotations

import json
import sqlite3

import harness
from harness.testing import FakeOpenAI, Fault, Reply, fail_first

from .helpers import arith_reply, expected_correct, model_cfg, write_arith, write_config

N = 20


def rows(work):
    return [json.loads(line) for line in
            (work / "details" / "fake" / "arith.jsonl").read_text().splitlines()]


async def test_a_transient_empty_reply_costs_one_retry_never_a_wrong_answer(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", N)
    async with FakeOpenAI(responder=arith_reply,
                          faults=fail_first(1, Fault("empty_content"))) as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(srv.base_url)])
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    result = report.result("arith")
    assert result["correct"] == expected_correct(N) and result["counts"] == {"ok": N}
    assert result["accuracy"] == 100.0 * expected_correct(N) / N
    assert srv.stats.faults["empty_content"] == N and srv.stats.total == 2 * N
    assert report.call_stats["fake"]["retries"] == N


async def test_a_model_that_answers_nothing_scores_zero_under_its_own_count(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", N)
    async with FakeOpenAI(responder=lambda body: Reply("")) as srv:
        cfg = write_config(tmp_path / "cfg.py", data,
                           models=[model_cfg(srv.base_url, max_attempts=3)])
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
        again = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    result = report.result("arith")
    assert result["counts"] == {"empty_reply": N}
    assert result["accuracy"] == 0.0 and result["complete"] is True
    assert result["extract_rate"] == 0.0
    assert srv.stats.total == 3 * N  # every attempt was spent, then the reply kept
    # Kept as the model's answer, so no call failed (the report's "failed calls").
    assert report.call_stats["fake"]["failures"] == 0
    assert report.call_stats["fake"]["by_kind"] == {"empty_reply": 3 * N}
    assert all(r["status"] == "empty_reply" and r["correct"] is False
               for r in rows(tmp_path / "w"))
    # The reference as a scored sample shows it: after gsm8k_dataset_postprocess.
    assert [r["reference"] for r in rows(tmp_path / "w")][:3] == ["1", "3", "5"]
    # The stored empty reply is the model's answer: a rerun asks nothing again.
    assert again.call_stats["fake"]["requests"] == 0
    assert again.result("arith")["counts"] == {"empty_reply": N}


async def test_reasoning_is_stored_and_shown_but_never_scored(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 4)

    def reasoner(body):
        answer = arith_reply(body, wrong_every=0)
        # Index 0 answers only in its reasoning: that is no answer.
        if "What is 0 + 1?" in body["messages"][-1]["content"]:
            return Reply("", reasoning=f"Thinking... {answer}")
        return Reply(answer, reasoning="Thinking... The answer is 12345.")

    async with FakeOpenAI(responder=reasoner) as srv:
        cfg = write_config(tmp_path / "cfg.py", data,
                           models=[model_cfg(srv.base_url, max_attempts=2)])
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
        again = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    assert report.result("arith")["counts"] == {"empty_reply": 1, "ok": 3}
    assert report.result("arith")["correct"] == 3
    first = rows(tmp_path / "w")
    assert first[0]["reasoning"] == "Thinking... Let me add 0 and 1. The answer is 1."
    assert first[0]["correct"] is False
    assert all(r["reasoning"] == "Thinking... The answer is 12345." for r in first[1:])
    # Served from the store, the reasoning is still there.
    assert again.call_stats["fake"]["requests"] == 0
    assert rows(tmp_path / "w") == first


async def test_empty_replies_stored_by_schema_1_are_asked_again(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", N)
    async with FakeOpenAI(responder=arith_reply) as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(srv.base_url)])
        clean = await harness.evaluate(cfg, work_dir=tmp_path / "w")
        # Make the store what schema 1 left behind: no reasoning column, and five
        # empty replies stored as answers after a single attempt.
        con = sqlite3.connect(tmp_path / "w" / "harness.db")
        con.execute("ALTER TABLE predictions DROP COLUMN reasoning")
        con.execute("ALTER TABLE verdicts DROP COLUMN reasks")  # schema 6
        con.execute("UPDATE predictions SET text = '' WHERE idx < 5")
        con.execute("UPDATE meta SET value = '1' WHERE name = 'schema_version'")
        con.commit()
        con.close()
        srv.reset()
        rerun = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    assert srv.stats.total == 5
    assert rerun.result("arith")["correct"] == clean.result("arith")["correct"]
    assert rerun.result("arith")["counts"] == {"ok": N}


async def test_in_a_cascade_an_empty_reply_is_a_rule_failure_in_the_layer_split(tmp_path):
    from .helpers import JUDGE_MODEL, model_and_judge, write_judge_config

    def replies(body):
        # Indices 0 and 2 (rule-correct otherwise) answer nothing.
        if body["model"] != JUDGE_MODEL and any(
                f"What is {a} + " in body["messages"][-1]["content"] for a in (0, 2)):
            return Reply("")
        return model_and_judge(body)

    data = write_arith(tmp_path / "a.jsonl", 8)
    async with FakeOpenAI(responder=replies, models=("fake-model", JUDGE_MODEL)) as srv:
        cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url)
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w",
                                        overrides=harness.ModelOverrides(max_attempts=1))
    result = report.result("arith")
    stats = result["cascade_stats"]
    # Rule-correct: 4, 6; rescued by the judge: 1, 5; wrong: 3, 7; empty: 0, 2.
    assert result["counts"] == {"empty_reply": 2, "ok": 6}
    assert stats["total_samples"] == 8 and stats["rule_correct"] == 2
    assert stats["rule_accuracy"] == 25.0 and stats["final_accuracy"] == 50.0
    assert "50.00 (4/8, extract 75%) = rule 25.00 + judge 25.00" in report.table()


async def test_the_cli_warns_when_every_reply_of_a_dataset_is_empty(tmp_path):
    # 0.00 with exit 0 from an endpoint that only ever sends "" (a proxy that drops the
    # content, a reasoning model out of tokens) measures the endpoint, not the model.
    import anyio

    from .test_cli import cli, env

    def some_empty(body):
        return Reply("") if "What is 0 " in str(body) else arith_reply(body)

    data = write_arith(tmp_path / "a.jsonl", 4)
    runs = []
    for i, responder in enumerate((lambda body: Reply(""), some_empty)):
        async with FakeOpenAI(responder=responder) as srv:
            cfg = write_config(tmp_path / f"cfg{i}.py", data,
                               models=[model_cfg(srv.base_url, max_attempts=1)])
            runs.append(await anyio.run_process(
                cli("run", str(cfg), "-w", str(tmp_path / f"w{i}"), "-q"), env=env(),
                check=False))
    every, some = runs
    assert b"warning: every reply of fake on arith was empty (4)" in every.stderr
    assert b"reasoning_content" in every.stderr
    assert b"warning" not in some.stderr  # one empty answer is the model's own
    assert every.returncode == some.returncode == 0
