"""Resources of a run close through one exit stack: a close that raises skips no other."""

from __future__ import annotations

import pytest

import harness
from harness.client import ModelClient
from harness.testing import FakeOpenAI

from .helpers import arith_dataset, model_and_judge, model_cfg, write_arith, write_judge_config


@pytest.mark.parametrize("failing", ["fake-model", "judge-model"])
async def test_a_failing_close_skips_no_other_close_and_surfaces(failing, tmp_path, monkeypatch):
    closed: list[str] = []
    original = ModelClient.aclose

    async def aclose(self: ModelClient) -> None:
        await original(self)  # the session really closes; then this close reports failure
        closed.append(self.spec.model)
        if self.spec.model == failing:
            raise RuntimeError(f"closing {failing} failed")

    monkeypatch.setattr(ModelClient, "aclose", aclose)
    async with FakeOpenAI(responder=model_and_judge,
                          models=("fake-model", "judge-model")) as server:
        cfg = write_judge_config(tmp_path / "cfg.py", write_arith(tmp_path / "a.jsonl", 6),
                                 server.base_url, mode="cascade")
        with pytest.raises(RuntimeError, match=f"closing {failing} failed"):
            await harness.evaluate(cfg, work_dir=tmp_path / "w")
    assert sorted(closed) == ["fake-model", "judge-model"]


async def test_rule_workers_sets_the_worker_processes_of_a_run(server, arith, tmp_path,
                                                                monkeypatch):
    from harness.stages import score

    sizes: list[int] = []

    class Recorded(score.WorkerPool):
        def __init__(self, size: int | None = None, **kw) -> None:
            super().__init__(size, **kw)
            sizes.append(self.size)

    monkeypatch.setattr(score, "WorkerPool", Recorded)
    report = await harness.evaluate(
        datasets=[arith_dataset(arith, dict(type="MATHVerifyEvaluator"))],
        models=[model_cfg(server.base_url)], work_dir=tmp_path / "w", rule_workers=1,
        limit=4)
    assert sizes == [1]
    assert report.result("arith").scored == 4
