"""ROUGE-1/2/L F-measures from Google's rouge-score, per sample.

With several references a sample gets rouge-score's ``score_multi`` (the reference
with the best F-measure, per ROUGE type). The aggregate is the mean of the per-sample
F-measures, as rouge-score users report it (its ``BootstrapAggregator`` reports the
median of resampled means, which converges to the same mean). Values are in percent,
as OpenCompass reports them. rouge-score's default tokenizer keeps only ASCII letters
and digits (it was written for English): text in other scripts scores 0.
"""

from __future__ import annotations

from collections.abc import Sequence

from rouge_score import rouge_scorer

#: The ROUGE types scored, in reporting order.
ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")


class Rouge:
    """A rouge-score scorer for ``ROUGE_TYPES``; ``use_stemmer`` as in rouge-score."""

    def __init__(self, use_stemmer: bool = False) -> None:
        self.scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=use_stemmer)

    def score(self, prediction: str, references: Sequence[str]) -> dict[str, float]:
        """Per-type F-measure (percent) of one prediction, best over the references."""
        scores = self.scorer.score_multi(list(references) or [""], prediction)
        return {name: 100.0 * scores[name].fmeasure for name in ROUGE_TYPES}
