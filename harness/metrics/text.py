"""SQuAD-style exact match and token F1, with the official SQuAD v1.1 normalization.

``normalize_answer`` is the official v1.1 evaluation script's: lower-case, drop ASCII
punctuation (``string.punctuation``, so '¿' or '—' stay), drop the articles a/an/the,
collapse whitespace. Scores are in percent; with several references a prediction gets
the best score over them, as the official script's ``metric_max_over_ground_truths``.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Iterable

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """The official SQuAD v1.1 normalization of an answer string."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, reference: str) -> float:
    """100 when the normalized strings are equal, else 0."""
    return 100.0 if normalize_answer(prediction) == normalize_answer(reference) else 0.0


def token_f1(prediction: str, reference: str) -> float:
    """Harmonic mean of token precision and recall after normalization, in percent.

    As in v1.1, no common token scores 0, also when both sides normalize to nothing.
    """
    pred = normalize_answer(prediction).split()
    ref = normalize_answer(reference).split()
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 100.0 * 2 * precision * recall / (precision + recall)


def best_over_references(metric: Callable[[str, str], float], prediction: str,
                         references: Iterable[str]) -> float:
    """The best ``metric(prediction, reference)`` over the references (0 with none)."""
    return max((metric(prediction, r) for r in references), default=0.0)
