"""Answer extraction: turn a raw reply (or a raw gold) into one normalized answer.

Every postprocessor takes one value as its first argument, extra settings as keyword
arguments, never raises on odd input, and returns '' when there is no answer (so the
extract rate counts it). Configs name them as in OpenCompass::

    pred_postprocessor=dict(type='first-option', options='ABCD')
    pred_postprocessor=dict(type=first_option_postprocess, options='ABCD')

Modules: :mod:`.options` (option letters), :mod:`.numbers` (GSM8K), :mod:`.math`
(``\\boxed``), :mod:`.bbh`, :mod:`.code` (programs), :mod:`.general`, :mod:`.xml`,
:mod:`.think`; the rules they share (``<think>`` removal, Unicode folding, grader appeals,
self-corrections and hedges) live in :mod:`._text` and :mod:`._commit`, finding
``\\boxed{…}`` in :mod:`._boxed`.

The postprocessors are loaded on first use (PEP 562, and ``POSTPROCESSORS.get``): their
patterns take tens of milliseconds to compile, and a run needs only those it names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports
from ._registry import POSTPROCESSORS
from .build import BoundPostprocessor, build_postprocessor, is_extraction_failure

if TYPE_CHECKING:
    from .bbh import bbh_freeform_postprocess, bbh_mcq_postprocess
    from .code import humaneval_postprocess_v2
    from .general import general_postprocess
    from .math import extract_boxed_answer, last_boxed_only_string, math_postprocess_v2
    from .numbers import gsm8k_dataset_postprocess, gsm8k_postprocess
    from .options import (
        first_capital_postprocess,
        first_option_postprocess,
        last_option_postprocess,
    )
    from .think import extract_non_reasoning_content
    from .xml import xml_tag_postprocessor

#: Public name → the module defining it, imported on first use.
_EXPORTS = {
    "bbh_freeform_postprocess": "bbh", "bbh_mcq_postprocess": "bbh",
    "humaneval_postprocess_v2": "code", "general_postprocess": "general",
    "extract_boxed_answer": "math", "last_boxed_only_string": "math",
    "math_postprocess_v2": "math",
    "gsm8k_dataset_postprocess": "numbers", "gsm8k_postprocess": "numbers",
    "first_capital_postprocess": "options", "first_option_postprocess": "options",
    "last_option_postprocess": "options",
    "extract_non_reasoning_content": "think", "xml_tag_postprocessor": "xml",
}

__all__ = [
    "POSTPROCESSORS",
    "BoundPostprocessor",
    "bbh_freeform_postprocess",
    "bbh_mcq_postprocess",
    "build_postprocessor",
    "extract_boxed_answer",
    "extract_non_reasoning_content",
    "first_capital_postprocess",
    "first_option_postprocess",
    "general_postprocess",
    "gsm8k_dataset_postprocess",
    "gsm8k_postprocess",
    "humaneval_postprocess_v2",
    "is_extraction_failure",
    "last_boxed_only_string",
    "last_option_postprocess",
    "math_postprocess_v2",
    "xml_tag_postprocessor",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
