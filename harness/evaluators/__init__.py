"""Rule evaluators and the registry that resolves ``evaluator=dict(type=...)``."""

from __future__ import annotations

import inspect
from typing import Any, Mapping

from .base import EVALUATORS, BaseEvaluator, SampleScoreEvaluator, as_detail
from .math_verify import MATHVerifyEvaluator
from .rules import AccEvaluator, EMEvaluator

# Registers GenericLLMEvaluator and CascadeEvaluator by name; they live with the judge.
from ..judge import evaluators as _judge_evaluators  # noqa: E402,F401

__all__ = ["EVALUATORS", "AccEvaluator", "BaseEvaluator", "EMEvaluator",
           "MATHVerifyEvaluator", "SampleScoreEvaluator", "as_detail", "build_evaluator"]


def build_evaluator(cfg: Mapping[str, Any] | BaseEvaluator) -> BaseEvaluator:
    """An evaluator instance from ``dict(type=Class_or_name_or_function, **kwargs)``.

    A plain function as ``type`` is a ``sample_score_fn`` and is wrapped in
    ``SampleScoreEvaluator``. Unknown names and bad kwargs raise ``TypeError``/``KeyError``
    here, at config time, before any request is sent.
    """
    if isinstance(cfg, BaseEvaluator):
        return cfg
    if not isinstance(cfg, Mapping) or "type" not in cfg:
        raise TypeError("evaluator must be dict(type=..., ...)")
    kwargs = {k: v for k, v in cfg.items() if k != "type"}
    target = EVALUATORS.get(cfg["type"])
    if inspect.isclass(target):
        try:
            return target(**kwargs)
        except TypeError as exc:
            raise TypeError(f"{target.__name__}: {exc}") from exc
    if callable(target):
        return SampleScoreEvaluator(sample_score_fn=target, **kwargs)
    raise TypeError(f"evaluator type {cfg['type']!r} is neither a class nor a function")
