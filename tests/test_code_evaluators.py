"""HumanEvalEvaluator and MBPPEvaluator on the shipped data: every reference solution
passes, deliberately wrong ones fail, and the details say why."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from harness.config import load_config
from harness.errors import ConfigError
from harness.evaluators import HumanEvalEvaluator, MBPPEvaluator, build_evaluator

from .helpers import write_arith, write_config

DATA = Path(__file__).resolve().parents[1] / "datasets" / "data"
HUMANEVAL = [json.loads(x) for x in (DATA / "humaneval/HumanEval.jsonl").read_text().splitlines()]
MBPP = [json.loads(x) for x in (DATA / "mbpp/sanitized-mbpp.jsonl").read_text().splitlines()]

#: MBPP reference solutions that pass their own tests in the sandbox (all of them).
MBPP_REFERENCE_PASSING = 427


async def _score_all(evaluator, items):
    """Details of ``(prediction, row)`` items, one sandbox per core at a time."""
    limiter = anyio.CapacityLimiter(os.cpu_count() or 1)
    details = [None] * len(items)

    async def one(i, prediction, row):
        async with limiter:
            details[i] = await evaluator.ascore_sample(prediction, row.get("task_id"), row)

    async with anyio.create_task_group() as tg:
        for i, (prediction, row) in enumerate(items):
            tg.start_soon(one, i, prediction, row)
    return details


async def test_every_humaneval_canonical_solution_passes():
    details = await _score_all(HumanEvalEvaluator(),
                               [(row["canonical_solution"], row) for row in HUMANEVAL])
    failed = [(row["task_id"], d.get("reason"), d.get("stderr_tail"))
              for row, d in zip(HUMANEVAL, details, strict=True) if not d["correct"]]
    assert failed == []
    assert len(details) == 164


async def test_a_body_that_returns_nothing_fails_every_humaneval_task():
    details = await _score_all(HumanEvalEvaluator(),
                               [("    return None\n", row) for row in HUMANEVAL])
    passed = [row["task_id"] for row, d in zip(HUMANEVAL, details, strict=True) if d["correct"]]
    assert passed == []


async def test_mbpp_reference_solutions_pass_their_own_tests():
    # Task 123 (amicable numbers below 9999) needs a few CPU seconds: generous limits,
    # so a loaded machine does not turn a correct reference into a timeout.
    evaluator = MBPPEvaluator(limits=dict(wall_time=120, cpu_time=60))
    details = await _score_all(evaluator, [(row["code"], row) for row in MBPP])
    failed = [(row["task_id"], d.get("reason"), d.get("stderr_tail")) for row, d in
              zip(MBPP, details, strict=True) if not d["correct"]]
    assert len(MBPP) - len(failed) == MBPP_REFERENCE_PASSING, failed


async def test_an_off_by_one_mbpp_solution_fails_naming_the_assertion():
    row = MBPP[0]  # similar_elements: the shared elements of two tuples
    wrong = "def similar_elements(a, b):\n    return tuple(set(a) | set(b))\n"
    detail = await MBPPEvaluator().ascore_sample(f"```python\n{wrong}```", 2, row)
    assert detail["correct"] is False and detail["outcome"] == "failed"
    assert detail["failed_assertion"] == row["test_list"][0]
    assert detail["exception"] == "AssertionError"


async def test_a_humaneval_solution_that_raises_names_the_exception():
    row = HUMANEVAL[0]
    detail = await HumanEvalEvaluator().ascore_sample("    return numbers[99]\n", 0, row)
    assert detail["correct"] is False
    assert detail["exception"] == "IndexError: list index out of range"
    assert detail["failed_assertion"].startswith("assert candidate(")  # the first test


@pytest.mark.parametrize("demo", [
    "    import unittest\n    unittest.main()\n",
    "    print(has_close_elements(list(map(float, input().split())), 0.5))\n"],
    ids=["unittest.main", "input"])
async def test_a_correct_reply_with_a_main_guarded_demo_passes(demo):
    # HumanEval's check_correctness runs exec(program, {}): the guarded block never runs.
    row = HUMANEVAL[0]
    reply = (f"```python\n{row['prompt']}{row['canonical_solution']}\n"
             f"if __name__ == '__main__':\n{demo}```")
    detail = await HumanEvalEvaluator().ascore_sample(reply, 0, row)
    assert (detail["correct"], detail["outcome"]) == (True, "passed")


async def test_a_solution_that_loops_forever_is_a_timeout():
    row = HUMANEVAL[0]
    evaluator = HumanEvalEvaluator(limits=dict(wall_time=2, cpu_time=1))
    detail = await evaluator.ascore_sample("    while True:\n        pass\n", 0, row)
    assert (detail["correct"], detail["outcome"]) == (False, "timeout")


async def test_a_reply_with_no_code_is_an_extraction_failure_not_a_run():
    detail = await HumanEvalEvaluator().ascore_sample("I don't know.", 0, HUMANEVAL[0])
    assert detail == {"correct": False, "pred": "", "answer": 0}


def test_the_batch_interface_scores_outside_an_event_loop():
    rows = HUMANEVAL[:2]
    result = HumanEvalEvaluator().score([r["canonical_solution"] for r in rows],
                                        [r["task_id"] for r in rows], rows)
    assert result["pass@1"] == 100.0


def test_config_errors_name_the_field():
    with pytest.raises(ConfigError, match="wall_tme"):
        build_evaluator(dict(type="HumanEvalEvaluator", limits=dict(wall_tme=3)))
    with pytest.raises(ConfigError, match="'k'"):
        build_evaluator(dict(type="MBPPEvaluator", k=[1, 0]))
    assert build_evaluator(dict(type="HumanEvalEvaluator", k=[10, 1])).k == (1, 10)


def _humaneval_config(tmp_path: Path, limits: str) -> Path:
    """The arithmetic config, scored by ``HumanEvalEvaluator(limits=<limits>)``."""
    cfg = write_config(tmp_path / "cfg.py", write_arith(tmp_path / "a.jsonl", 2),
                       extra="from harness import HumanEvalEvaluator")
    cfg.write_text(cfg.read_text().replace(
        "dict(type=AccEvaluator)", f"dict(type=HumanEvalEvaluator, limits={limits})"))
    return cfg


@pytest.mark.parametrize("limits,field", [
    ("dict(cpu_time=0.5)", "cpu_time"), ("dict(wall_time=float('nan'))", "wall_time"),
    ("dict(wall_time=float('inf'))", "wall_time")])
def test_a_limit_no_program_could_run_under_stops_the_config_naming_it(tmp_path, limits,
                                                                        field):
    # Each was accepted, then scored every program a timeout or left it unscored.
    with pytest.raises(ConfigError, match=rf"datasets\[0\]\.eval_cfg\.evaluator\.limits\.{field}'"):
        load_config(_humaneval_config(tmp_path, limits))


async def test_a_fractional_cpu_time_exits_2_before_any_request(server, tmp_path):
    from .test_bad_input import run_cli

    result = await run_cli(_humaneval_config(tmp_path, "dict(cpu_time=0.5)"),
                           tmp_path / "w", server)
    assert result.returncode == 2 and b"limits.cpu_time" in result.stderr
    assert server.stats.total == 0


def test_the_execution_key_changes_with_program_tests_and_limits():
    row = HUMANEVAL[0]
    a, b = HumanEvalEvaluator(), HumanEvalEvaluator(limits=dict(memory=1 << 28))
    program = a.program("    return False\n", row)
    assert a.execution_key(program, row) == HumanEvalEvaluator().execution_key(program, row)
    assert a.execution_key(program, row) != b.execution_key(program, row)
    assert a.execution_key(program, row) != a.execution_key(program + "\n", row)
    other = {**row, "test": row["test"] + "\n    assert True\n"}
    assert a.execution_key(program, row) != a.execution_key(program, other)


def test_the_execution_key_changes_with_how_the_program_is_run(monkeypatch):
    # Outcomes stored while programs ran as __main__ (a guarded demo ran) are not reused.
    from harness.evaluators import code

    row, evaluator = HUMANEVAL[0], HumanEvalEvaluator()
    program = evaluator.program("    return False\n", row)
    before = evaluator.execution_key(program, row)
    monkeypatch.setattr(code, "RUNNER", code.RUNNER.replace('"program"', '"__main__"'))
    assert evaluator.execution_key(program, row) != before
