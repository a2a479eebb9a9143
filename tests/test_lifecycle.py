"""Resources of a run close through one exit stack: a close that raises skips no other."""

from __future__ import annotations

import pytest

import harness
from harness.client import ModelClient
from harness.testing import FakeOpenAI

from .helpers import model_and_judge, write_arith, write_judge_config


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
