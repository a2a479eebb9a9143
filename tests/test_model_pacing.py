"""OpenCompass model keys that throttle: ``query_per_second``, ``rpm``/``tpm``, ``concurrency``.

They pace the model under evaluation exactly as they pace a judge (one limiter in one
client). Each test runs against a server that answers 429 past its own limit: a model
that ignored its pacing keys would collect 429s.
"""

from __future__ import annotations

import pytest

import harness
from harness.testing import FakeOpenAI

from .helpers import arith_reply, expected_correct, model_cfg, write_arith, write_config

N = 30


@pytest.mark.parametrize("pacing", [{"query_per_second": 20}, {"rpm": 1200}],
                         ids=["query_per_second", "rpm"])
async def test_the_model_is_paced_under_the_servers_limit(tmp_path, pacing):
    # The server allows 12 requests per 0.5 s (1,440/min); the model is told 1,200/min.
    data = write_arith(tmp_path / "a.jsonl", N)
    async with FakeOpenAI(responder=arith_reply, rpm_limit=12, window=0.5) as srv:
        cfg = write_config(tmp_path / "cfg.py", data,
                           models=[model_cfg(srv.base_url, **pacing)])
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    assert srv.stats.rpm_limited == 0 and srv.stats.total == N
    assert report.result("arith")["correct"] == expected_correct(N)


async def test_without_pacing_the_same_server_rate_limits(tmp_path):
    """The control: the limit above does bite an unpaced model."""
    data = write_arith(tmp_path / "a.jsonl", N)
    async with FakeOpenAI(responder=arith_reply, rpm_limit=12, window=0.5) as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(srv.base_url)])
        await harness.evaluate(cfg, work_dir=tmp_path / "w")
    assert srv.stats.rpm_limited > 0


async def test_tpm_paces_by_tokens(tmp_path):
    # 10 to 20 tokens a request (estimated from the prompt and max_out_len=16, then
    # settled to the reply's usage): 6,000 tokens/min is 5 to 10 requests/s, well under
    # the server's 24/s; unpaced, the requests would all go at once.
    data = write_arith(tmp_path / "a.jsonl", 20)
    async with FakeOpenAI(responder=arith_reply, rpm_limit=12, window=0.5) as srv:
        cfg = write_config(tmp_path / "cfg.py", data,
                           models=[model_cfg(srv.base_url, tpm=6000, max_out_len=16)])
        await harness.evaluate(cfg, work_dir=tmp_path / "w")
    assert srv.stats.rpm_limited == 0 and srv.stats.total == 20


async def test_concurrency_caps_the_models_calls_in_flight(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", N)
    async with FakeOpenAI(responder=arith_reply, latency=0.02) as srv:
        cfg = write_config(tmp_path / "cfg.py", data,
                           models=[model_cfg(srv.base_url, concurrency=3)])
        await harness.evaluate(cfg, work_dir=tmp_path / "w", concurrency=64)
    assert srv.stats.max_in_flight == 3
