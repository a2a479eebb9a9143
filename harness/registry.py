"""A tiny name → object registry, used for postprocessors and evaluators."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

from .lazy import load

# Registered objects are functions or classes: callables with a ``__name__``.
T = TypeVar("T", bound=Callable[..., Any])


class Registry(Generic[T]):
    """Objects registered under one or more names; duplicates raise.

    ``get`` accepts a registered name or the object itself (configs may say
    ``type='gsm8k'`` or ``type=gsm8k_postprocess``), so both spellings resolve.

    ``shipped`` declares harness's own names by the module that registers them
    (module → names). Such a module is imported on the first ``get`` of one of its
    names, so a run loads only the code its config names; until then its names count
    as registered all the same (``in``, ``names()``), and registering another object
    under one of them raises.
    """

    def __init__(self, kind: str, shipped: Mapping[str, Iterable[str]] | None = None) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        #: harness's own names → the module that registers each (``shipped``).
        self.shipped: dict[str, str] = {name: module for module, names in (shipped or {}).items()
                                        for name in names}

    def register(self, *names: str) -> Callable[[T], T]:
        """Decorator: register the object under ``names`` (default: its ``__name__``)."""

        def deco(obj: T) -> T:
            for name in names or (obj.__name__,):
                module = self.shipped.get(name)
                if module is not None and name not in self._items and module != obj.__module__:
                    self._load(name)  # the name's own object first: this one is a duplicate
                if name in self._items and self._items[name] is not obj:
                    raise ValueError(f"{self.kind} {name!r} is already registered")
                self._items[name] = obj
            return obj

        return deco

    def get(self, key: str | T) -> T:
        """Return the object for ``key``; a non-string key is returned as it is."""
        if not isinstance(key, str):
            return key
        if key not in self._items and key in self.shipped:
            self._load(key)
        try:
            return self._items[key]
        except KeyError:
            close = difflib.get_close_matches(key, self.names(), n=3)
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
            raise KeyError(f"unknown {self.kind} {key!r}{hint}") from None

    def names(self) -> list[str]:
        """All registered names, sorted."""
        return sorted({*self._items, *self.shipped})

    def __contains__(self, key: object) -> bool:
        return key in self._items or key in self.shipped

    def _load(self, name: str) -> None:
        module = self.shipped[name]
        load(module)
        if name not in self._items:
            raise RuntimeError(f"{module} does not register the {self.kind} {name!r} "
                               f"it is declared for")
