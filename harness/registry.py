"""A tiny name → object registry, used for postprocessors and evaluators."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any, Generic, TypeVar

# Registered objects are functions or classes: callables with a ``__name__``.
T = TypeVar("T", bound=Callable[..., Any])


class Registry(Generic[T]):
    """Objects registered under one or more names; duplicates raise.

    ``get`` accepts a registered name or the object itself (configs may say
    ``type='gsm8k'`` or ``type=gsm8k_postprocess``), so both spellings resolve.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, *names: str) -> Callable[[T], T]:
        """Decorator: register the object under ``names`` (default: its ``__name__``)."""

        def deco(obj: T) -> T:
            for name in names or (obj.__name__,):
                if name in self._items and self._items[name] is not obj:
                    raise ValueError(f"{self.kind} {name!r} is already registered")
                self._items[name] = obj
            return obj

        return deco

    def get(self, key: str | T) -> T:
        """Return the object for ``key``; a non-string key is returned as it is."""
        if not isinstance(key, str):
            return key
        try:
            return self._items[key]
        except KeyError:
            close = difflib.get_close_matches(key, self._items, n=3)
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
            raise KeyError(f"unknown {self.kind} {key!r}{hint}") from None

    def names(self) -> list[str]:
        """All registered names, sorted."""
        return sorted(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items
