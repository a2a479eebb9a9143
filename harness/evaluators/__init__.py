"""Evaluators and the registry that resolves ``evaluator=dict(type=...)``.

Rule evaluators (``rules``, ``math_verify``) and the LLM-judge evaluators (``llm``:
``GenericLLMEvaluator``, ``CascadeEvaluator``) all register in ``EVALUATORS``; the
judge stage's machinery (asking, caching, verdict parsing) is ``harness.judge``'s.

The evaluators are loaded on first use (PEP 562, and ``EVALUATORS.get``): a run that
scores by rules need not import the sandbox, the judge's prompt defusing or math-verify.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports
from .base import (
    EVALUATOR_KEYS,
    EVALUATORS,
    BaseEvaluator,
    SampleScoreEvaluator,
    as_detail,
    build_evaluator,
)

if TYPE_CHECKING:
    from .code import HumanEvalEvaluator, MBPPEvaluator
    from .llm import CascadeEvaluator, GenericLLMEvaluator, judge_plan
    from .math_verify import MATHEvaluator, MATHVerifyEvaluator
    from .rules import AccEvaluator, BBHEvaluator, BBHEvaluator_mcq, EMEvaluator
    from .text import (
        BleuEvaluator,
        NQEvaluator,
        RougeEvaluator,
        SquadEvaluator,
        TriviaQAEvaluator,
    )

#: Public name → the module defining it, imported on first use.
_EXPORTS = {
    "HumanEvalEvaluator": "code", "MBPPEvaluator": "code",
    "CascadeEvaluator": "llm", "GenericLLMEvaluator": "llm", "judge_plan": "llm",
    "MATHVerifyEvaluator": "math_verify", "MATHEvaluator": "math_verify",
    "AccEvaluator": "rules", "EMEvaluator": "rules", "BBHEvaluator": "rules",
    "BBHEvaluator_mcq": "rules",
    "BleuEvaluator": "text", "NQEvaluator": "text", "RougeEvaluator": "text",
    "SquadEvaluator": "text", "TriviaQAEvaluator": "text",
}

__all__ = ["EVALUATORS", "EVALUATOR_KEYS", "AccEvaluator", "BBHEvaluator", "BBHEvaluator_mcq",
           "BaseEvaluator", "BleuEvaluator", "CascadeEvaluator", "EMEvaluator",
           "GenericLLMEvaluator", "HumanEvalEvaluator", "MATHEvaluator", "MATHVerifyEvaluator",
           "MBPPEvaluator", "NQEvaluator", "RougeEvaluator", "SampleScoreEvaluator",
           "SquadEvaluator", "TriviaQAEvaluator", "as_detail", "build_evaluator",
           "judge_plan"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
