"""A rerun rebuilds each scored sample from its stored outcome, and re-scores exactly
when a scoring input changed (``harness.outcomes``)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import harness
from harness import outcomes
from harness.progress import Progress
from harness.stages.score import Scorer
from harness.store import SCHEMA_VERSION, Store
from harness.testing import FakeOpenAI, Fault

from .helpers import (
    JUDGE_MODEL,
    JUDGE_TEMPLATE,
    expected_cascade,
    model_and_judge,
    write_arith,
    write_config,
    write_judge_config,
)

N = 24


def rows(work: Path, sql: str) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(work / "harness.db")
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def stored_outcomes(work: Path) -> int:
    return rows(work, "SELECT count(*) FROM outcomes")[0][0]


def details(work: Path, dataset: str = "arith") -> list[dict[str, Any]]:
    text = (work / "details" / "fake" / f"{dataset}.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


def outputs(work: Path) -> tuple[bytes, dict[str, Any]]:
    """The details file's bytes and the results file (neither holds a timing)."""
    return ((work / "details/fake/arith.jsonl").read_bytes(),
            json.loads((work / "results/fake/arith.json").read_text()))


def counters(progress: Progress) -> tuple[int, ...]:
    return (progress.cached, progress.results, progress.rules.done, progress.judge.done,
            progress.judge.reused, progress.judge.submitted, progress.judge.failed)


async def test_a_served_rerun_sends_nothing_and_equals_rescoring(tmp_path, monkeypatch):
    data = write_arith(tmp_path / "a.jsonl", N)
    work = tmp_path / "w"
    async with FakeOpenAI(responder=model_and_judge) as srv:
        cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url)
        await harness.evaluate(cfg, work_dir=work)
        first = len(srv.requests)
        assert stored_outcomes(work) == N  # every sample is final
        with monkeypatch.context() as patch:
            patch.setattr(Scorer, "score_keyed", _refuse)
            served = Progress()
            await harness.evaluate(cfg, work_dir=work, progress=served)
        assert len(srv.requests) == first  # 0 model and 0 judge requests
        served_out = outputs(work)
        con = sqlite3.connect(work / "harness.db")
        con.execute("DELETE FROM outcomes")
        con.commit()
        con.close()
        rescored = Progress()
        await harness.evaluate(cfg, work_dir=work, progress=rescored)
        assert len(srv.requests) == first
    assert served_out == outputs(work)
    assert counters(served) == counters(rescored)
    result = served_out[1]
    assert result["correct"] == expected_cascade(N)["final"]
    assert result["judge_stats"]["cache_hits"] == expected_cascade(N)["rule_failures"]
    # The rerun marks what it reused, as a rerun always did.
    judged = [r for r in details(work) if "prediction" in r.get("llm_evaluation", {})]
    assert judged and all(r["llm_evaluation"]["cached"] for r in judged)
    assert stored_outcomes(work) == N  # re-scoring stored them again


async def _refuse(self, completion):
    raise AssertionError(f"sample {completion.sample.index} was scored again")


async def test_a_rerun_that_hits_everything_writes_nothing(tmp_path, server, no_scoring_after):
    data = write_arith(tmp_path / "a.jsonl", N)
    cfg = write_config(tmp_path / "cfg.py", data, models=[_model(server.base_url)])
    work = tmp_path / "w"
    await harness.evaluate(cfg, work_dir=work)
    before = rows(work, "SELECT key, updated FROM outcomes ORDER BY key")
    no_scoring_after()
    await harness.evaluate(cfg, work_dir=work)
    assert rows(work, "SELECT key, updated FROM outcomes ORDER BY key") == before


@pytest.fixture
def no_scoring_after(monkeypatch):
    """Call it to make scoring fail from then on."""
    return lambda: monkeypatch.setattr(Scorer, "score_keyed", _refuse)


def _model(base_url: str, **kw: Any) -> dict[str, Any]:
    return dict(abbr="fake", path="fake-model", openai_api_base=base_url,
                key="sk-test-not-a-secret", **kw)


async def test_a_changed_reference_is_scored_again(tmp_path, server):
    data = write_arith(tmp_path / "a.jsonl", N)
    cfg = write_config(tmp_path / "cfg.py", data, models=[_model(server.base_url)])
    work = tmp_path / "w"
    await harness.evaluate(cfg, work_dir=work)
    assert details(work)[0]["correct"] is True
    lines = data.read_text().splitlines()
    lines[0] = json.dumps({"question": "What is 0 + 1?", "answer": "#### 5"})
    data.write_text("\n".join(lines) + "\n")
    requests = len(server.requests)
    await harness.evaluate(cfg, work_dir=work)
    assert len(server.requests) == requests  # the prompt is the same: no model call
    first = details(work)[0]
    assert (first["reference"], first["correct"]) == ("5", False)


def _write_xml_config(path: Path, data: Path, base_url: str, tag: str) -> Path:
    eval_cfg = ("dict(evaluator=dict(type=AccEvaluator), "
                f"pred_postprocessor=dict(type='specific-xml-tag', tag={tag!r}), "
                "dataset_postprocessor=dict(type='gsm8k-dataset'))")
    from harness.testing.workloads import arith_datasets

    path.write_text("from harness import (CustomDataset, RawPromptTemplate, ZeroRetriever,\n"
                    "                     GenInferencer, AccEvaluator)\n"
                    + arith_datasets(data, eval_cfg)
                    + f"models = [{_model(base_url)!r}]\n")
    return path


def _tagged_reply(body: dict[str, Any]) -> str:
    """The right sum in <right>, a wrong one in <wrong>."""
    from harness.testing.workloads import _QUESTION, echo_last_user

    a, b = map(int, _QUESTION.search(echo_last_user(body)).groups())
    return f"<right>{a + b}</right> <wrong>{a + b + 1}</wrong>"


async def test_a_changed_postprocessor_keyword_is_scored_again(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", N)
    work = tmp_path / "w"
    async with FakeOpenAI(responder=_tagged_reply) as srv:
        cfg = _write_xml_config(tmp_path / "cfg.py", data, srv.base_url, "right")
        report = await harness.evaluate(cfg, work_dir=work)
        assert report.result("arith")["correct"] == N
        cfg = _write_xml_config(tmp_path / "cfg.py", data, srv.base_url, "wrong")
        report = await harness.evaluate(cfg, work_dir=work)
        assert len(srv.requests) == N  # predictions reused, only scoring changed
    assert report.result("arith")["correct"] == 0


async def test_a_changed_evaluator_setting_is_scored_again(tmp_path):
    """A cascade that becomes parallel judges the rule-correct samples too."""
    data = write_arith(tmp_path / "a.jsonl", N)
    work = tmp_path / "w"
    async with FakeOpenAI(responder=model_and_judge) as srv:
        cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url, mode="cascade")
        await harness.evaluate(cfg, work_dir=work)
        judged = sum(r["model"] == JUDGE_MODEL for r in srv.requests)
        assert judged == expected_cascade(N)["rule_failures"]
        cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url, mode="parallel")
        report = await harness.evaluate(cfg, work_dir=work)
        judged_now = sum(r["model"] == JUDGE_MODEL for r in srv.requests)
    assert judged_now == N  # the rule-correct ones were judged now, the rest reused
    stats = report.result("arith")["cascade_stats"]
    assert (stats["parallel_mode"], stats["llm_evaluated"]) == (True, N)


async def test_a_changed_judge_template_is_scored_again(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", N)
    work = tmp_path / "w"
    async with FakeOpenAI(responder=model_and_judge) as srv:
        cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url)
        report = await harness.evaluate(cfg, work_dir=work)
        assert report.result("arith")["correct"] == expected_cascade(N)["final"]
        model_calls = sum(r["model"] != JUDGE_MODEL for r in srv.requests)
        # Without its "Gold:" line the fake judge cannot grade: every verdict is B.
        template = JUDGE_TEMPLATE.replace("Gold: {reference}\n", "")
        cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url, template=template)
        report = await harness.evaluate(cfg, work_dir=work)
        assert sum(r["model"] != JUDGE_MODEL for r in srv.requests) == model_calls
    assert report.result("arith")["correct"] == expected_cascade(N)["rule_correct"]


async def test_a_changed_stored_prediction_is_scored_again(tmp_path, server):
    data = write_arith(tmp_path / "a.jsonl", N)
    cfg = write_config(tmp_path / "cfg.py", data, models=[_model(server.base_url)])
    work = tmp_path / "w"
    await harness.evaluate(cfg, work_dir=work)
    assert details(work)[0]["correct"] is True
    # Another run replaced the reply stored under sample 0's prediction key.
    con = sqlite3.connect(work / "harness.db")
    con.execute("UPDATE predictions SET text = 'The answer is 99.' WHERE idx = 0")
    con.commit()
    con.close()
    await harness.evaluate(cfg, work_dir=work)
    assert len(server.requests) == N
    first = details(work)[0]
    assert (first["prediction"], first["pred"], first["correct"]) == (
        "The answer is 99.", "99", False)


async def test_a_changed_harness_source_is_scored_again(tmp_path, server, monkeypatch):
    data = write_arith(tmp_path / "a.jsonl", N)
    cfg = write_config(tmp_path / "cfg.py", data, models=[_model(server.base_url)])
    work = tmp_path / "w"
    await harness.evaluate(cfg, work_dir=work)
    assert details(work)[0]["correct"] is True
    from harness.evaluators.rules import AccEvaluator

    # harness's own scoring code changes ...
    monkeypatch.setattr(AccEvaluator, "score_sample", lambda self, p, r, t=None: {
        "pred": p, "answer": r, "correct": False})
    await harness.evaluate(cfg, work_dir=work)
    assert details(work)[0]["correct"] is True  # ... unseen while its source digest is
    monkeypatch.setattr(outcomes, "source_digest", lambda: "another version of harness")
    await harness.evaluate(cfg, work_dir=work)
    assert not any(r["correct"] for r in details(work))
    assert len(server.requests) == N


CONFIG_POSTPROCESSOR = '''
def last_word(text):
    return text.split()[{position}].strip('.')
'''


async def test_a_postprocessor_of_the_config_is_scored_every_run(tmp_path, server):
    data = write_arith(tmp_path / "a.jsonl", N)
    work = tmp_path / "w"

    def config(position: int) -> Path:
        return write_config(tmp_path / "cfg.py", data, models=[_model(server.base_url)],
                            pred_pp="last_word",
                            extra=CONFIG_POSTPROCESSOR.format(position=position))

    report = await harness.evaluate(config(-1), work_dir=work)
    assert report.result("arith")["correct"] > 0
    assert stored_outcomes(work) == 0  # its code can change unseen: nothing stored
    report = await harness.evaluate(config(0), work_dir=work)  # "Let" is no answer
    assert report.result("arith")["correct"] == 0
    assert len(server.requests) == N


def test_only_harness_callables_are_fingerprinted():
    from harness.evaluators.base import EVALUATORS
    from harness.postprocessors import POSTPROCESSORS

    # Every shipped postprocessor and evaluator counts as harness's own ...
    for registry in (POSTPROCESSORS, EVALUATORS):
        for name in registry.names():
            assert outcomes.describe(name) == name
            outcomes.describe(registry.get(name))

    # ... a function defined anywhere else does not, even wrapped to look like one.
    def mine(text):
        return text

    import functools

    @functools.wraps(harness.gsm8k_postprocess)
    def wrapper(text):
        return harness.gsm8k_postprocess(text)

    def factory(tag):
        def closure(text):
            return tag
        return closure

    def as_harness(func):  # made to look defined in harness's own files
        func.__code__ = func.__code__.replace(co_filename=outcomes.__file__)
        return func

    # A closure counts with what it captured: two products of one factory differ.
    assert outcomes.describe(as_harness(factory("x"))) != outcomes.describe(
        as_harness(factory("y")))
    for foreign in (mine, wrapper, len, functools.partial(harness.gsm8k_postprocess),
                    as_harness(factory(object()))):
        with pytest.raises(outcomes.NotCacheable):
            outcomes.describe({"pred_postprocessor": {"type": foreign}})


def test_a_name_registered_by_the_user_is_not_harness_code():
    from harness.postprocessors import POSTPROCESSORS

    POSTPROCESSORS.register("test-outcomes-user-pp")(lambda text: text)
    with pytest.raises(outcomes.NotCacheable):
        outcomes.describe({"type": "test-outcomes-user-pp"})


async def test_a_judge_error_is_not_stored_and_is_judged_next_run(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", N)
    work = tmp_path / "w"
    failing = {"on": True}

    def faults(body, attempt):
        # The judge fails for good on the rule failure of row 1 (1 + 2).
        if failing["on"] and body["model"] == JUDGE_MODEL and "What is 1 + 2?" in str(body):
            return Fault("server_error")
        return None

    async with FakeOpenAI(responder=model_and_judge, faults=faults) as srv:
        cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url,
                                 judge={"max_attempts": 1})
        report = await harness.evaluate(cfg, work_dir=work)
        assert report.result("arith")["counts"]["judge_error"] == 1
        assert stored_outcomes(work) == N - 1
        failing["on"] = False
        judged = sum(r["model"] == JUDGE_MODEL for r in srv.requests)
        report = await harness.evaluate(cfg, work_dir=work)
        assert sum(r["model"] == JUDGE_MODEL for r in srv.requests) == judged + 1
    assert report.result("arith")["complete"]
    assert report.result("arith")["correct"] == expected_cascade(N)["final"]
    assert stored_outcomes(work) == N


async def test_a_model_error_is_not_stored_and_is_asked_next_run(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", N)
    work = tmp_path / "w"
    failing = {"on": True}

    def faults(body, attempt):
        if failing["on"] and "What is 2 + 3?" in str(body):
            return Fault("server_error")
        return None

    async with FakeOpenAI(responder=model_and_judge, faults=faults) as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[_model(srv.base_url,
                                                                      max_attempts=1)])
        report = await harness.evaluate(cfg, work_dir=work)
        assert report.result("arith")["counts"]["model_error"] == 1
        assert stored_outcomes(work) == N - 1
        failing["on"] = False
        report = await harness.evaluate(cfg, work_dir=work)
    assert report.result("arith")["complete"]
    assert stored_outcomes(work) == N


async def test_a_slow_math_verify_check_is_not_stored(tmp_path, monkeypatch):
    """math-verify ends a check that reaches its own time limit as "wrong", silently: a
    check that took that long is scored again by the next run."""
    data = tmp_path / "m.jsonl"
    # Golds math-verify must compare (0.5 = \frac{1}{2}), not the fast path.
    data.write_text("".join(json.dumps({"question": f"q{i}", "answer": "\\frac{1}{2}"}) + "\n"
                            for i in range(4)))
    work = tmp_path / "w"
    from harness.evaluators.math_verify import MATHVerifyEvaluator

    async with FakeOpenAI(responder=lambda body: "The answer is $0.5$.") as srv:
        datasets = [dict(
            abbr="m", type=harness.CustomDataset, path=str(data),
            reader_cfg=dict(input_columns=["question"], output_column="answer"),
            infer_cfg=dict(prompt_template=dict(type=harness.RawPromptTemplate,
                                                messages=[dict(role="user", content="{question}")]),
                           inferencer=dict(type=harness.GenInferencer)),
            eval_cfg=dict(evaluator=dict(type=MATHVerifyEvaluator)))]
        models = [_model(srv.base_url)]
        with monkeypatch.context() as patch:
            patch.setattr(MATHVerifyEvaluator, "quiet_timeout", lambda self: 0.0)
            report = await harness.evaluate(datasets=datasets, models=models, work_dir=work,
                                            rule_workers=1)
        assert report.result("m")["correct"] == 4
        assert stored_outcomes(work) == 0
        await harness.evaluate(datasets=datasets, models=models, work_dir=work, rule_workers=1)
    assert stored_outcomes(work) == 4


async def test_another_judge_key_changes_no_stored_key(tmp_path, monkeypatch):
    """The judge's API key is no part of the fingerprint (not even hashed): a new key
    reuses every outcome."""
    data = write_arith(tmp_path / "a.jsonl", N)
    work = tmp_path / "w"
    async with FakeOpenAI(responder=model_and_judge) as srv:
        cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url,
                                 judge={"key": "sk-first-judge-key"})
        await harness.evaluate(cfg, work_dir=work)
        cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url,
                                 judge={"key": "sk-second-judge-key"})
        monkeypatch.setattr(Scorer, "score_keyed", _refuse)
        await harness.evaluate(cfg, work_dir=work)


async def test_infer_mode_neither_reads_nor_writes_outcomes_and_eval_mode_does(
        tmp_path, server, no_scoring_after):
    data = write_arith(tmp_path / "a.jsonl", N)
    cfg = write_config(tmp_path / "cfg.py", data, models=[_model(server.base_url)])
    work = tmp_path / "w"
    await harness.evaluate(cfg, work_dir=work, mode="infer")
    assert stored_outcomes(work) == 0
    await harness.evaluate(cfg, work_dir=work, mode="eval")
    assert stored_outcomes(work) == N
    async with harness.open_run(cfg, work_dir=work, mode="infer") as run:
        inferred = [result async for result in run]
    assert len(inferred) == N
    assert all(r.correct is None for r in inferred)  # not the stored outcomes
    no_scoring_after()
    report = await harness.evaluate(cfg, work_dir=work, mode="eval")
    assert report.result("arith")["correct"] == N - N // 4


async def test_schema_3_store_is_migrated_keeping_its_rows(tmp_path, server):
    data = write_arith(tmp_path / "a.jsonl", N)
    cfg = write_config(tmp_path / "cfg.py", data, models=[_model(server.base_url)])
    work = tmp_path / "w"
    await harness.evaluate(cfg, work_dir=work)
    con = sqlite3.connect(work / "harness.db")
    con.execute("DROP TABLE outcomes")  # what a schema-3 store looks like
    con.execute("ALTER TABLE verdicts DROP COLUMN reasks")
    con.execute("UPDATE meta SET value = '3' WHERE name = 'schema_version'")
    con.commit()
    predictions = con.execute("SELECT * FROM predictions ORDER BY key").fetchall()
    con.close()
    async with Store(work):
        pass
    assert rows(work, "SELECT value FROM meta WHERE name = 'schema_version'") == [
        (str(SCHEMA_VERSION),)]
    assert rows(work, "SELECT * FROM predictions ORDER BY key") == predictions
    assert stored_outcomes(work) == 0
    requests = len(server.requests)
    await harness.evaluate(cfg, work_dir=work)  # re-scores once, stores the outcomes
    assert len(server.requests) == requests
    assert stored_outcomes(work) == N


async def test_schema_4_store_keeps_its_outcomes_in_write_order(tmp_path, server,
                                                                no_scoring_after):
    data = write_arith(tmp_path / "a.jsonl", N)
    cfg = write_config(tmp_path / "cfg.py", data, models=[_model(server.base_url)])
    work = tmp_path / "w"
    await harness.evaluate(cfg, work_dir=work)
    con = sqlite3.connect(work / "harness.db")
    # What a schema-4 store looks like: its outcomes in a WITHOUT ROWID table, where
    # they lie in key order. Written in the opposite order here (one batch wrote them
    # all at once), so a copy in key order is caught.
    con.executescript("""
        CREATE TABLE old (key TEXT PRIMARY KEY, outcome TEXT NOT NULL, verdict TEXT,
                          updated REAL NOT NULL) WITHOUT ROWID;
        INSERT INTO old SELECT * FROM outcomes;
        UPDATE old SET updated = 1000 - (SELECT count(*) FROM old o WHERE o.key < old.key);
        DROP TABLE outcomes;
        ALTER TABLE old RENAME TO outcomes;
        ALTER TABLE verdicts DROP COLUMN reasks;
        UPDATE meta SET value = '4' WHERE name = 'schema_version';
    """)
    con.close()
    stored = rows(work, "SELECT * FROM outcomes ORDER BY key")
    assert len(stored) == N
    async with Store(work):
        pass
    assert rows(work, "SELECT value FROM meta WHERE name = 'schema_version'") == [
        (str(SCHEMA_VERSION),)]
    assert rows(work, "SELECT * FROM outcomes ORDER BY key") == stored
    # A rowid table now, its rows in the order they were written.
    [(sql,)] = rows(work, "SELECT sql FROM sqlite_master WHERE name = 'outcomes'")
    assert "WITHOUT ROWID" not in sql.upper()
    written = rows(work, "SELECT updated FROM outcomes ORDER BY rowid")
    assert written == sorted(written) and len(set(written)) == N
    # The migrated outcomes serve the rerun: nothing is scored again.
    no_scoring_after()
    requests = len(server.requests)
    await harness.evaluate(cfg, work_dir=work)
    assert len(server.requests) == requests


def test_a_result_json_cannot_give_back_exactly_is_not_stored():
    from harness.records import SampleResult

    def result(**details: Any) -> SampleResult:
        return SampleResult("d", "m", 0, 0, "ok", (), "x", "x", "x", True, details=details)

    assert outcomes.final_row("k", result(stats=[1, 2.5, "a", None, True])) is not None
    for odd in ((1, 2), float("nan"), {1: "a"}, {"a"}):
        assert outcomes.final_row("k", result(stats=odd)) is None
    pending = SampleResult("d", "m", 0, 0, "timeout", (), "x", "x", "x", False)
    assert outcomes.final_row("k", pending) is None


def test_a_combined_verdict_keeps_every_field_of_the_rule_result():
    """``combine`` builds the judged result field by field: one it forgot would be lost
    from every judged sample (a restored one included)."""
    import dataclasses

    from harness.judge.runner import combine
    from harness.records import JudgeTask, SampleResult, VerdictRecord

    base = SampleResult("d", "m", 3, 1, "extract_failed", ({"role": "user", "content": "q"},),
                        "reply", "", "7", False, "no answer", {"rule_evaluation": {}},
                        True, rule_correct=False, cause="a cause")
    verdict = VerdictRecord("k", "judge", "m", "d", 3, 1, "ok", "A", "A", cached=True)
    result = combine(JudgeTask(base, {}, "reply", "7", True), verdict, ())
    judged = {"correct", "details", "judge_status", "judge_correct", "judge_cached"}
    for field in dataclasses.fields(SampleResult):
        if field.name not in judged:
            assert getattr(result, field.name) == getattr(base, field.name), field.name
    assert (result.correct, result.judge_status, result.judge_correct, result.judge_cached) == (
        True, "ok", True, True)


def test_every_shipped_benchmark_is_fingerprinted():
    """A shipped config whose scoring could not be fingerprinted would be re-scored on
    every rerun; each one's is (code and PPL datasets have stores of their own)."""
    from harness.config import load_config
    from harness.shipped import datasets_dir

    configs = sorted(datasets_dir().glob("*.py"))
    assert configs
    for path in configs:
        for dataset in load_config(path).datasets:
            outcomes.describe(dataset.eval_cfg)  # raises NotCacheable otherwise
            judged = "llm_evaluator" in str(dataset.eval_cfg)
            if not (judged or dataset.ppl or dataset.evaluator.executes):
                assert outcomes.scoring_fingerprint(dataset, None) is not None, path.name
