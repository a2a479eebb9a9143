"""Evaluators and the registry that resolves ``evaluator=dict(type=...)``.

Rule evaluators (``rules``, ``math_verify``) and the LLM-judge evaluators (``llm``:
``GenericLLMEvaluator``, ``CascadeEvaluator``) all register in ``EVALUATORS``; the
judge stage's machinery (asking, caching, verdict parsing) is ``harness.judge``'s.
"""

from __future__ import annotations

from .base import (
    EVALUATOR_KEYS,
    EVALUATORS,
    BaseEvaluator,
    SampleScoreEvaluator,
    as_detail,
    build_evaluator,
)
from .code import HumanEvalEvaluator, MBPPEvaluator
from .llm import CascadeEvaluator, GenericLLMEvaluator, judge_plan
from .math_verify import MATHVerifyEvaluator
from .rules import AccEvaluator, EMEvaluator
from .text import BleuEvaluator, NQEvaluator, RougeEvaluator, SquadEvaluator

__all__ = ["EVALUATORS", "EVALUATOR_KEYS", "AccEvaluator", "BaseEvaluator", "BleuEvaluator",
           "CascadeEvaluator", "EMEvaluator", "GenericLLMEvaluator", "HumanEvalEvaluator",
           "MATHVerifyEvaluator", "MBPPEvaluator", "NQEvaluator", "RougeEvaluator",
           "SampleScoreEvaluator", "SquadEvaluator", "as_detail", "build_evaluator",
           "judge_plan"]
