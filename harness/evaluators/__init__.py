"""Rule evaluators and the registry that resolves ``evaluator=dict(type=...)``."""

from __future__ import annotations

import inspect
from typing import Any, Mapping

from ..config_keys import construct
from .base import EVALUATOR_KEYS, EVALUATORS, BaseEvaluator, SampleScoreEvaluator, as_detail
from .math_verify import MATHVerifyEvaluator
from .rules import AccEvaluator, EMEvaluator
from .text import BleuEvaluator, NQEvaluator, RougeEvaluator, SquadEvaluator

# Registers GenericLLMEvaluator and CascadeEvaluator by name; they live with the judge.
from ..judge import evaluators as _judge_evaluators  # noqa: E402,F401

__all__ = ["EVALUATORS", "AccEvaluator", "BaseEvaluator", "BleuEvaluator", "EMEvaluator",
           "MATHVerifyEvaluator", "NQEvaluator", "RougeEvaluator", "SampleScoreEvaluator",
           "SquadEvaluator", "as_detail", "build_evaluator"]


def build_evaluator(cfg: Mapping[str, Any] | BaseEvaluator) -> BaseEvaluator:
    """An evaluator instance from ``dict(type=Class_or_name_or_function, **kwargs)``.

    A plain function as ``type`` is a ``sample_score_fn`` and is wrapped in
    ``SampleScoreEvaluator``; the keys other than ``timeout`` and ``pred_postprocessor``
    go to the function. Unknown names raise ``KeyError``, a key the class or function
    does not accept ``ConfigError`` (field: the key), other bad arguments ``TypeError``
    or ``ValueError``: all at config time, before any request is sent.
    """
    if isinstance(cfg, BaseEvaluator):
        return cfg
    if not isinstance(cfg, Mapping) or "type" not in cfg:
        raise TypeError("evaluator must be dict(type=..., ...)")
    target = EVALUATORS.get(cfg["type"])
    if inspect.isclass(target):
        try:
            return construct({**cfg, "type": target})
        except TypeError as exc:
            raise TypeError(f"{target.__name__}: {exc}") from exc
    if callable(target):
        base = {k: v for k, v in cfg.items() if k in EVALUATOR_KEYS}
        fn_kwargs = {k: v for k, v in cfg.items() if k not in (*EVALUATOR_KEYS, "type")}
        return SampleScoreEvaluator(sample_score_fn=target, fn_kwargs=fn_kwargs, **base)
    raise TypeError(f"evaluator type {cfg['type']!r} is neither a class nor a function")
