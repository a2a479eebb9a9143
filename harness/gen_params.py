"""Generation parameters are checked when a config is loaded, before any request.

They are sent in every request body as JSON. A value JSON cannot carry (``nan``, a set,
bytes) or of the wrong type for a key every server reads the same way
(``temperature='hot'``, ``stop=5``) would otherwise fail sample after sample, each
failure advising to run again. Keys harness does not know (``extra_body``'s
server-specific fields) are only checked to be JSON.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

from .errors import ConfigError


def _number(low: float | None = None, high: float | None = None) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return "a number"
        if not math.isfinite(value):
            return "a finite number"
        if (low is not None and value < low) or (high is not None and value > high):
            return f"a number from {low:g} to {high:g}" if high is not None \
                else f"a number >= {low:g}"
        return None

    return check


def _integer(low: int | None = None) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int):
            return "a whole number"
        if low is not None and value < low:
            return f"a whole number >= {low}"
        return None

    return check


def _stop(value: Any) -> str | None:
    values = [value] if isinstance(value, str) else value
    if isinstance(values, (list, tuple)) and all(isinstance(v, str) and v for v in values):
        return None
    return "a non-empty string or a list of them"


#: What each well-known key must be (``None``: fine; else what is allowed).
_RULES: dict[str, Callable[[Any], str | None]] = {
    "temperature": _number(0),
    "top_p": _number(0, 1),
    "min_p": _number(0, 1),
    "presence_penalty": _number(),
    "frequency_penalty": _number(),
    "repetition_penalty": _number(0),
    "top_k": _integer(),
    "seed": _integer(),
    "max_tokens": _integer(1),
    "max_completion_tokens": _integer(1),
    "n": _integer(1),
    "stop": _stop,
}


def check_gen_params(params: Mapping[str, Any], prefix: str | None = None,
                     given_as: Mapping[str, str] | None = None) -> None:
    """Raise ``ConfigError`` for the first value of ``params`` that cannot be sent: not
    JSON (``nan``, a set, bytes), or of the wrong type or range for a well-known key.
    The error's field is the key (or the name the config gave it, from ``given_as``:
    ``stopping_criteria`` is sent as ``stop``), after ``prefix`` (``'extra_body'``)."""
    for key, value in params.items():
        name = (given_as or {}).get(key, str(key))
        field = f"{prefix}.{name}" if prefix else name
        if not isinstance(key, str):
            raise ConfigError(f"a parameter name must be text, not {key!r}", field=field)
        rule = _RULES.get(key)
        expected = rule(value) if rule else None
        if expected:
            raise ConfigError(f"must be {expected}, not {value!r}", field=field)
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            raise ConfigError(f"{value!r} cannot be sent as JSON (finite numbers, text, "
                              "true/false, null, lists and dicts of them)",
                              field=field) from None
