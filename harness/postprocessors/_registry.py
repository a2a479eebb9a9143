"""The postprocessor registry, kept apart so every module can register into it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..registry import Registry

POSTPROCESSORS: Registry[Callable[..., Any]] = Registry("postprocessor", {
    "harness.postprocessors.bbh": ("bbh-mcq", "bbh_mcq_postprocess",
                                   "bbh-freeform", "bbh_freeform_postprocess"),
    "harness.postprocessors.code": ("code", "humaneval_postprocess_v2", "humaneval-v2",
                                    "mbpp-code"),
    "harness.postprocessors.general": ("general", "general_postprocess"),
    "harness.postprocessors.math": ("math-boxed", "boxed", "math_postprocess_v2"),
    "harness.postprocessors.numbers": ("gsm8k", "gsm8k_postprocess", "gsm8k-dataset",
                                       "gsm8k_dataset", "gsm8k_dataset_postprocess"),
    "harness.postprocessors.options": ("first-option", "first_option_postprocess",
                                       "last-option", "last_option_postprocess",
                                       "first-capital", "first_capital_postprocess"),
    "harness.postprocessors.think": ("strip-think", "extract-non-reasoning-content",
                                     "extract_non_reasoning_content"),
    "harness.postprocessors.xml": ("specific-xml-tag", "xml_tag_postprocessor"),
})
"""Every postprocessor under its hyphenated name and its OpenCompass function name.

harness's own are declared by module and imported on first use (see ``Registry``)."""
