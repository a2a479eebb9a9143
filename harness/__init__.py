"""harness: an asynchronous LLM evaluation harness.

Stream a dataset through concurrent calls to any OpenAI-compatible endpoint, extract
answers, score them with rules, and keep every prediction in SQLite so runs resume and
re-score for free. Config names follow OpenCompass, so its configs port by changing
imports::

    from harness import CustomDataset, RawPromptTemplate, ZeroRetriever, GenInferencer
    from harness import MATHVerifyEvaluator, gsm8k_postprocess

Public names are loaded on first use (PEP 562), which keeps ``python -m harness --help``
fast: the OpenAI SDK and sympy are only imported when a run needs them.
"""

from __future__ import annotations

from .lazy import lazy_exports

#: Public name → module that defines it.
_EXPORTS: dict[str, str] = {
    # async API
    "evaluate": "api", "open_run": "api", "Run": "api", "RunReport": "api",
    "RunOptions": "options",
    "ModelOverrides": "models",
    # config vocabulary
    "CustomDataset": "dataset", "RawPromptTemplate": "prompt", "PromptTemplate": "prompt",
    "ZeroRetriever": "config", "GenInferencer": "config", "PPLInferencer": "ppl",
    "OpenAISDK": "config", "OpenAI": "config", "load_config": "config",
    # evaluators
    "AccEvaluator": "evaluators", "EMEvaluator": "evaluators",
    "MATHVerifyEvaluator": "evaluators", "SampleScoreEvaluator": "evaluators",
    "BleuEvaluator": "evaluators", "RougeEvaluator": "evaluators",
    "SquadEvaluator": "evaluators", "NQEvaluator": "evaluators",
    "HumanEvalEvaluator": "evaluators", "MBPPEvaluator": "evaluators",
    # OpenCompass's names for them
    "MATHEvaluator": "evaluators", "BBHEvaluator": "evaluators",
    "BBHEvaluator_mcq": "evaluators", "TriviaQAEvaluator": "evaluators",
    "BaseEvaluator": "evaluators", "EVALUATORS": "evaluators",
    "GenericLLMEvaluator": "evaluators", "CascadeEvaluator": "evaluators",
    "generic_llmjudge_postprocess": "evaluators.llm", "judge_template": "judge.templates",
    "parse_verdict": "judge.verdict",
    # postprocessors
    "POSTPROCESSORS": "postprocessors", "build_postprocessor": "postprocessors",
    "first_option_postprocess": "postprocessors", "last_option_postprocess": "postprocessors",
    "first_capital_postprocess": "postprocessors", "bbh_mcq_postprocess": "postprocessors",
    "bbh_freeform_postprocess": "postprocessors", "gsm8k_postprocess": "postprocessors",
    "gsm8k_dataset_postprocess": "postprocessors", "math_postprocess_v2": "postprocessors",
    "extract_non_reasoning_content": "postprocessors",
    "humaneval_postprocess_v2": "postprocessors",
    "xml_tag_postprocessor": "postprocessors", "general_postprocess": "postprocessors",
    # records and errors
    "SampleResult": "records", "ModelSpec": "records",
    "HarnessError": "errors", "ConfigError": "errors", "DatasetError": "errors",
    "ModelCallError": "errors", "PermanentModelError": "errors", "StoreError": "errors",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
