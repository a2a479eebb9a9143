"""RougeEvaluator equals rouge-score's own scores, averaged over samples."""

from __future__ import annotations

import pytest
from rouge_score import rouge_scorer

from harness.evaluators import build_evaluator

PREDS = ["the cat sat on the mat", "", "police killed the gunman",
         "Größere Häuser kosten mehr", "a b c d e f"]
REFS = [["the cat was on the mat"], ["nothing here"],
        ["the gunman was shot dead by police", "police kill the gunman"],
        ["Größere Häuser kosten mehr Geld"], ["f e d c b a", "a b c"]]


@pytest.mark.parametrize("stem", [False, True])
def test_rouge_equals_rouge_score_mean(stem):
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=stem)
    result = build_evaluator(dict(type="RougeEvaluator", use_stemmer=stem)).score(PREDS, REFS)
    for name in ("rouge1", "rouge2", "rougeL"):
        expected = [scorer.score_multi(r, p)[name].fmeasure for p, r in zip(PREDS, REFS, strict=True)]
        assert result[name] == pytest.approx(100 * sum(expected) / len(expected))
        assert [d[name] for d in result["details"]] == pytest.approx(
            [100 * e for e in expected])
    # Several references: the best one counts (the second, for the gunman sentence).
    assert result["details"][2]["rouge1"] > 0.9 * 100 * 3 / 4
    assert result["details"][1]["rouge1"] == 0.0  # empty prediction


def test_rouge_interval_brackets_the_mean():
    ev = build_evaluator(dict(type="RougeEvaluator"))
    value = ev.aggregate([ev.score_sample(p, r) for p, r in zip(PREDS * 20, REFS * 20, strict=True)])
    assert value.name == "rouge1" and value.ci95[0] < value.value < value.ci95[1]
