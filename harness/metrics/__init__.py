"""Metrics beyond accuracy: SQuAD EM/F1, BLEU and chrF (sacrebleu), ROUGE (rouge-score),
and their 95% intervals (Wilson, or a seeded bootstrap over samples; paired for two runs).

One concept per module: ``text`` (SQuAD normalization, EM, F1), ``bleu`` (sacrebleu
corpus statistics), ``rouge`` (rouge-score), ``statistic`` (how a metric is summed
and scored), ``intervals`` (bootstrap), ``value`` (the ``MetricValue`` record),
``aggregate`` (a run's details rows → its metrics), ``paired`` (two runs → differences).

Names are loaded on first use (PEP 562): the evaluator registry imports ``text``
at every start, and numpy only loads when a metric is aggregated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .statistic import ACCURACY, Statistic
    from .value import MetricValue

_EXPORTS = {"ACCURACY": "statistic", "Statistic": "statistic", "MetricValue": "value"}

__all__ = ["ACCURACY", "MetricValue", "Statistic"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
