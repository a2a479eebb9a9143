"""The shipped code configs end to end: the fake server replays known-good and
known-bad completions, the pipeline runs them in the sandbox, the store keeps the
executions (a rerun runs nothing) and a failed sandbox leaves the sample pending."""

from __future__ import annotations

import json
import os
import runpy
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

import harness
from harness.evaluators import code as code_evaluators
from harness.results import pass_at_k
from harness.sandbox import Execution
from harness.testing import FakeOpenAI

DATASETS = Path(__file__).resolve().parents[1] / "datasets"
HUMANEVAL = [json.loads(x) for x in
             (DATASETS / "data/humaneval/HumanEval.jsonl").read_text().splitlines()]
BY_PROMPT = {row["prompt"]: (i, row) for i, row in enumerate(HUMANEVAL)}


def _task(body: dict) -> tuple[int, dict]:
    text = body["messages"][-1]["content"]
    return BY_PROMPT[text.split("Complete the following python code:\n", 1)[1]]


def good(row: dict) -> str:
    return f"Here you go:\n```python\n{row['prompt']}{row['canonical_solution']}```\n"


def bad(row: dict) -> str:
    return "```python\n" + row["prompt"] + "    return None\n```"


def every_other(body: dict) -> str:
    """Even tasks get their canonical solution, odd ones a wrong body."""
    i, row = _task(body)
    return good(row) if i % 2 == 0 else bad(row)


def _model(srv: FakeOpenAI) -> list[dict]:
    return [dict(abbr="fake", path="fake-model", openai_api_base=srv.base_url)]


async def _run(tmp_path: Path, responder, **kw):
    async with FakeOpenAI(responder=responder) as srv:
        return await harness.evaluate(DATASETS / "humaneval.py", work_dir=tmp_path / "w",
                                      models=_model(srv), **kw)


async def test_the_shipped_humaneval_config_scores_good_and_bad_completions(tmp_path):
    report = await _run(tmp_path, every_other, limit=10)
    summary = report.summaries[0]
    assert (summary["total"], summary["correct"], summary["complete"]) == (10, 5, True)
    assert summary["accuracy"] == 50.0
    details = [json.loads(x) for x in Path(summary["details"]).read_text().splitlines()]
    assert [d["correct"] for d in details] == [i % 2 == 0 for i in range(10)]
    assert {d["outcome"] for d in details} == {"passed", "failed"}
    assert all(d["failed_assertion"] for d in details if not d["correct"])


async def test_a_rerun_executes_nothing(tmp_path, monkeypatch):
    first = await _run(tmp_path, every_other, limit=10)
    db = sqlite3.connect(tmp_path / "w" / "harness.db")
    assert db.execute("SELECT count(*) FROM executions").fetchone() == (10,)
    db.close()

    async def refuse(*args, **kwargs):
        raise AssertionError("a stored execution was run again")

    monkeypatch.setattr(code_evaluators, "run_program", refuse)
    again = await _run(tmp_path, every_other, limit=10)
    assert again.summaries[0]["correct"] == first.summaries[0]["correct"] == 5
    details = Path(again.summaries[0]["details"]).read_text().splitlines()
    assert all(json.loads(d)["execution_cached"] for d in details)


async def test_a_sandbox_error_is_pending_and_retried_by_the_next_run(tmp_path, monkeypatch):
    real = code_evaluators.run_program

    async def broken(*args, **kwargs):
        return Execution("sandbox_error", 1, "", "bwrap: No permissions", "the sandbox "
                         "failed before the program ran (bwrap: No permissions)")

    monkeypatch.setattr(code_evaluators, "run_program", broken)
    first = (await _run(tmp_path, every_other, limit=4)).summaries[0]
    assert first["complete"] is False and first["accuracy"] is None
    assert first["pending_counts"] == {"sandbox_error": 4}
    assert first["accuracy_bounds"] == [0.0, 100.0]  # never counted as wrong
    monkeypatch.setattr(code_evaluators, "run_program", real)
    second = (await _run(tmp_path, every_other, limit=4)).summaries[0]
    assert (second["complete"], second["correct"]) == (True, 2)


async def test_limits_python_cannot_start_under_leave_every_sample_pending(tmp_path):
    # Not one line of the replies ran: scored as failures, they made a complete 0 %.
    spec = runpy.run_path(str(DATASETS / "humaneval.py"))["datasets"][0]
    evaluator = {**spec["eval_cfg"]["evaluator"], "limits": dict(memory=10_000_000)}
    spec = {**spec, "path": str(DATASETS / spec["path"]),
            "eval_cfg": {**spec["eval_cfg"], "evaluator": evaluator}}
    async with FakeOpenAI(responder=every_other) as srv:
        report = await harness.evaluate(datasets=[spec], models=_model(srv),
                                        work_dir=tmp_path / "w", limit=2)
    summary = report.summaries[0]
    assert summary["complete"] is False and summary["accuracy"] is None
    assert summary["pending_counts"] == {"sandbox_error": 2}


async def test_replicas_report_the_configured_pass_at_k(tmp_path):
    correct_of = [0, 1, 3, 10, 5]  # of 10 replicas, per task
    calls: Counter = Counter()

    def replay(body: dict) -> str:
        i, row = _task(body)
        calls[i] += 1
        return good(row) if calls[i] <= correct_of[i] else bad(row)

    spec = runpy.run_path(str(DATASETS / "humaneval.py"))["datasets"][0]
    spec = {**spec, "n": 10, "path": str(DATASETS / spec["path"])}
    async with FakeOpenAI(responder=replay) as srv:
        report = await harness.evaluate(datasets=[spec], models=_model(srv),
                                        work_dir=tmp_path / "w", limit=5)
    summary = report.summaries[0]
    assert set(summary["pass_at_k"]) == {"pass@1", "pass@10"}  # k=[1, 10]
    expected = {k: 100 * sum(pass_at_k(10, c, k) for c in correct_of) / 5 for k in (1, 10)}
    assert summary["pass_at_k"]["pass@1"] == expected[1] == 38.0
    assert summary["pass_at_k"]["pass@10"] == expected[10] == 80.0
    # Each pass@k has its interval over the 5 samples, around its value.
    for k, value in summary["pass_at_k"].items():
        low, high = summary["pass_at_k_ci95"][k]
        assert 0 <= low < value < high <= 100


async def test_a_code_rule_layer_in_a_cascade_runs_its_programs_and_judges_the_failures(
        tmp_path):
    judged: list[str] = []

    def replay(body: dict) -> str:
        if body["model"] == "judge-model":
            judged.append(body["messages"][-1]["content"])
            return "B"
        return every_other(body)

    spec = runpy.run_path(str(DATASETS / "humaneval.py"))["datasets"][0]
    rule = spec["eval_cfg"]["evaluator"]
    spec = {**spec, "path": str(DATASETS / spec["path"]), "eval_cfg": {**spec["eval_cfg"],
            "evaluator": dict(
                type=harness.CascadeEvaluator, rule_evaluator=rule, parallel=False,
                llm_evaluator=dict(
                    type=harness.GenericLLMEvaluator,
                    prompt_template=harness.judge_template(
                        "grader", question="prompt", answer="canonical_solution"),
                    judge_cfg=dict(path="judge-model", openai_api_base="{url}")))}}
    async with FakeOpenAI(responder=replay) as srv:
        judge = spec["eval_cfg"]["evaluator"]["llm_evaluator"]["judge_cfg"]
        judge["openai_api_base"] = srv.base_url
        report = await harness.evaluate(datasets=[spec], models=_model(srv),
                                        work_dir=tmp_path / "w", limit=6)
    summary = report.summaries[0]
    # The programs ran (no evaluator errors): 3 passed; the 3 failures went to the judge,
    # which said B (incorrect) for each.
    assert summary["counts"] == {"ok": 6} and summary["correct"] == 3
    assert summary["cascade_stats"]["rule_correct"] == 3 and len(judged) == 3


async def test_without_bwrap_infer_predicts_and_scoring_is_refused_before_any_request(
        tmp_path, monkeypatch):
    """Predicting a code benchmark needs no sandbox (score elsewhere, later); a run that
    would predict and score without one is refused before a single request; scoring
    stored predictions without one leaves them pending as sandbox errors; once bwrap is
    back they are scored with zero model requests, and from then on the stored
    executions score them again without a sandbox."""
    from harness.sandbox import SandboxUnavailable, check_bwrap
    from harness.sandbox import run as run_module

    monkeypatch.delenv(run_module.UNSAFE_ENV, raising=False)
    check_bwrap.cache_clear()
    real_path = os.environ["PATH"]
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap to be found
    try:
        async with FakeOpenAI(responder=every_other) as srv:
            with pytest.raises(SandboxUnavailable, match="bubblewrap"):
                await harness.evaluate(DATASETS / "humaneval.py", work_dir=tmp_path / "w",
                                       models=_model(srv), limit=4)
            assert len(srv.requests) == 0
            report = await harness.evaluate(DATASETS / "humaneval.py", mode="infer",
                                            work_dir=tmp_path / "w", models=_model(srv),
                                            limit=4)
            assert len(srv.requests) == 4
            assert report.summaries[0]["counts"] == {"ok": 4}
            # Scoring without a sandbox: nothing is executed, nothing is scored wrong.
            unscored = await harness.evaluate(DATASETS / "humaneval.py", mode="eval",
                                              work_dir=tmp_path / "w", models=_model(srv),
                                              limit=4)
            summary = unscored.summaries[0]
            assert summary["counts"] == {"sandbox_error": 4} and summary["scored"] == 0
            assert unscored.failed == 4 and not unscored.complete
            monkeypatch.setenv("PATH", real_path)
            check_bwrap.cache_clear()
            scored = await harness.evaluate(DATASETS / "humaneval.py", mode="eval",
                                            work_dir=tmp_path / "w", models=_model(srv),
                                            limit=4)
            assert len(srv.requests) == 4  # none more
            assert (scored.summaries[0]["correct"], scored.summaries[0]["total"]) == (2, 4)
            # Re-scoring where there is no sandbox again: every execution is stored.
            monkeypatch.setenv("PATH", str(tmp_path))
            check_bwrap.cache_clear()
            rescored = await harness.evaluate(DATASETS / "humaneval.py", mode="eval",
                                              work_dir=tmp_path / "w", models=_model(srv),
                                              limit=4)
            assert len(srv.requests) == 4
        assert rescored.summaries[0]["counts"] == {"ok": 4}
        assert (rescored.summaries[0]["correct"], rescored.summaries[0]["total"]) == (2, 4)
    finally:
        check_bwrap.cache_clear()
