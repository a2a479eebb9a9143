"""Cheap rule evaluators: option/label accuracy and exact match."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any

from .base import EVALUATORS, BaseEvaluator


def _text(value: Any) -> str:
    # NFKC folds full-width letters and digits so 'Ｂ' equals 'B'.
    return unicodedata.normalize("NFKC", "" if value is None else str(value)).strip()


def _references(reference: Any) -> list[Any]:
    return list(reference) if isinstance(reference, (list, tuple)) else [reference]


@EVALUATORS.register("AccEvaluator", "BBHEvaluator_mcq", "BBHEvaluator")
class AccEvaluator(BaseEvaluator):
    """Accuracy over labels: the normalized prediction equals the (normalized) reference.

    Comparison is exact after NFKC and whitespace trimming; option letters and labels
    are expected to be normalized by the postprocessors on both sides. A list of
    references accepts any of them.
    """

    def score_sample(self, prediction: Any, reference: Any,
                     test_item: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``correct`` when the prediction matches a reference exactly."""
        pred = _text(prediction)
        correct = bool(pred) and any(pred == _text(r) for r in _references(reference))
        return {"pred": prediction, "answer": reference, "correct": correct}


@EVALUATORS.register("EMEvaluator")
class EMEvaluator(BaseEvaluator):
    """Exact match after ``general_postprocess`` normalization of both sides.

    Lower-casing, punctuation, articles and whitespace do not count; a list of references
    accepts any of them.
    """

    def score_sample(self, prediction: Any, reference: Any,
                     test_item: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``correct`` when the normalized prediction equals a normalized reference."""
        from ..postprocessors import general_postprocess

        pred = general_postprocess(_text(prediction))
        refs = [general_postprocess(_text(r)) for r in _references(reference)]
        correct = bool(pred) and pred in refs
        return {"pred": prediction, "answer": reference, "correct": correct}

#: OpenCompass's names for it, so a config that imports them ports.
BBHEvaluator = AccEvaluator
BBHEvaluator_mcq = AccEvaluator
