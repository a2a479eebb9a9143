"""The public API of ``harness`` is pinned: adding, removing or renaming a name is a
decision made here, on purpose, not a side effect of a refactor."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

import harness

#: What ``from harness import ...`` promises: configs ported from OpenCompass and users'
#: scripts import these names. Change this list only together with the README.
PUBLIC_API = [
    # async API
    "evaluate", "open_run", "Run", "RunReport", "RunOptions", "ModelOverrides",
    # config vocabulary
    "CustomDataset", "RawPromptTemplate", "PromptTemplate", "ZeroRetriever", "GenInferencer",
    "PPLInferencer",
    "OpenAISDK", "OpenAI", "load_config",
    # evaluators
    "AccEvaluator", "EMEvaluator", "MATHVerifyEvaluator", "SampleScoreEvaluator",
    "HumanEvalEvaluator", "MBPPEvaluator", "BleuEvaluator", "RougeEvaluator", "SquadEvaluator",
    "NQEvaluator",
    "BaseEvaluator", "EVALUATORS", "GenericLLMEvaluator", "CascadeEvaluator",
    # OpenCompass's names for evaluators above, so its configs port by their imports
    "MATHEvaluator", "BBHEvaluator", "BBHEvaluator_mcq", "TriviaQAEvaluator",
    "generic_llmjudge_postprocess", "judge_template", "parse_verdict",
    # postprocessors
    "POSTPROCESSORS", "build_postprocessor", "humaneval_postprocess_v2", "first_option_postprocess",
    "last_option_postprocess", "first_capital_postprocess", "bbh_mcq_postprocess",
    "bbh_freeform_postprocess", "gsm8k_postprocess", "gsm8k_dataset_postprocess",
    "math_postprocess_v2", "extract_non_reasoning_content", "xml_tag_postprocessor",
    "general_postprocess",
    # records and errors
    "SampleResult", "ModelSpec", "HarnessError", "ConfigError", "DatasetError",
    "ModelCallError", "PermanentModelError", "StoreError",
]


def test_all_is_exactly_the_pinned_api():
    assert len(PUBLIC_API) == len(set(PUBLIC_API))
    assert sorted(harness.__all__) == sorted(PUBLIC_API)


@pytest.mark.parametrize("name", PUBLIC_API)
def test_public_name_is_importable_and_documented(name):
    value = getattr(harness, name)
    assert name in dir(harness)
    # A registry instance (EVALUATORS, POSTPROCESSORS) is documented by its class.
    assert (inspect.getdoc(value) or "").strip(), f"harness.{name} has no docstring"


def test_star_import_gives_the_public_api_in_a_fresh_interpreter():
    # Fresh, so names loaded lazily by earlier tests cannot hide a broken __getattr__.
    code = ("from harness import *\nimport harness\n"
            "missing = [n for n in harness.__all__ if n not in globals()]\n"
            "assert not missing, missing")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'evaluatee'"):
        _ = harness.evaluatee
