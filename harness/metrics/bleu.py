"""BLEU and chrF from sacrebleu, as corpus statistics.

sacrebleu scores a corpus from sentence statistics summed over it (BLEU: hypothesis
and closest-reference lengths and n-gram matches/totals; chrF: character n-gram
hypothesis/reference/match counts). Each sample keeps its own statistics, computed by
sacrebleu's own segment code; the corpus score is sacrebleu's score of their sum,
which is exactly ``corpus_score`` on all outputs, never a mean of sentence scores.
Sentence scores (``sentence_score``'s, with BLEU's effective order) are kept for
reading only. A sample may have any number of references.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sacrebleu.metrics import BLEU, CHRF

from .statistic import Statistic


class SacreMetric:
    """One sacrebleu metric (``BLEU`` or ``CHRF``) scored from sentence statistics.

    ``corpus`` is configured like a corpus scorer, ``sentence`` like sacrebleu's
    ``sentence_score`` (for BLEU: effective order on). sacrebleu's private helpers
    ``_extract_corpus_statistics`` and ``_compute_score_from_stats`` are what its own
    significance tests use; tests check the result against ``corpus_score``.
    """

    def __init__(self, corpus: BLEU | CHRF, sentence: BLEU | CHRF) -> None:
        self.corpus = corpus
        self.sentence = sentence

    def stats(self, hypothesis: str, references: Sequence[str]) -> list[int]:
        """The sentence statistics of one hypothesis against its references."""
        refs = [[r] for r in references] or [[""]]
        return [int(x) for x in self.corpus._extract_corpus_statistics([hypothesis], refs)[0]]

    def sentence_score(self, stats: Sequence[float]) -> float:
        """The sentence-level score of one sample's statistics."""
        return float(self.sentence._compute_score_from_stats(
            [int(round(x)) for x in stats]).score)

    def corpus_scores(self, sums: np.ndarray) -> np.ndarray:
        """The corpus score of each row of summed statistics (sacrebleu's own formula)."""
        return np.array([self.corpus._compute_score_from_stats([int(round(x)) for x in row])
                         .score for row in sums], dtype=np.float64)

    def signature(self) -> str:
        """sacrebleu's signature of the corpus metric (tokenizer, smoothing, version)."""
        return str(self.corpus.get_signature())


def bleu(tokenize: str | None = None, lowercase: bool = False) -> SacreMetric:
    """sacrebleu BLEU (default ``13a`` tokenizer, ``exp`` smoothing, 4-grams)."""
    kwargs: dict[str, Any] = {"tokenize": tokenize, "lowercase": lowercase}
    return SacreMetric(BLEU(**kwargs), BLEU(effective_order=True, **kwargs))


def chrf(word_order: int = 0, lowercase: bool = False) -> SacreMetric:
    """sacrebleu chrF (character 6-grams, β = 2; ``word_order=2`` gives chrF++)."""
    kwargs: dict[str, Any] = {"word_order": word_order, "lowercase": lowercase}
    return SacreMetric(CHRF(**kwargs), CHRF(**kwargs))


def corpus_statistic(name: str, key: str, metric: SacreMetric) -> Statistic:
    """The ``corpus`` statistic that scores ``metric`` from per-sample ``key`` fields."""
    return Statistic(name, key, "corpus", metric.corpus_scores)
