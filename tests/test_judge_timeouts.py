"""A judge is bounded like the model: ``--timeout``/``--max-attempts`` apply to it unless
its ``judge_cfg`` sets its own, so a stalled judge costs seconds, not 600 s × 6."""

from __future__ import annotations

import anyio
import pytest

from harness.testing import FakeOpenAI, Fault

from .helpers import JUDGE_MODEL, expected_cascade, model_and_judge, write_arith, write_judge_config
from .test_cli import cli, env

N = 8


def judge_stalls(body, attempt):
    return Fault("stall") if body["model"] == JUDGE_MODEL else None


@pytest.mark.timeout(60)
@pytest.mark.parametrize("judge,flags,attempts", [
    ({}, ("--timeout", "1", "--max-attempts", "2"), 2),
    ({"timeout": 0.5, "max_attempts": 3}, ("--timeout", "30", "--max-attempts", "6"), 3)],
    ids=["run-flags", "judge_cfg-wins"])
async def test_a_stalled_judge_is_bounded_by_the_run_or_its_own_settings(
        tmp_path, judge, flags, attempts):
    data = write_arith(tmp_path / "a.jsonl", N)
    async with FakeOpenAI(responder=model_and_judge, faults=judge_stalls,
                          models=("fake-model", JUDGE_MODEL)) as srv:
        cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url, judge=judge)
        with anyio.fail_after(45):
            result = await anyio.run_process(
                cli("run", str(cfg), "-w", str(tmp_path / "w"), "-q", *flags),
                env=env(), check=False)
        judged = [r for r in srv.requests if r["model"] == JUDGE_MODEL]
    err = result.stderr.decode()
    pending = expected_cascade(N)["rule_failures"]
    assert result.returncode == 1, err
    assert f"judge_error: {pending} × timed out after {attempts} attempts" in err
    assert len(judged) == pending * attempts
