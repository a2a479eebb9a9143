"""``Statistic``: how one metric is computed from the per-sample details.

Three kinds cover every metric here:

* ``proportion``: a 0/1 judgement per sample (accuracy, exact match); the value is the
  percentage of successes and its interval is Wilson's (a closed form; with replicas,
  at the samples' effective size, ``results.proportion_interval``);
* ``mean``: a per-sample score averaged over samples (token F1, ROUGE F-measures, as
  rouge-score users average them); percentile bootstrap interval;
* ``corpus``: per-sample sufficient statistics summed over the corpus, then scored
  (BLEU's and chrF's n-gram counts, scored by sacrebleu itself); bootstrap interval.

Each kind turns a detail row into a row of numbers whose column sums determine the
metric (a mean is ``[value, 1]``), so samples of one cluster (the replicas of one
question) add up into one row and the bootstrap resamples clusters, not replicas.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .intervals import RESAMPLES, SEED, ScoreFn, bootstrap_interval, ratio_of_sums

StatisticKind = Literal["proportion", "mean", "corpus"]


@dataclass(frozen=True)
class Statistic:
    """One metric: its name, the detail field it reads, its kind and corpus scorer.

    ``corpus_score`` (``corpus`` kind only) maps a ``(B, k)`` array of summed
    statistics to ``B`` scores.
    """

    name: str
    key: str
    kind: StatisticKind
    corpus_score: ScoreFn | None = None

    def __post_init__(self) -> None:
        if (self.kind == "corpus") != (self.corpus_score is not None):
            raise ValueError(f"{self.name}: a corpus metric, and only one, has corpus_score")

    def row(self, detail: Mapping[str, Any]) -> list[float]:
        """The numbers this sample adds to the corpus sums."""
        value = detail[self.key]
        if self.kind == "proportion":
            return [100.0 if value else 0.0, 1.0]
        if self.kind == "mean":
            return [float(value), 1.0]
        return [float(x) for x in value]

    def scores(self, sums: np.ndarray) -> np.ndarray:
        """The metric for each row of summed statistics."""
        if self.corpus_score is not None:
            return self.corpus_score(sums)
        return ratio_of_sums(sums)

    def scores_of(self, rows: Sequence[Sequence[float]] | np.ndarray) -> float:
        """The value over ``rows`` (one per sample or cluster), without an interval."""
        return float(self.scores(np.asarray(rows, dtype=np.float64)
                                 .sum(axis=0, keepdims=True))[0])

    def measure(self, rows: Sequence[Sequence[float]], resamples: int = RESAMPLES,
                seed: int = SEED) -> tuple[float | None, tuple[float, float] | None]:
        """The value over ``rows`` (one per sample or cluster) and its 95% interval."""
        if not rows:
            return None, None
        stats = np.asarray(rows, dtype=np.float64)
        value = self.scores_of(stats)
        if self.kind == "proportion":
            from ..results import proportion_interval

            # A cluster's row sums its replicas: 100 × successes, replicas.
            bounds = proportion_interval(list(stats[:, 0] / 100 / stats[:, 1]),
                                         float(stats[:, 1].sum()))
            assert bounds is not None
            return value, (100 * bounds[0], 100 * bounds[1])
        if len(stats) < 2:
            return value, None
        return value, bootstrap_interval(stats, self.scores, resamples, seed)


#: The default metric of every evaluator: accuracy over ``correct``.
ACCURACY = Statistic("accuracy", "correct", "proportion")
