"""End-to-end runs against the fake server and real SQLite files."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import anyio
import pytest

import harness
from harness.testing import FakeOpenAI, Fault, fail_first

from .helpers import (
    arith_dataset,
    arith_datasets,
    arith_reply,
    expected_correct,
    model_cfg,
    same_scores_and_a_free_rerun,
    write_arith,
    write_config,
)


def details(work: Path, model: str = "fake", dataset: str = "arith") -> list[dict]:
    path = work / "details" / model / f"{dataset}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_run_scores_every_sample(server, arith, tmp_path):
    cfg = write_config(tmp_path / "cfg.py", arith, models=[model_cfg(server.base_url)])
    report = await harness.evaluate(cfg, work_dir=tmp_path / "w", concurrency=8)
    result = report.result("arith")
    assert result["total"] == 40
    assert result["correct"] == expected_correct(40)
    assert result["accuracy"] == pytest.approx(100 * expected_correct(40) / 40)
    assert result["extract_rate"] == 100.0
    assert server.stats.total == 40


@pytest.mark.parametrize("function, counts, correct", [
    # As in OpenCompass, the function gets every postprocessed prediction, '' included,
    # and decides what it is worth; the extract rate still counts it as nothing found.
    ("return pred == ''", {"extract_failed": 40}, 40),
    # One written for answers raises on '': nothing was extracted, which is wrong, not
    # an evaluator error that leaves the run incomplete.
    ("return float(pred) == float(ref)", {"extract_failed": 40}, 0),
])
async def test_an_evaluator_function_scores_a_prediction_with_nothing_extracted(
        server, arith, tmp_path, function, counts, correct):
    extra = f"def nothing(text):\n    return ''\ndef fn(pred, ref, item):\n    {function}\n"
    cfg = write_config(tmp_path / "cfg.py", arith, models=[model_cfg(server.base_url)],
                       evaluator="fn", pred_pp="nothing", extra=extra)
    result = (await harness.evaluate(cfg, work_dir=tmp_path / "w")).result("arith")
    assert result["counts"] == counts and result["complete"]
    assert result["correct"] == correct and result["extract_rate"] == 0


async def test_results_json_and_sorted_details_are_written(server, arith, tmp_path):
    cfg = write_config(tmp_path / "cfg.py", arith, models=[model_cfg(server.base_url)])
    work = tmp_path / "w"
    await harness.evaluate(cfg, work_dir=work, concurrency=8)
    saved = json.loads((work / "results" / "fake" / "arith.json").read_text())
    assert saved["counts"] == {"ok": 40}
    rows = details(work)
    assert [r["index"] for r in rows] == list(range(40))
    first = rows[0]
    assert first["prompt"] == [{"role": "user", "content": "What is 0 + 1?"}]
    assert first["prediction"] == "Let me add 0 and 1. The answer is 1."
    assert first["pred"] == "1" and first["reference"] == "1" and first["correct"] is True


async def test_concurrency_limit_is_respected(arith, tmp_path):
    async with FakeOpenAI(responder=arith_reply, latency=0.05) as srv:
        cfg = write_config(tmp_path / "cfg.py", arith, models=[model_cfg(srv.base_url)])
        await harness.evaluate(cfg, work_dir=tmp_path / "w", concurrency=5)
        assert 1 < srv.stats.max_in_flight <= 5


async def test_rerun_makes_zero_requests_and_gives_identical_results(server, arith, tmp_path):
    cfg = write_config(tmp_path / "cfg.py", arith, models=[model_cfg(server.base_url)])
    first = await harness.evaluate(cfg, work_dir=tmp_path / "w", concurrency=8)
    before = server.stats.total
    second = await harness.evaluate(cfg, work_dir=tmp_path / "w", concurrency=8)
    assert server.stats.total == before

    def strip(s):
        return {k: v for k, v in s.items() if k not in ("cached_predictions", "call_stats")}

    assert [strip(s) for s in second.summaries] == [strip(s) for s in first.summaries]
    assert second.result("arith")["cached_predictions"] == 40


async def test_eval_mode_rescores_after_postprocessor_change_without_requests(
        server, arith, tmp_path):
    work = tmp_path / "w"
    cfg = write_config(tmp_path / "cfg.py", arith, models=[model_cfg(server.base_url)],
                       pred_pp="first_capital_postprocess")
    report = await harness.evaluate(cfg, work_dir=work)
    assert report.result("arith")["correct"] == 0
    sent = server.stats.total
    cfg = write_config(tmp_path / "cfg.py", arith, models=[model_cfg(server.base_url)])
    report = await harness.evaluate(cfg, work_dir=work, mode="eval")
    assert server.stats.total == sent
    assert report.result("arith")["correct"] == expected_correct(40)


async def test_eval_mode_reports_unpredicted_samples_as_missing(server, arith, tmp_path):
    cfg = write_config(tmp_path / "cfg.py", arith, models=[model_cfg(server.base_url)])
    await harness.evaluate(cfg, work_dir=tmp_path / "w", limit=10)
    report = await harness.evaluate(cfg, work_dir=tmp_path / "w", mode="eval")
    result = report.result("arith")
    assert result["counts"] == {"missing": 30, "ok": 10}
    assert report.failed == 30  # unscored samples are never a clean exit
    assert result["complete"] is False and result["accuracy"] is None
    assert server.stats.total == 10


async def test_eval_mode_on_an_empty_work_dir_is_refused(server, arith, tmp_path):
    cfg = write_config(tmp_path / "cfg.py", arith, models=[model_cfg(server.base_url)])
    with pytest.raises(harness.ConfigError, match="no recorded predictions"):
        await harness.evaluate(cfg, work_dir=tmp_path / "w", mode="eval")
    assert server.stats.total == 0
    assert not (tmp_path / "w" / "results").exists()
    assert not (tmp_path / "w" / "harness.db").exists()  # nothing written at all


async def test_infer_mode_only_predicts(server, arith, tmp_path):
    cfg = write_config(tmp_path / "cfg.py", arith, models=[model_cfg(server.base_url)])
    report = await harness.evaluate(cfg, work_dir=tmp_path / "w", mode="infer")
    result = report.result("arith")
    assert "accuracy" not in result
    # Predicted, not scored: a reader computing correct/scored must not get 0 %.
    assert result["scored"] == 0 and result["counts"] == {"ok": 40}
    assert server.stats.total == 40
    report = await harness.evaluate(cfg, work_dir=tmp_path / "w", mode="eval")
    assert report.result("arith")["correct"] == expected_correct(40)
    assert server.stats.total == 40


async def test_failed_call_is_recorded_and_retried_on_next_run(arith, tmp_path):
    def faults(body, attempt):
        # Sample "What is 3 + 4?" fails with 500 on its first 2 attempts.
        return Fault("server_error") if "3 + 4" in str(body) and attempt < 2 else None

    async with FakeOpenAI(responder=arith_reply, faults=faults) as srv:
        cfg = write_config(tmp_path / "cfg.py", arith,
                           models=[model_cfg(srv.base_url, max_attempts=2)])
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
        result = report.result("arith")
        assert result["counts"] == {"ok": 39, "model_error": 1}
        assert result["scored"] == 39 and report.failed == 1
        row = details(tmp_path / "w")[3]
        assert row["status"] == "model_error" and "HTTP 500" in row["error"]
        assert row["correct"] is None
        assert row["reference"] == "7"  # after gsm8k_dataset_postprocess, as when scored
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
        assert report.result("arith")["counts"] == {"ok": 40}
        assert srv.stats.total == 39 + 2 + 1  # the rerun asks only for the failed one


async def test_transient_faults_are_retried_to_the_same_score(arith, tmp_path):
    async with FakeOpenAI(responder=arith_reply,
                          faults=fail_first(2, Fault("rate_limit", retry_after=0))) as srv:
        cfg = write_config(tmp_path / "cfg.py", arith, models=[model_cfg(srv.base_url)])
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    assert report.result("arith")["correct"] == expected_correct(40)
    stats = report.call_stats["fake"]
    assert stats["retries"] == 80 and stats["rate_limited"] == 80


async def test_permanent_error_stops_the_run_with_one_error(arith, tmp_path):
    async with FakeOpenAI(responder=arith_reply, api_key="right-key") as srv:
        cfg = write_config(tmp_path / "cfg.py", arith, models=[model_cfg(srv.base_url)])
        with pytest.raises(harness.PermanentModelError, match="HTTP 401"):
            await harness.evaluate(cfg, work_dir=tmp_path / "w", concurrency=4)
        assert srv.stats.total <= 4


async def test_replicas_get_independent_predictions(server, arith, tmp_path):
    cfg = write_config(tmp_path / "cfg.py", arith, models=[model_cfg(server.base_url)], n=3)
    report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    assert report.result("arith")["total"] == 120
    assert server.stats.total == 120
    rows = details(tmp_path / "w")
    assert [(r["index"], r["replica"]) for r in rows[:3]] == [(0, 0), (0, 1), (0, 2)]


async def test_replicas_all_wrong_get_an_interval_not_a_point(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 4)
    async with FakeOpenAI(responder=lambda body: "The answer is 1000.") as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(srv.base_url)], n=2)
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    result = report.result("arith")
    assert result["accuracy"] == 0.0
    low, high = result["accuracy_ci95"]
    assert low == 0.0 and high == pytest.approx(71.68, abs=0.01)  # Wilson, 0 of 4, t(3)


async def test_one_extraction_failure_in_201_is_not_shown_as_100_percent(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 201)

    def replies(body):
        return "no idea" if "What is 0 + 1?" in str(body) else arith_reply(body)

    async with FakeOpenAI(responder=replies) as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(srv.base_url)])
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    assert report.result("arith")["counts"]["extract_failed"] == 1
    assert "extract 99.5%)" in report.table()


async def test_extraction_failure_is_counted_in_extract_rate(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 10)

    def replies(body):
        return "no idea" if "What is 0 " in str(body) else arith_reply(body)

    async with FakeOpenAI(responder=replies) as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(srv.base_url)])
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    result = report.result("arith")
    assert result["counts"] == {"ok": 9, "extract_failed": 1}
    assert result["extract_rate"] == 90.0
    assert result["scored"] == 10


async def test_open_run_streams_results_inside_a_running_loop(server, arith, tmp_path):
    cfg = write_config(tmp_path / "cfg.py", arith, models=[model_cfg(server.base_url)])
    seen = []
    async with harness.open_run(cfg, work_dir=tmp_path / "w") as run:
        async for result in run:
            assert isinstance(result, harness.SampleResult)
            seen.append((result.index, result.correct))
    assert sorted(i for i, _ in seen) == list(range(40))
    assert run.report is not None and run.report.result("arith")["total"] == 40


async def test_open_run_waited_for_without_iterating_finishes(server, arith, tmp_path):
    # The run hands over each result as it is taken: waiting without taking them
    # must not block it after the first one.
    cfg = write_config(tmp_path / "cfg.py", arith, models=[model_cfg(server.base_url)])
    with anyio.fail_after(30):
        async with harness.open_run(cfg, work_dir=tmp_path / "w") as run:
            async for first in run:  # noqa: B007 - one taken, the rest left
                break
            await run.wait()
    assert first.index in range(40)
    assert run.report is not None and run.report.complete
    assert run.report.result("arith")["correct"] == expected_correct(40)


async def test_a_config_and_dataset_dicts_together_are_refused(server, arith, tmp_path):
    cfg = write_config(tmp_path / "cfg.py", arith, models=[model_cfg(server.base_url)])
    other = arith_dataset(arith, dict(type=harness.AccEvaluator))
    with pytest.raises(TypeError, match="not both"):
        await harness.evaluate(cfg, datasets=[other], work_dir=tmp_path / "w")
    assert server.stats.total == 0


async def test_leaving_open_run_early_cancels_cleanly(server, arith, tmp_path):
    cfg = write_config(tmp_path / "cfg.py", arith, models=[model_cfg(server.base_url)])
    async with harness.open_run(cfg, work_dir=tmp_path / "w", concurrency=2) as run:
        async for _ in run:
            break
    assert run.report is None
    # What was stored is kept: a full run afterwards only asks for the rest.
    stored_before = server.stats.total
    await harness.evaluate(cfg, work_dir=tmp_path / "w", concurrency=2)
    assert server.stats.total - stored_before < 40


async def test_evaluate_accepts_dataset_dicts_without_a_config_file(server, arith, tmp_path):
    dataset = arith_dataset(arith, dict(type=harness.AccEvaluator))
    report = await harness.evaluate(datasets=[dataset], models=[model_cfg(server.base_url)],
                                    work_dir=tmp_path / "w")
    assert report.result("arith")["correct"] == expected_correct(40)


async def test_several_datasets_and_models_share_one_run_and_one_table(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 8)
    cfg = write_config(tmp_path / "cfg.py", data)
    text = cfg.read_text().rstrip()
    text += "\ndatasets.append(dict(datasets[0], abbr='arith-copy'))\n"
    cfg.write_text(text)
    async with FakeOpenAI(responder=arith_reply, models=("m-a", "m-b")) as srv:
        models = [dict(abbr="a", path="m-a", openai_api_base=srv.base_url),
                  dict(abbr="b", path="m-b", openai_api_base=srv.base_url)]
        report = await harness.evaluate(cfg, models=models, work_dir=tmp_path / "w")
        # arith-copy sends each model the same requests as arith: asked once each.
        assert srv.stats.total == 2 * 8
    assert {(s["model"], s["dataset"]) for s in report.summaries} == {
        ("a", "arith"), ("a", "arith-copy"), ("b", "arith"), ("b", "arith-copy")}
    header, rule, *rows = report.table().splitlines()
    assert header.split()[:3] == ["dataset", "a", "b"]
    assert [r.split()[0] for r in rows] == ["arith", "arith-copy"]
    assert (tmp_path / "w" / "details" / "b" / "arith-copy.jsonl").is_file()


async def test_an_interrupted_run_leaves_the_previous_details_file(server, arith, tmp_path):
    cfg = write_config(tmp_path / "cfg.py", arith, models=[model_cfg(server.base_url)])
    await harness.evaluate(cfg, work_dir=tmp_path / "w")
    path = tmp_path / "w" / "details" / "fake" / "arith.jsonl"
    before = path.read_text()
    async with harness.open_run(cfg, work_dir=tmp_path / "w", concurrency=2) as run:
        async for _ in run:
            break
    assert path.read_text() == before
    assert not list(path.parent.glob("*.part")) and not list(path.parent.glob("*.tmp"))


async def test_progress_counts_only_requests_on_the_wire(arith, tmp_path):
    from harness.progress import Progress

    progress = Progress()
    seen = []

    def responder(body):
        seen.append(progress.model.in_flight)
        return arith_reply(body)

    async with FakeOpenAI(responder=responder, latency=0.01) as srv:
        cfg = write_config(tmp_path / "cfg.py", arith,
                           models=[model_cfg(srv.base_url, concurrency=2)])
        await harness.evaluate(cfg, work_dir=tmp_path / "w", concurrency=8, progress=progress)
        assert srv.stats.max_in_flight <= 2
    # 8 workers wait for the endpoint's 2 slots; only the 2 sent are "in flight".
    assert max(seen) <= 2 and progress.model.in_flight == 0


async def test_half_a_character_in_a_reply_is_stored_and_scored_not_a_crash(arith, tmp_path):
    # A server that cuts an emoji between tokens sends half of it as a JSON escape
    # ("\ud83d"): no UTF-8 file or SQLite row can hold that, so it becomes U+FFFD and
    # the sample is scored like any other, in this run and from the store in the next.
    turns = itertools.count()

    def responder(body: dict) -> str:
        reply = arith_reply(body)
        return f"{reply} \ud83d" if next(turns) % 2 else f"\ude00{reply} 😀"

    async with FakeOpenAI(responder=responder) as srv:
        cfg = write_config(tmp_path / "cfg.py", arith, models=[model_cfg(srv.base_url)])
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
        again = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    assert srv.stats.total == 40  # the rerun sent nothing: every prediction was stored
    for run in (report, again):
        result = run.result("arith")
        assert result["counts"] == {"ok": 40} and result["correct"] == expected_correct(40)
    rows = details(tmp_path / "w")
    assert len(rows) == 40
    assert all("\ufffd" in row["prediction"] and not any(
        "\ud800" <= c <= "\udfff" for c in row["prediction"]) for row in rows)
    assert sum(row["prediction"].endswith("😀") for row in rows) not in (0, 40)


def two_datasets_one_prompt(path: Path, data: Path, base_url: str, **model: object) -> Path:
    """Two datasets, ``first`` and ``second``, sending the model the same requests (one
    dataset scored two ways)."""
    evaluator = ("dict(evaluator=dict(type=AccEvaluator, pred_postprocessor=dict(type='gsm8k')),"
                 " dataset_postprocessor=dict(type='gsm8k-dataset'))")
    src = ("from harness import CustomDataset, RawPromptTemplate, ZeroRetriever, "
           "GenInferencer, AccEvaluator\n")
    for abbr in ("first", "second"):
        src += arith_datasets(data, evaluator, abbr=abbr).replace(
            "datasets = [", f"{abbr}_datasets = [")
    path.write_text(src + f"models = [{ {**model_cfg(base_url), **model}!r}]\n")
    return path


@pytest.mark.parametrize("latency", [0.0, 0.02])
async def test_a_request_two_datasets_share_is_paid_once_and_scored_alike(tmp_path, latency):
    """The second dataset's samples find the first's calls queued, in flight, done but
    not yet committed, or stored: each prompt is asked once, both datasets score the
    one reply, and a rerun with zero requests prints the same numbers."""
    n = 300
    data = write_arith(tmp_path / "a.jsonl", n)
    asked: dict[str, int] = {}

    def coin(body):  # a sampling model: right or wrong at random, per request
        prompt = body["messages"][-1]["content"]
        asked[prompt] = asked.get(prompt, 0) + 1
        a, b = (int(x) for x in prompt.removeprefix("What is ").rstrip("?").split(" + "))
        return f"The answer is {a + b + random.randint(0, 1)}."

    async with FakeOpenAI(responder=coin, latency=latency) as srv:
        cfg = two_datasets_one_prompt(tmp_path / "cfg.py", data, srv.base_url)
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w", concurrency=32)
        assert srv.stats.total == n and set(asked.values()) == {1}
        first = {r["index"]: r["prediction"] for r in details(tmp_path / "w", dataset="first")}
        second = {r["index"]: r["prediction"] for r in details(tmp_path / "w", dataset="second")}
        assert first == second
        await same_scores_and_a_free_rerun(report, srv, cfg, tmp_path / "w",
                                           ("first", "second"), 32)


async def test_a_shared_request_whose_first_call_fails_is_asked_again_by_the_other(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 20)
    failed: set[str] = set()

    def faults(body, attempt):  # each prompt's first request fails for good
        prompt = body["messages"][-1]["content"]
        if prompt not in failed:
            failed.add(prompt)
            return Fault("server_error")
        return None

    async with FakeOpenAI(responder=arith_reply, faults=faults) as srv:
        cfg = two_datasets_one_prompt(tmp_path / "cfg.py", data, srv.base_url,
                                      max_attempts=1)
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w", concurrency=8)
    # One dataset's call failed (pending), the other's asked again and was answered.
    assert srv.stats.total == 40
    counts = [report.result(d)["counts"] for d in ("first", "second")]
    assert sum(c.get("model_error", 0) for c in counts) == 20
    assert sum(c.get("ok", 0) for c in counts) == 20
