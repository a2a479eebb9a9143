"""``metric_values``: a run's details rows → its metrics, for the results stage."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import sacrebleu

import harness
from harness.config import load_config
from harness.evaluators import build_evaluator
from harness.metrics.aggregate import metric_values, results_entry
from harness.metrics.paired import paired_differences
from harness.report.workdir import iter_details
from harness.results import wilson_bounds
from harness.testing import FakeOpenAI

DATASETS = Path(__file__).resolve().parent.parent / "datasets"
BLEU = dict(type="BleuEvaluator")


def row(ev, index, pred, ref, status="ok", replica=0):
    """A details row as the pipeline writes it: evaluator fields only when scored ok."""
    out = {"index": index, "replica": replica, "status": status, "reference": ref,
           "prediction": pred, "pred": pred, "correct": False if status != "ok" else None}
    if status == "ok":
        detail = ev.score_sample(pred, ref)
        out.update({k: v for k, v in detail.items() if k not in ("pred", "answer")})
    return out


def test_empty_reply_counts_as_an_empty_hypothesis():
    ev = build_evaluator(BLEU)
    hyps, refs = ["Der Hund bellt laut.", "", "Die Katze"], ["Der Hund bellt.", "Hallo", "Die Katze"]
    rows = [row(ev, 0, hyps[0], refs[0]), row(ev, 1, "", refs[1], status="empty_reply"),
            row(ev, 2, hyps[2], refs[2])]
    values = metric_values(ev, rows)
    assert list(values) == ["bleu", "chrf"]
    assert values["bleu"].value == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs]).score)
    assert values["chrf"].value == pytest.approx(sacrebleu.corpus_chrf(hyps, [refs]).score)
    assert values["bleu"].n == 3 and values["bleu"].sample_keys == ("bleu_stats",)


def test_pending_samples_give_bounds_not_a_value():
    ev = build_evaluator(dict(type="NQEvaluator"))
    rows = [row(ev, 0, "Paris", ["Paris"]), row(ev, 1, "Rome", ["Berlin"]),
            row(ev, 2, None, ["Oslo"], status="model_error")]
    values = metric_values(ev, rows)
    em = values["em"]
    assert em.value is None and em.ci95 is None
    assert em.bounds == pytest.approx((100 / 3, 200 / 3))  # Oslo wrong … right
    assert em.to_json()["bounds"] == [33.3333, 66.6667]
    assert values["f1"].bounds == pytest.approx((100 / 3, 200 / 3))


def test_a_corpus_metric_has_no_bounds_while_samples_are_pending():
    # Replies longer than their references: the brevity penalty is 1 already, so an
    # empty output for the pending sentence lowers nothing and a wrong one lowers the
    # precisions: the final BLEU falls below the "all empty" filling, which is no bound.
    ev = build_evaluator(BLEU)
    refs = ["the cat sat on the mat", "a dog ran in the park today", "birds sing"]
    hyps = ["the cat sat on the mat quietly today", "a dog ran in the big park today",
            "fish swim in the deep blue sea"]
    rows = [row(ev, 0, hyps[0], refs[0]), row(ev, 1, hyps[1], refs[1]),
            row(ev, 2, None, refs[2], status="model_error")]
    final = sacrebleu.corpus_bleu(hyps, [refs]).score
    as_empty = sacrebleu.corpus_bleu(hyps[:2] + [""], [refs]).score
    assert final < as_empty  # why the "all empty" filling is not a lower bound
    values = metric_values(ev, rows)
    for name in ("bleu", "chrf"):
        assert values[name].value is None and values[name].bounds is None
        assert "bounds" not in values[name].to_json()
        assert values[name].cell() == "no value"


def test_accuracy_default_is_the_wilson_interval():
    ev = build_evaluator(dict(type="AccEvaluator"))
    rows = [{"index": i, "replica": 0, "status": "ok", "correct": i < 7, "reference": "A"}
            for i in range(10)]
    rows.append({"index": 10, "replica": 0, "status": "extract_failed", "correct": False,
                 "reference": "A"})
    value = metric_values(ev, rows)["accuracy"]
    low, high = wilson_bounds(7, 11)
    assert value.value == pytest.approx(700 / 11)
    assert value.ci95 == pytest.approx((100 * low, 100 * high))


def test_replicas_are_resampled_as_one_sample():
    ev = build_evaluator(dict(type="SquadEvaluator"))
    singles = [row(ev, i, f"w{i % 3}", [f"w{i % 2}"]) for i in range(30)]
    doubled = singles + [{**r, "replica": 1} for r in singles]
    one, two = metric_values(ev, singles)["f1"], metric_values(ev, doubled)["f1"]
    assert two.value == pytest.approx(one.value) and two.ci95 == pytest.approx(one.ci95)
    assert two.n == 60


def test_paired_difference_of_two_runs():
    ev = build_evaluator(dict(type="NQEvaluator"))
    refs = [[f"answer {i}"] for i in range(40)]
    a = [row(ev, i, f"answer {i}" if i < 20 else "no", refs[i]) for i in range(40)]
    b = [row(ev, i, f"answer {i}" if i < 30 else "no", refs[i]) for i in range(40)]
    b[0] = {**b[0], "status": "model_error"}  # left out of the pairing
    diff = paired_differences(ev, a, b)["em"]
    assert diff.n == 39 and diff.difference == pytest.approx(100 * 10 / 39 - 0)
    assert diff.ci95[0] > 0 and diff.ci95[0] < diff.difference < diff.ci95[1]


def translate(body: dict) -> str:
    """A German 'translation': the reference with its last word dropped, for every sample."""
    source = re.search(r"English: (.*)\nGerman:", body["messages"][-1]["content"]).group(1)
    return " ".join(SOURCES[source].split()[:-1]) or "Hallo"


SOURCES: dict[str, str] = {}


async def test_shipped_translation_run_recomputes_with_sacrebleu(tmp_path):
    path = DATASETS / "ntrex128.py"
    data = DATASETS / "data" / "ntrex128" / "newstest2019.eng-deu.jsonl"
    for line in data.read_text(encoding="utf-8").splitlines()[:25]:
        r = json.loads(line)
        SOURCES[r["source"]] = r["reference"]
    async with FakeOpenAI(responder=translate) as srv:
        report = await harness.evaluate(
            path, work_dir=tmp_path / "w", limit=25,
            models=[dict(abbr="fake", path="fake-model", openai_api_base=srv.base_url)])
    details = Path(report.summaries[0]["details"])
    rows = [r for _, r in iter_details(details)]
    evaluator = load_config(path).datasets[0].evaluator
    entry = results_entry(evaluator, rows)
    hyps = [r["prediction"] for r in rows]
    refs = [[r["reference"] for r in rows]]
    assert entry["primary"] == "bleu"
    assert entry["metrics"]["bleu"]["value"] == pytest.approx(
        sacrebleu.corpus_bleu(hyps, refs).score, abs=1e-4)
    assert entry["metrics"]["chrf"]["value"] == pytest.approx(
        sacrebleu.corpus_chrf(hyps, refs).score, abs=1e-4)
    low, high = entry["metrics"]["bleu"]["ci95"]
    assert low < entry["metrics"]["bleu"]["value"] < high


def test_the_registry_does_not_import_the_metric_libraries():
    # Every CLI start imports the evaluator registry; rouge-score pulls in nltk (seconds).
    import subprocess
    import sys

    code = ("import sys, harness.evaluators; print(sorted(m for m in "
            "('sacrebleu', 'rouge_score', 'nltk') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
