"""Text metrics in a run's results: the shipped ntrex128 (BLEU/chrF) and nq_open (EM/F1)
configs run against the fake server, their results recomputed independently from the
stored details with sacrebleu and the official SQuAD v1.1 functions."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import sacrebleu

import harness
from harness.compare import compare_dirs, format_text
from harness.report.workdir import iter_details
from harness.testing import FakeOpenAI, Fault

from .test_metrics_text import official_em, official_f1  # the SQuAD v1.1 oracle

DATASETS = Path(__file__).resolve().parent.parent / "datasets"
NTREX = DATASETS / "ntrex128.py"
NQ = DATASETS / "nq_open.py"
LIMIT = 50



def _rows(path: Path, n: int = LIMIT) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[:n]]


#: The first LIMIT sentences of the shipped translation set: English → German reference.
REFERENCE = {r["source"]: r["reference"]
             for r in _rows(DATASETS / "data" / "ntrex128" / "newstest2019.eng-deu.jsonl")}


def source_of(body: dict) -> str:
    """The English sentence of a translation request."""
    return re.search(r"English: (.*)\nGerman:", body["messages"][-1]["content"]).group(1)


def drop_last_word(body: dict) -> str:
    """A known, imperfect translation: the reference without its last word."""
    return " ".join(REFERENCE[source_of(body)].split()[:-1]) or "Hallo"


def perfect(body: dict) -> str:
    """The reference itself."""
    return REFERENCE[source_of(body)]


async def run_ntrex(work: Path, responder: Callable[[dict], str] = drop_last_word,
                    faults=None) -> harness.RunReport:
    """A real run of the shipped ntrex128 config on LIMIT sentences."""
    async with FakeOpenAI(responder=responder, faults=faults) as srv:
        return await harness.evaluate(
            NTREX, work_dir=work, limit=LIMIT,
            models=[dict(abbr="fake", path="fake-model", openai_api_base=srv.base_url)])


def results_json(work: Path, dataset: str) -> dict:
    """The results file of the run's one (model, dataset), as written to disk."""
    return json.loads((work / "results" / "fake" / f"{dataset}.json").read_text())


def details(work: Path, dataset: str) -> list[dict]:
    """Every stored details row of the run's one (model, dataset)."""
    return [r for _, r in iter_details(work / "details" / "fake" / f"{dataset}.jsonl")]


async def test_ntrex_results_are_sacrebleu_corpus_scores_of_the_stored_outputs(tmp_path):
    await run_ntrex(tmp_path / "w")
    data, rows = results_json(tmp_path / "w", "ntrex128_en-de"), details(tmp_path / "w",
                                                                         "ntrex128_en-de")
    hyps, refs = [r["prediction"] for r in rows], [[r["reference"] for r in rows]]
    assert len(rows) == LIMIT and data["complete"] is True
    assert data["primary_metric"] == "bleu" and list(data["metrics"]) == ["bleu", "chrf"]
    bleu, chrf = data["metrics"]["bleu"], data["metrics"]["chrf"]
    assert bleu["value"] == pytest.approx(sacrebleu.corpus_bleu(hyps, refs).score, abs=1e-4)
    assert chrf["value"] == pytest.approx(sacrebleu.corpus_chrf(hyps, refs).score, abs=1e-4)
    # The corpus score, not a mean of sentence scores (they differ on these outputs).
    mean = sum(sacrebleu.sentence_bleu(h, [r]).score for h, r in zip(hyps, refs[0], strict=True)) / LIMIT
    assert abs(bleu["value"] - mean) > 0.5
    for metric in (bleu, chrf):
        assert metric["ci95"][0] < metric["value"] < metric["ci95"][1]
        assert metric["n"] == LIMIT
    # No accuracy of a metric that has no verdicts: the old defect reported 0.
    assert "accuracy" not in data and data["scored"] == LIMIT
    assert all(r["correct"] is None and len(r["bleu_stats"]) == 10 for r in rows)


async def test_ntrex_summary_table_names_the_metric(tmp_path):
    report = await run_ntrex(tmp_path / "w")
    m = results_json(tmp_path / "w", "ntrex128_en-de")["metrics"]
    b, c = m["bleu"], m["chrf"]
    line = report.table().splitlines()[2]
    assert line.split()[0] == "ntrex128_en-de"
    assert (f"bleu {b['value']:.2f} [{b['ci95'][0]:.2f}, {b['ci95'][1]:.2f}], "
            f"chrf {c['value']:.2f} [{c['ci95'][0]:.2f}, {c['ci95'][1]:.2f}] "
            f"({LIMIT} scored, extract 100%)") in line


FAILED = sorted(REFERENCE)[:5]  # five sentences whose model call fails (a 400: no retry)


def fail_some(body: dict, attempt: int) -> Fault | None:
    return Fault("bad_request") if source_of(body) in FAILED else None


async def test_incomplete_ntrex_run_gives_no_value_and_no_bounds(tmp_path):
    # BLEU and chrF are not monotone in one sentence's output: no filling of the pending
    # sentences bounds the final value (test_metrics_aggregate), so none is shown.
    report = await run_ntrex(tmp_path / "w", faults=fail_some)
    data = results_json(tmp_path / "w", "ntrex128_en-de")
    assert data["complete"] is False and data["pending_counts"] == {"model_error": 5}
    for name in ("bleu", "chrf"):
        metric = data["metrics"][name]
        assert metric["value"] is None and metric["ci95"] is None
        assert "bounds" not in metric
    line = report.table().splitlines()[2]
    assert "INCOMPLETE bleu no value, chrf no value (45/50 scored; pending: 5 model_error)" \
        in line


async def test_compare_of_two_ntrex_runs_gives_a_paired_bleu_interval(tmp_path):
    await run_ntrex(tmp_path / "a", drop_last_word)
    await run_ntrex(tmp_path / "b", perfect)
    (pair,) = compare_dirs(tmp_path / "a", tmp_path / "b")["pairs"]
    a = results_json(tmp_path / "a", "ntrex128_en-de")["metrics"]["bleu"]["value"]
    assert pair["primary_metric"] == "bleu" and pair["paired"] == LIMIT
    bleu = pair["metrics"]["bleu"]
    assert bleu["a"] == pytest.approx(a, abs=1e-4) and bleu["b"] == pytest.approx(100.0)
    assert bleu["difference"] == pytest.approx(100.0 - a, abs=1e-3)
    low, high = bleu["ci95"]
    assert 0 < low < bleu["difference"] < high  # B is better, and the interval says so
    assert set(pair["metrics"]) == {"bleu", "chrf"}
    text = format_text(compare_dirs(tmp_path / "a", tmp_path / "b"))
    assert (f"bleu A {bleu['a']:.2f}  B {bleu['b']:.2f}  difference "
            f"{bleu['difference']:+.2f} (95% CI {low:+.2f} to {high:+.2f}, paired bootstrap)"
            in text)


def metric_max_over_ground_truths(metric_fn, prediction, ground_truths):
    """The official script's best score over a question's answers."""
    return max(metric_fn(prediction, gt) for gt in ground_truths)


ANSWERS = {r["question"]: r["answer"] for r in _rows(DATASETS / "data" / "nq_open" /
                                                     "NQ-open.dev.jsonl")}


def nq_reply(body: dict) -> str:
    """Right (an answer, cased and punctuated otherwise), partly right, or wrong."""
    question = re.search(r"Q: (.*)\?\nA:", body["messages"][-1]["content"]).group(1)
    answer = ANSWERS[question][-1]
    kind = sorted(ANSWERS).index(question) % 3
    return [f"The {answer.upper()}.", f"maybe {answer} or so", "no idea"][kind]


async def test_nq_open_em_and_f1_equal_the_official_squad_functions(tmp_path):
    async with FakeOpenAI(responder=nq_reply) as srv:
        report = await harness.evaluate(
            NQ, work_dir=tmp_path / "w", limit=LIMIT,
            models=[dict(abbr="fake", path="fake-model", openai_api_base=srv.base_url)])
    data, rows = results_json(tmp_path / "w", "nq_open"), details(tmp_path / "w", "nq_open")
    assert data["primary_metric"] == "em" and list(data["metrics"]) == ["em", "f1", "contains"]
    em = [metric_max_over_ground_truths(official_em, r["pred"], r["reference"])
          for r in rows]
    f1 = [metric_max_over_ground_truths(official_f1, r["pred"], r["reference"]) for r in rows]
    assert 0 < sum(em) < LIMIT and sum(f1) > sum(em)  # the replies exercise every case
    assert data["metrics"]["em"]["value"] == pytest.approx(100 * sum(em) / LIMIT, abs=1e-4)
    assert data["metrics"]["f1"]["value"] == pytest.approx(100 * sum(f1) / LIMIT, abs=1e-4)
    # EM is a 0/1 judgement: it is the samples' verdict, and its interval is Wilson's.
    assert [r["correct"] for r in rows] == em
    assert sum(r["correct"] for r in rows) == data["correct"]
    b = data["metrics"]["em"]
    assert f"em {b['value']:.2f} [{b['ci95'][0]:.2f}, {b['ci95'][1]:.2f}]" in report.table()


def test_an_accuracy_result_keeps_its_json_shape():
    # Every existing benchmark's results JSON: flat accuracy keys, no "metrics" section.
    from harness.evaluators import build_evaluator
    from harness.records import SampleResult
    from harness.results import Accumulator

    acc = Accumulator("m", "d", "all", evaluator=build_evaluator(dict(type="AccEvaluator")))
    for i in range(4):
        acc.add(SampleResult("d", "m", i, 0, "ok", (), "A", "A", "A", i < 3))
    data = acc.summary().to_json()
    assert list(data) == [
        "model", "dataset", "mode", "total", "scored", "correct", "counts",
        "cached_predictions", "complete", "pending", "pending_counts", "pending_causes",
        "accuracy", "accuracy_bounds", "accuracy_ci95", "extract_rate", "evaluator",
        "call_stats"]
    assert data["accuracy"] == 75.0 and data["accuracy_bounds"] == [75.0, 75.0]
    assert data["accuracy_ci95"] == [30.06, 95.44]


def chrf_config(tmp_path: Path, **options) -> Path:
    """The shipped ntrex128 config with BleuEvaluator ``options`` (chrF++, a tokenizer)."""
    text = NTREX.read_text(encoding="utf-8").replace(
        'path="data/ntrex128/', f'path="{DATASETS}/data/ntrex128/').replace(
        "evaluator=dict(type=BleuEvaluator)",
        f"evaluator=dict(type=BleuEvaluator, **{options!r})")
    path = tmp_path / f"ntrex_{'_'.join(map(str, options.values()))}.py"
    path.write_text(text, encoding="utf-8")
    return path


async def run_config(config: Path, work: Path, responder: Callable[[dict], str]) -> None:
    async with FakeOpenAI(responder=responder) as srv:
        await harness.evaluate(
            config, work_dir=work, limit=LIMIT,
            models=[dict(abbr="fake", path="fake-model", openai_api_base=srv.base_url)])


def empty_for_some(body: dict) -> str:
    """The imperfect translation, but an empty line for a few sentences: those rows are
    scored as empty predictions, which ``compare`` must score with the run's options."""
    return "\n" if source_of(body) in FAILED else drop_last_word(body)


async def test_compare_scores_chrf_plus_plus_runs_with_their_own_options(tmp_path):
    config = chrf_config(tmp_path, chrf_word_order=2)
    await run_config(config, tmp_path / "a", empty_for_some)
    await run_config(config, tmp_path / "b", perfect)
    data = results_json(tmp_path / "a", "ntrex128_en-de")
    assert data["evaluator_options"]["chrf_word_order"] == 2
    rows = details(tmp_path / "a", "ntrex128_en-de")
    hyps = [r["prediction"] if r["status"] == "ok" else "" for r in rows]
    chrf_pp = sacrebleu.corpus_chrf(hyps, [[r["reference"] for r in rows]], word_order=2).score
    assert data["metrics"]["chrf"]["value"] == pytest.approx(chrf_pp, abs=1e-4)
    (pair,) = compare_dirs(tmp_path / "a", tmp_path / "b")["pairs"]
    # The same chrF++ the run reported, not chrF recomputed with default options.
    assert pair["metrics"]["chrf"]["a"] == pytest.approx(chrf_pp, abs=1e-4)
    assert pair["metrics"]["chrf"]["b"] == pytest.approx(100.0)


async def test_compare_refuses_metrics_scored_with_different_options(tmp_path):
    await run_config(chrf_config(tmp_path, tokenize="13a"), tmp_path / "a", drop_last_word)
    await run_config(chrf_config(tmp_path, tokenize="char"), tmp_path / "b", drop_last_word)
    (pair,) = compare_dirs(tmp_path / "a", tmp_path / "b")["pairs"]
    assert "metrics" not in pair
    assert "tokenize='13a'" in pair["metrics_not_compared"]
    assert "tokenize='char'" in pair["metrics_not_compared"]
    text = format_text(compare_dirs(tmp_path / "a", tmp_path / "b"))
    assert "metrics not compared: A was scored by BleuEvaluator(" in text
    assert "bleu A" not in text


async def test_empty_replies_count_in_corpus_bleu_as_empty_outputs(tmp_path):
    """A sample with no answer is scored as an empty output against its reference: its
    reference's length and n-grams stay in the corpus (leaving them out inflated BLEU)."""
    await run_config(NTREX, tmp_path / "w", empty_for_some)
    data, rows = results_json(tmp_path / "w", "ntrex128_en-de"), details(tmp_path / "w",
                                                                         "ntrex128_en-de")
    assert sorted({r["status"] for r in rows}) == ["empty_reply", "ok"]
    hyps = [r["prediction"] if r["status"] == "ok" else "" for r in rows]
    refs = [[r["reference"] for r in rows]]
    assert data["metrics"]["bleu"]["value"] == pytest.approx(
        sacrebleu.corpus_bleu(hyps, refs).score, abs=1e-4)
    assert data["metrics"]["chrf"]["value"] == pytest.approx(
        sacrebleu.corpus_chrf(hyps, refs).score, abs=1e-4)
    assert data["metrics"]["bleu"]["n"] == LIMIT
    # BLEU judges no sample right or wrong, an empty one neither: so compare finds no
    # per-sample verdicts, and shows no accuracy beside the metrics.
    assert {r["correct"] for r in rows} == {None}
    await run_config(NTREX, tmp_path / "b", perfect)
    (pair,) = compare_dirs(tmp_path / "w", tmp_path / "b")["pairs"]
    assert pair["accuracy_a"] is None and pair["paired"] == LIMIT
    assert "accuracy A" not in format_text(compare_dirs(tmp_path / "w", tmp_path / "b"))
