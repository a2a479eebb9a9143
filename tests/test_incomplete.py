"""An incomplete run never shows a final-looking score.

When the judge is down or rate-limited past its retries, the cascade samples it should
have judged are pending: they are exactly the rule failures, so scoring them by their
rule verdict (or dropping them) would print a wrong number. Every results file says the
run is incomplete and gives the bounds of the accuracy; the next run asks exactly the
pending calls.
"""

from __future__ import annotations

import json

import anyio
import pytest

import harness
from harness.testing import FakeOpenAI, Fault

from .helpers import JUDGE_MODEL, expected_cascade, model_and_judge, write_arith, write_judge_config
from .test_cli import cli, env

N = 20
WANT = expected_cascade(N)

JUDGE_DOWN = {
    "server_error": Fault("server_error", status=500),
    "rate_limited": Fault("rate_limit", retry_after=0.01),
}


def judge_fails(fault):
    return lambda body, attempt: fault if body["model"] == JUDGE_MODEL else None


def summary(work):
    return json.loads((work / "summary.json").read_text())["results"][0]


@pytest.mark.parametrize("kind", sorted(JUDGE_DOWN))
async def test_a_failing_judge_leaves_its_samples_pending_with_bounds(tmp_path, kind):
    data = write_arith(tmp_path / "a.jsonl", N)
    async with FakeOpenAI(responder=model_and_judge, faults=judge_fails(JUDGE_DOWN[kind]),
                          models=("fake-model", JUDGE_MODEL)) as srv:
        cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url,
                                 judge={"max_attempts": 2, "rate_limit_timeout": 0.2})
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    result = report.result("arith")
    pending = WANT["rule_failures"]
    assert result["complete"] is False and result["pending"] == pending
    assert result["counts"] == {"ok": WANT["rule_correct"], "judge_error": pending}
    # No single number: the accuracy lies between all pending wrong and all right.
    assert result["accuracy"] is None and result["accuracy_ci95"] is None
    assert result["accuracy_bounds"] == [100.0 * WANT["rule_correct"] / N,
                                         100.0 * (WANT["rule_correct"] + pending) / N]
    assert result["cascade_stats"]["final_accuracy"] is None
    assert result["cascade_stats"]["judge_error"] == pending
    assert summary(tmp_path / "w") == {**result, "call_stats": summary(tmp_path / "w")["call_stats"]}
    assert report.failed == pending and not report.complete
    assert "INCOMPLETE" in report.table()


async def test_the_next_run_asks_exactly_the_pending_judge_calls(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", N)
    async with FakeOpenAI(responder=model_and_judge, models=("fake-model", JUDGE_MODEL),
                          faults=judge_fails(JUDGE_DOWN["server_error"])) as srv:
        cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url,
                                 judge={"max_attempts": 2})
        await harness.evaluate(cfg, work_dir=tmp_path / "w")
        srv.faults = None
        srv.reset()
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    judged = [r for r in srv.requests if r["model"] == JUDGE_MODEL]
    assert len(judged) == WANT["rule_failures"] and len(srv.requests) == len(judged)
    result = report.result("arith")
    assert result["complete"] is True
    assert result["accuracy"] == 100.0 * WANT["final"] / N
    assert report.complete


async def test_the_cli_marks_an_incomplete_run_and_exits_1(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", N)
    async with FakeOpenAI(responder=model_and_judge, models=("fake-model", JUDGE_MODEL),
                          faults=judge_fails(JUDGE_DOWN["server_error"])) as srv:
        cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url,
                                 judge={"max_attempts": 2})
        result = await anyio.run_process(cli("run", str(cfg), "-w", str(tmp_path / "w"), "-q"),
                                         env=env(), check=False)
    out, err = result.stdout.decode(), result.stderr.decode()
    assert result.returncode == 1
    low = 100.0 * WANT["rule_correct"] / N
    high = 100.0 * (WANT["rule_correct"] + WANT["rule_failures"]) / N
    assert f"INCOMPLETE {low:.2f}..{high:.2f}" in out
    assert f"{WANT['rule_failures']} judge_error" in out
    assert f"INCOMPLETE: {WANT['rule_failures']} samples are pending" in err
    results = json.loads((tmp_path / "w" / "results" / "fake" / "arith.json").read_text())
    assert results["complete"] is False and results["accuracy"] is None


async def test_infer_mode_with_a_failed_call_is_incomplete(tmp_path):
    from .helpers import arith_reply, model_cfg, write_config

    data = write_arith(tmp_path / "a.jsonl", 6)
    fails = lambda body, attempt: (  # noqa: E731
        Fault("server_error") if "What is 2 + " in str(body) else None)
    async with FakeOpenAI(responder=arith_reply, faults=fails) as srv:
        cfg = write_config(tmp_path / "cfg.py", data,
                           models=[model_cfg(srv.base_url, max_attempts=1)])
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w", mode="infer")
    result = report.result("arith")
    assert result["complete"] is False and result["pending"] == 1
    assert result["pending_counts"] == {"model_error": 1}
    assert "5 predicted, INCOMPLETE: 1 model_error" in report.table()


async def test_the_cli_says_which_pending_samples_a_rerun_retries(tmp_path):
    def replies(body):
        text = str(body["messages"])
        if body["model"] == JUDGE_MODEL and "What is 1 + " in text:
            return "I would say it depends."  # never a verdict
        return model_and_judge(body)

    fails = lambda body, attempt: (  # noqa: E731
        Fault("server_error") if body["model"] != JUDGE_MODEL and "What is 2 + " in str(body)
        else None)
    data = write_arith(tmp_path / "a.jsonl", 4)
    async with FakeOpenAI(responder=replies, faults=fails,
                          models=("fake-model", JUDGE_MODEL)) as srv:
        cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url, mode="judge")
        result = await anyio.run_process(
            cli("run", str(cfg), "-w", str(tmp_path / "w"), "-q", "--max-attempts", "1"),
            env=env(), check=False)
    err = result.stderr.decode()
    assert result.returncode == 1
    assert "INCOMPLETE: 2 samples are pending" in err
    assert "model_error: the model call failed for good: run the same command again" in err
    assert "model_error: 1 × HTTP 500: " in err and "after 1 attempt" in err
    assert "judge_unparsed: the judge's verdict stayed unreadable after its re-asks " \
           "(a rerun keeps it unless max_reasks is raised)" in err
