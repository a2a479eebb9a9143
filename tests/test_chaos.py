"""Chaos: a server that fails 20% of attempts in every way still gives the clean scores."""

from __future__ import annotations

import json

import anyio
import pytest

import harness
from harness.testing import FakeOpenAI, Fault, fault_rate

from .helpers import arith_reply, model_cfg, write_arith, write_config
from .test_cli import cli, env

TRANSIENT = [
    Fault("rate_limit", retry_after=0.01), Fault("rate_limit"),
    Fault("server_error", status=500), Fault("server_error", status=502),
    Fault("server_error", status=503), Fault("slow", seconds=30),
    Fault("stall", send_headers=True), Fault("drop"), Fault("malformed_json"),
    Fault("empty_choices"), Fault("length"), Fault("null_content"), Fault("empty_content"),
]


def details(work):
    return (work / "details" / "fake" / "arith.jsonl").read_text()


@pytest.mark.timeout(120)
async def test_twenty_percent_faults_give_the_clean_run_scores(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 150)
    async with FakeOpenAI(responder=arith_reply) as clean_srv:
        cfg = write_config(tmp_path / "clean.py", data, models=[model_cfg(clean_srv.base_url)])
        clean = await harness.evaluate(cfg, work_dir=tmp_path / "clean", concurrency=16)
    faults = fault_rate(0.2, TRANSIENT, seed=7, max_consecutive=2)
    async with FakeOpenAI(responder=arith_reply, faults=faults) as srv:
        cfg = write_config(tmp_path / "chaos.py", data,
                           models=[model_cfg(srv.base_url, timeout=0.5)])
        with anyio.fail_after(90):  # nothing hangs: stalls are cut by the timeout
            chaos = await harness.evaluate(cfg, work_dir=tmp_path / "chaos", concurrency=16)
        injected = sum(srv.stats.faults.values())
    assert injected > 15 and len(srv.stats.faults) >= 8
    assert srv.stats.faults["empty_content"] > 0
    a, b = clean.result("arith"), chaos.result("arith")
    for key in ("total", "scored", "correct", "accuracy", "counts"):
        assert a[key] == b[key]
    assert details(tmp_path / "clean") == details(tmp_path / "chaos")
    # Every injected fault was seen and retried, and the report says so.
    stats = chaos.call_stats["fake"]
    assert stats["retries"] == injected
    assert stats["requests"] == 150 + injected
    assert sum(stats["by_kind"].values()) == injected
    assert stats["rate_limited"] == srv.stats.faults["rate_limit"]


async def test_unknown_model_stops_the_run_early_with_one_message(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 100)
    cfg = write_config(tmp_path / "cfg.py", data)
    async with FakeOpenAI(responder=arith_reply, strict_models=True) as srv:
        result = await anyio.run_process(
            cli("run", str(cfg), "-w", str(tmp_path / "w"), "-q", "--model-base-url",
                srv.base_url, "--model", "no-such-model", "-c", "4"), env=env(), check=False)
    assert result.returncode == 2
    err = result.stderr.decode()
    assert "not_found (HTTP 404)" in err and err.count("error:") == 1
    assert srv.stats.total <= 4


async def test_bad_key_stops_the_run_early(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 100)
    cfg = write_config(tmp_path / "cfg.py", data)
    async with FakeOpenAI(responder=arith_reply, api_key="the-right-key") as srv:
        result = await anyio.run_process(
            cli("run", str(cfg), "-w", str(tmp_path / "w"), "-q", "--model-base-url",
                srv.base_url, "--model", "fake-model", "--api-key-env", "K", "-c", "4"),
            env=env(K="sk-wrong-key-planted-123"), check=False)
    assert result.returncode == 2
    assert b"HTTP 401" in result.stderr
    assert b"sk-wrong-key-planted-123" not in result.stderr + result.stdout
    assert srv.stats.total <= 4
    # Nothing was stored, and the store stays usable.
    stored = json.loads(json.dumps(list((tmp_path / "w").glob("results/*"))))
    assert stored == []
