"""A package's public names loaded on first use (PEP 562): a start imports only what it
uses (``python -m harness --help`` no model client, a rule-scored run no sandbox)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any


def load(module: str) -> ModuleType:
    """Import ``module`` (an absolute name) and return it.

    Through ``__import__`` rather than ``importlib.import_module``, whose imports
    ``python -X importtime`` leaves out (``bench/bench_startup.py`` reads that list).
    """
    __import__(module)
    return sys.modules[module]


def lazy_exports(package: str, exports: Mapping[str, str]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module ``__getattr__`` and ``__dir__`` for ``package``. ``__getattr__`` imports a
    name of ``exports`` (name → module, relative to ``package``) from its module on
    first use and keeps it on the package, so later uses are plain attributes; any
    other name is an ``AttributeError``. ``__dir__`` lists the package's names, loaded
    or not."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(load(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
