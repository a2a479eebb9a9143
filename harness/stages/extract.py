"""What a dataset's postprocessors make of one reply: the pure part of scoring.

The same function runs on the event loop's thread and, for a backlog of replies, in a
worker process (``harness.stages.offload``), so both give the same verdicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..evaluators.base import BaseEvaluator
from ..postprocessors import is_extraction_failure
from ..postprocessors._text import reply_cut_off
from ..postprocessors.build import BoundPostprocessor


@dataclass(frozen=True, slots=True)
class Rules:
    """The parts of a dataset that score a reply by rule: what a worker process needs
    (a cascade's judge is not among them)."""

    dataset_postprocessor: Any
    pred_postprocessor: Any
    #: The evaluator's ``prediction_postprocessors()``.
    evaluator_postprocessors: tuple[Any, ...]
    #: The evaluator's ``rule_checker()``: whose ``score_sample`` gives the verdict.
    checker: BaseEvaluator | None

    @classmethod
    def of(cls, dataset_postprocessor: Any, pred_postprocessor: Any,
           evaluator: BaseEvaluator | None) -> Rules:
        """The rules of a dataset with these postprocessors and evaluator."""
        if evaluator is None:
            return cls(dataset_postprocessor, pred_postprocessor, (), None)
        return cls(dataset_postprocessor, pred_postprocessor,
                   evaluator.prediction_postprocessors(), evaluator.rule_checker())


@dataclass(frozen=True, slots=True)
class Extraction:
    """One reply and its reference after the dataset's postprocessors."""

    #: The reference after the ``dataset_postprocessor``.
    reference: Any
    #: The reply after the dataset's ``pred_postprocessor``: what a judge is shown.
    extracted: Any
    #: After the evaluator's postprocessors too: what the rule layer checks.
    prediction: Any

    @property
    def failed(self) -> bool:
        """Whether the rule layer has nothing to check (an extraction failure)."""
        return is_extraction_failure(self.prediction)


def extract(rules: Rules, text: str | None, finish_reason: str | None,
            row: Mapping[str, Any], reference: Any, *, rule: bool = True) -> Extraction:
    """The reference and the reply after ``rules``' postprocessors; with ``rule`` also
    the evaluator's (a judge-only dataset has no rule layer to extract for).

    A reply the server cut off for length concluded nothing: its extractors take only
    an answer it committed to (``reply_cut_off``).
    """
    if rules.dataset_postprocessor is not None:
        reference = apply(rules.dataset_postprocessor, reference, row)
    cut = finish_reason == "length"
    extracted: Any = text
    if rules.pred_postprocessor is not None:
        extracted = _extract(rules.pred_postprocessor, text, row, cut)
    prediction = extracted
    if rule:
        cut = cut and _ends_reply(extracted, text)
        for postprocessor in rules.evaluator_postprocessors:
            before, prediction = prediction, _extract(postprocessor, prediction, row, cut)
            cut = cut and _ends_reply(prediction, before)
    return Extraction(reference, extracted, prediction)


def apply(postprocessor: Any, value: Any, row: Mapping[str, Any]) -> Any:
    """Call a postprocessor; built ones also get the row (a plain function does not)."""
    if isinstance(postprocessor, BoundPostprocessor):
        return postprocessor(value, test_item=row)
    return postprocessor(value)


def _ends_reply(value: Any, reply: Any) -> bool:
    """Whether ``value``, what a postprocessor made of ``reply``, still ends where the
    reply ends: the reply with only its start cleaned away (``strip-think``), so the
    next extractor reads it as cut too. An answer extracted from it is not cut ("The
    answer is red green blue. Let" → "red green blue")."""
    return (isinstance(value, str) and isinstance(reply, str) and bool(value.strip())
            and reply.rstrip().endswith(value.rstrip()))


def _extract(postprocessor: Any, value: Any, row: Mapping[str, Any], cut: bool) -> Any:
    """``apply`` to a value that is a reply as the server sent it, ``cut`` when it
    stopped for length: the extractor then takes only an answer it committed to."""
    if not cut:
        return apply(postprocessor, value, row)
    with reply_cut_off(True):
        return apply(postprocessor, value, row)
