"""The seed documents' configs run with only their imports changed."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import harness
from harness.testing import FakeOpenAI

SEEDS = Path(__file__).parent / "seed_configs"


def reply(body: dict) -> str:
    """Model: boxed answers, a third in a form math-verify cannot read, a third wrong.
    Judge (``judge-model``): reads gold and prediction from either seed template."""
    text = body["messages"][-1]["content"]
    if body["model"] == "judge-model":
        gold = re.search(r"(?:Gold Target Begin>: \n|Reference Answer: )(\S+)", text).group(1)
        pred = re.search(r"(?:Predicted Answer Begin>: \n|Model Response: )(.*?)(?:\n|$)",
                         text).group(1)
        plus = re.search(r"(\d+) plus a unit", pred)
        value = str(int(plus.group(1)) + 1) if plus else (re.findall(r"\d+", pred) or [""])[-1]
        return "A" if value == gold else "B"
    a, b = map(int, re.search(r"(\d+) \+ (\d+)", text).groups())
    n = a + b
    if a % 3 == 1:
        return f"The total is {n - 1} plus a unit apples."
    return f"So the answer is $\\boxed{{{n + (a % 3 == 2)}}}$."


def write_problems(path: Path, n: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"problem": f"What is {i} + {i + 1}?",
                                        "answer": str(2 * i + 1)}) + "\n" for i in range(n)))


@pytest.fixture
async def server():
    async with FakeOpenAI(responder=reply, models=("fake-model", "judge-model")) as srv:
        yield srv


async def test_seed_aime_cascade_config_runs_by_changing_imports(server, tmp_path, monkeypatch):
    shutil.copy(SEEDS / "aime2026_cascade.py", tmp_path / "cfg.py")
    write_problems(tmp_path / "opencompass" / "aime2026" / "test.jsonl", 12)
    monkeypatch.setenv("OC_JUDGE_MODEL", "judge-model")
    monkeypatch.setenv("OC_JUDGE_API_BASE", server.base_url)
    monkeypatch.setenv("OC_JUDGE_API_KEY", "sk-judge")
    report = await harness.evaluate(
        tmp_path / "cfg.py", work_dir=tmp_path / "w",
        models=[dict(abbr="fake", path="fake-model", openai_api_base=server.base_url)])
    result = report.result("aime2026")
    stats = result["cascade_stats"]
    assert stats["parallel_mode"] is False
    assert stats["rule_correct"] == 4          # a % 3 == 0
    assert stats["llm_evaluated"] == 8         # only rule failures are judged
    assert stats["llm_correct"] == 4           # the "plus a unit" answers
    assert result["correct"] == 8 and result["accuracy"] == pytest.approx(800 / 12)
    judged = [r for r in server.requests if r["model"] == "judge-model"]
    assert len(judged) == 8
    assert judged[0]["messages"][0]["role"] == "system"


async def test_seed_custom_dataset_llm_judge_config_runs_by_changing_imports(server, tmp_path):
    shutil.copy(SEEDS / "llm_judge_custom.py", tmp_path / "cfg.py")
    (tmp_path / "seed_models.py").write_text(
        f"judge_models = [dict(abbr='judge', path='judge-model', "
        f"openai_api_base={server.base_url!r}, key='sk-judge')]\n"
        f"models = [dict(abbr='gpt-5.6-sol', path='fake-model', "
        f"openai_api_base={server.base_url!r}, key='sk-model')]\n")
    write_problems(tmp_path / "path" / "to" / "your" / "dataset" / "your_dataset.jsonl", 9)
    report = await harness.evaluate(tmp_path / "cfg.py", work_dir=tmp_path / "w")
    result = report.result("my-dataset")
    assert result["model"] == "gpt-5.6-sol"
    assert result["correct"] == 6 and result["scored"] == 9
    assert result["judge_mode"] == "judge"
