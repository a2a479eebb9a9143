"""Metrics beyond accuracy: SQuAD EM/F1, BLEU and chrF (sacrebleu), ROUGE (rouge-score),
and their 95% intervals (Wilson, or a seeded bootstrap over samples; paired for two runs).

One concept per module: ``text`` (SQuAD normalization, EM, F1), ``bleu`` (sacrebleu
corpus statistics), ``rouge`` (rouge-score), ``statistic`` (how a metric is summed
and scored), ``intervals`` (bootstrap), ``value`` (the ``MetricValue`` record),
``aggregate`` (a run's details rows → its metrics), ``paired`` (two runs → differences).
"""

from .statistic import ACCURACY, Statistic
from .value import MetricValue

__all__ = ["ACCURACY", "MetricValue", "Statistic"]
