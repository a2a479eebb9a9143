"""Turning a ``dict(type=..., **kwargs)`` config into a per-sample postprocessor."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..config_keys import accepted_keywords, check_keys
from ._registry import POSTPROCESSORS


@dataclass(frozen=True)
class BoundPostprocessor:
    """A postprocessor with its config kwargs bound; call it on one sample's value.

    A list or tuple of candidate predictions is processed element-wise and gives a
    list, as OpenCompass does for replicated predictions. A function that declares a
    ``test_item`` parameter also receives the sample's dataset row (multiple-choice
    extraction uses it to map an option's text to its letter).
    """

    func: Callable[..., Any]
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    name: str = ""
    wants_item: bool = False

    def __call__(self, value: Any, test_item: Mapping[str, Any] | None = None) -> Any:
        """The postprocessed value (a list for a list/tuple of candidates)."""
        kwargs = {**self.kwargs, "test_item": test_item} if self.wants_item else self.kwargs
        if isinstance(value, (list, tuple)):
            return [self.func(item, **kwargs) for item in value]
        return self.func(value, **kwargs) if kwargs else self.func(value)


def _check_kwargs(func: Callable[..., Any], name: str, kwargs: Mapping[str, Any]) -> None:
    # A typo in a config must fail when the config is loaded, not after the model
    # has been paid for: check the kwargs against the signature now.
    check_keys(kwargs, accepted_keywords(func, skip=1), f"postprocessor {name!r}")
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):  # a builtin without a signature: cannot check
        return
    try:
        sig.bind(None, **kwargs)
    except TypeError as exc:
        raise TypeError(f"postprocessor {name!r}: {exc}") from None


def build_postprocessor(cfg: Any) -> BoundPostprocessor | None:
    """A per-sample callable from ``dict(type=name_or_callable, **kwargs)``; None for None.

    ``type`` is a registered name (``'first-option'`` or ``'first_option_postprocess'``)
    or the function itself; a bare name or callable is accepted as shorthand.
    Raises ``KeyError`` for an unknown name, ``ConfigError`` for a keyword the function
    does not accept (its field is the keyword, with a "did you mean"), and
    ``TypeError`` for a missing ``type``, a non-callable, or a missing argument.
    """
    if cfg is None:
        return None
    if isinstance(cfg, Mapping):
        if "type" not in cfg:
            raise TypeError(f"postprocessor config needs a 'type': {dict(cfg)!r}")
        kind, kwargs = cfg["type"], {k: v for k, v in cfg.items() if k != "type"}
    else:
        kind, kwargs = cfg, {}
    func = POSTPROCESSORS.get(kind)
    if not callable(func):
        raise TypeError(f"postprocessor type must be a name or a callable, not {kind!r}")
    name = kind if isinstance(kind, str) else getattr(func, "__name__", repr(func))
    _check_kwargs(func, name, kwargs)
    return BoundPostprocessor(func, dict(kwargs), name, _accepts(func, "test_item"))


def reference_form(pred_postprocessor: BoundPostprocessor | None) -> BoundPostprocessor | None:
    """The reference postprocessor a dataset without a ``dataset_postprocessor`` gets
    from its ``pred_postprocessor``: one that rewrites the answers it extracts (numbers
    in one canonical spelling, ``gsm8k``) declares the same rewriting of a reference as
    its ``reference_form``, so an exact match compares like with like. None otherwise."""
    if pred_postprocessor is None:
        return None
    form = getattr(pred_postprocessor.func, "reference_form", None)
    if form is None:
        return None
    return BoundPostprocessor(form, {}, f"{pred_postprocessor.name} (reference)")


def _accepts(func: Callable[..., Any], param: str) -> bool:
    try:
        return param in inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False


def is_extraction_failure(value: Any) -> bool:
    """True for what ``--dump-extract-rate`` counts as a failed extraction.

    None, '' or whitespace, an empty list, or a list whose items are all failures.
    Any other value (a number, a non-empty string, a dict) is an extracted answer.
    """
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, (list, tuple)):
        return all(is_extraction_failure(item) for item in value)
    return False
