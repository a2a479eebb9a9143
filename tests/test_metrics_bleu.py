"""BleuEvaluator's BLEU and chrF equal sacrebleu's own corpus scores on the same outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sacrebleu

from harness.evaluators import build_evaluator

NTREX = (Path(__file__).resolve().parent.parent / "datasets" / "data" / "ntrex128"
         / "newstest2019.eng-deu.jsonl")

FIXED_HYPS = [
    "Der Hund bellt laut.",
    "",                                   # an empty prediction
    "Größere Häuser kosten mehr Geld.",   # unicode
    "東京は日本の首都です。",
    "Das ist ein Test .",
]
FIXED_REFS = [  # two references each (sacrebleu streams need the same count)
    ["Der Hund bellt laut.", "Ein Hund bellt."],
    ["Die Katze schläft.", "Eine Katze schläft."],
    ["Größere Häuser kosten mehr.", "Große Häuser sind teurer."],
    ["東京は日本の首都です。", "日本の首都は東京です。"],
    ["Das ist ein Test.", "Dies ist ein Test."],
]


def streams(refs):
    """Per-sample reference lists → sacrebleu's reference streams."""
    return [list(s) for s in zip(*refs, strict=True)]


def ntrex(n):
    rows = [json.loads(line) for line in NTREX.read_text(encoding="utf-8").splitlines()[:n]]
    # Imperfect outputs: every third sentence loses its last word, every fifth is empty.
    hyps = ["" if i % 5 == 4 else " ".join(r["reference"].split()[:-1]) if i % 3 == 0
            else r["reference"] for i, r in enumerate(rows)]
    return hyps, [[r["reference"]] for r in rows]


@pytest.mark.parametrize("case", ["fixed", "ntrex"])
def test_corpus_scores_equal_sacrebleu(case):
    hyps, refs = (FIXED_HYPS, FIXED_REFS) if case == "fixed" else ntrex(300)
    result = build_evaluator(dict(type="BleuEvaluator")).score(hyps, refs)
    assert result["bleu"] == pytest.approx(sacrebleu.corpus_bleu(hyps, streams(refs)).score,
                                           abs=1e-9)
    assert result["chrf"] == pytest.approx(sacrebleu.corpus_chrf(hyps, streams(refs)).score,
                                           abs=1e-9)


def test_corpus_bleu_is_not_a_mean_of_sentence_scores():
    result = build_evaluator(dict(type="BleuEvaluator")).score(FIXED_HYPS, FIXED_REFS)
    mean = sum(d["bleu"] for d in result["details"]) / len(FIXED_HYPS)
    assert abs(result["bleu"] - mean) > 1
    # Sentence scores are sacrebleu's sentence_bleu (effective order on).
    assert result["details"][0]["bleu"] == pytest.approx(
        sacrebleu.sentence_bleu(FIXED_HYPS[0], FIXED_REFS[0]).score)


def test_tokenizer_option_reaches_sacrebleu():
    hyps, refs = ["東京は日本の首都"], [["東京は日本の首都です"]]
    zh = build_evaluator(dict(type="BleuEvaluator", tokenize="char")).score(hyps, refs)
    assert zh["bleu"] == pytest.approx(
        sacrebleu.corpus_bleu(hyps, streams(refs), tokenize="char").score)
    assert zh["bleu"] != build_evaluator(dict(type="BleuEvaluator")).score(hyps, refs)["bleu"]


def test_bootstrap_interval_agrees_with_sacrebleus_own():
    hyps, refs = ntrex(400)
    ev = build_evaluator(dict(type="BleuEvaluator"))
    value = ev.aggregate([ev.score_sample(h, r) for h, r in zip(hyps, refs, strict=True)])
    ours = value.ci95[1] - value.ci95[0]
    # sacrebleu reports mean ± 1.96·sd of its own 1,000 resamples.
    theirs = 2 * sacrebleu.metrics.BLEU().corpus_score(hyps, streams(refs), n_bootstrap=1000)._ci
    assert value.ci95[0] < value.value < value.ci95[1]
    assert ours == pytest.approx(theirs, rel=0.2)
