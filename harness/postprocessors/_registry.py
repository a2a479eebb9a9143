"""The postprocessor registry, kept apart so every module can register into it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..registry import Registry

POSTPROCESSORS: Registry[Callable[..., Any]] = Registry("postprocessor")
"""Every postprocessor under its hyphenated name and its OpenCompass function name."""
