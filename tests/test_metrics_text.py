"""SQuAD EM/F1 and the QA evaluators against the official SQuAD v1.1 evaluation."""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from pathlib import Path

import pytest

from harness.evaluators import build_evaluator
from harness.metrics.text import exact_match, normalize_answer, token_f1

NQ = Path(__file__).resolve().parent.parent / "datasets" / "data" / "nq_open" / "NQ-open.dev.jsonl"


# The oracle: the official SQuAD v1.1 evaluate-v1.1.py functions, as that script writes them.
def official_normalize(s):
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def official_f1(prediction, ground_truth):
    prediction_tokens = official_normalize(prediction).split()
    ground_truth_tokens = official_normalize(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def official_em(prediction, ground_truth):
    return official_normalize(prediction) == official_normalize(ground_truth)


def official_evaluate(predictions, references):
    em = f1 = 0.0
    for pred, refs in zip(predictions, references, strict=True):
        em += max(official_em(pred, r) for r in refs)
        f1 += max(official_f1(pred, r) for r in refs)
    return 100.0 * em / len(predictions), 100.0 * f1 / len(predictions)


FIXED = [  # (prediction, references): unicode, empty predictions, several references
    ("The Eiffel Tower.", ["Eiffel Tower"]),
    ("", ["Paris"]),
    ("", [""]),
    ("Zürich, Switzerland", ["zürich", "Zurich"]),
    ("¿Qué? — Größe", ["qué größe"]),
    ("an apple a day", ["apple", "day", "an apple"]),
    ("14 December 1972", ["14 December 1972 UTC", "December 1972"]),
    ("Ｐａｒｉｓ", ["Paris"]),
    ("the the the", ["the"]),
]


def test_normalization_is_the_official_one():
    for pred, refs in FIXED:
        for text in (pred, *refs):
            assert normalize_answer(text) == official_normalize(text)
    # ASCII punctuation only: '¿' and '—' stay, as in the official script.
    assert normalize_answer("¿Qué? — Größe") == "¿qué — größe"


def test_squad_evaluator_equals_official_on_fixed_outputs():
    preds, refs = [p for p, _ in FIXED], [r for _, r in FIXED]
    result = build_evaluator(dict(type="SquadEvaluator")).score(preds, refs)
    em, f1 = official_evaluate(preds, refs)
    assert result["em"] == pytest.approx(em) and result["f1"] == pytest.approx(f1)
    # Hand-checked: an empty prediction scores 0 against 'Paris'; both empty: EM 1, F1 0.
    details = result["details"]
    assert (details[1]["em"], details[1]["f1"]) == (0.0, 0.0)
    assert (details[2]["em"], details[2]["f1"]) == (100.0, 0.0)
    # Best over references: 'December 1972' gives P 2/3, R 1, F1 0.8; the first
    # reference gives P 1, R 3/4, F1 6/7 ≈ 0.857, which wins.
    assert details[6]["f1"] == pytest.approx(100 * 6 / 7)


def test_nq_evaluator_equals_official_on_real_answers():
    rows = [json.loads(line) for line in NQ.read_text(encoding="utf-8").splitlines()[:300]]
    # Predictions that hit, half-hit and miss: an answer, its first word, another row's.
    preds = [r["answer"][0] if i % 3 == 0 else r["answer"][0].split()[0] if i % 3 == 1
             else rows[i - 1]["answer"][-1] for i, r in enumerate(rows)]
    refs = [r["answer"] for r in rows]
    result = build_evaluator(dict(type="NQEvaluator")).score(preds, refs)
    em, f1 = official_evaluate(preds, refs)
    assert result["em"] == pytest.approx(em) and result["f1"] == pytest.approx(f1)
    assert 20 < em < 80 and f1 > em  # the three kinds of prediction are all there


def test_nq_evaluator_reads_the_answer_as_opencompass():
    ev = build_evaluator(dict(type="NQEvaluator"))
    detail = ev.score_sample("I think the answer is Bobby Scott.\nQ: who else?", ["Bobby Scott"])
    assert detail["em"] == 100.0 and detail["correct"] is True and detail["score"] == 100.0
    # Containment is OpenCompass's lenient score: a longer reply contains the answer.
    long = ev.score_sample("It was written by Bobby Scott in 1969", ["Bobby Scott"])
    assert long["contains"] is True and long["em"] == 0.0 and 0 < long["f1"] < 100
    # An empty reference is in every string, but must not make every reply right.
    assert ev.score_sample("anything", ["", "!!"])["contains"] is False


def test_token_f1_hand_checked():
    # pred tokens {cat, sat}, ref {cat, sat, on, mat}: P = 1, R = 1/2, F1 = 2/3.
    assert token_f1("The cat sat", "the cat sat on the mat") == pytest.approx(200 / 3)
    assert exact_match("The  Cat!", "cat") == 100.0
