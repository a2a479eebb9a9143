"""Where the LLM-judge evaluators were before they joined the others in
``harness.evaluators.llm``; kept so imports of this path go on working."""

from __future__ import annotations

from ..evaluators.llm import (
                              CascadeEvaluator,
                              GenericLLMEvaluator,
                              generic_llmjudge_postprocess,
                              judge_plan,
)

__all__ = ["CascadeEvaluator", "GenericLLMEvaluator", "generic_llmjudge_postprocess",
           "judge_plan"]
