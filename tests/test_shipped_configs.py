"""Every config in datasets/ loads, and runs end to end against the fake server."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import harness
from harness.config import load_config
from harness.testing import FakeOpenAI

DATASETS = Path(__file__).resolve().parent.parent / "datasets"
CONFIGS = sorted(p for p in DATASETS.glob("*.py"))


def reply(body: dict) -> str:
    """Judge says A; the model boxes a number and says it is the answer."""
    if body["model"] == "judge-model":
        return "A"
    return "Let me think. The answer is 42, so $\\boxed{42}$."


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_shipped_config_loads(path):
    config = load_config(path)
    assert config.datasets
    for spec in config.datasets:
        assert spec.reader.path.is_file()


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
async def test_shipped_config_runs_a_few_samples(path, tmp_path, monkeypatch):
    async with FakeOpenAI(responder=reply, models=("fake-model", "judge-model")) as srv:
        monkeypatch.setenv("OC_JUDGE_MODEL", "judge-model")
        monkeypatch.setenv("OC_JUDGE_API_BASE", srv.base_url)
        report = await harness.evaluate(
            path, work_dir=tmp_path / "w", limit=3,
            # api="auto": text templates (PPL ones too) go to /completions.
            models=[dict(abbr="fake", path="fake-model", openai_api_base=srv.base_url,
                         api="auto")])
    for summary in report.summaries:
        assert summary["total"] == 3 * load_config(path).datasets[0].n
        assert summary["counts"].get("model_error", 0) == 0
        assert summary["counts"].get("eval_error", 0) == 0
        if "cascade_stats" in summary:
            # Rule failures went to the judge, which said A: everything ends correct.
            assert summary["correct"] == summary["scored"]
    assert re.search(r"\d", report.table())
