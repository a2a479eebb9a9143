"""Module-level patterns compiled on first use.

The answer extractors hold over a hundred patterns, and compiling them at import took a
noticeable share of a rerun that is served from the store and extracts nothing (see
``bench/README.md``). ``compile_lazily`` returns a stand-in that compiles its pattern
the first time any attribute is asked for. Then, so that extraction pays nothing for the
delay, the compiled pattern takes the stand-in's place in the module that made it (its
own uses are the pattern itself from then on), and the stand-in, which other modules
may have imported, keeps the compiled pattern's methods as plain attributes.
"""

from __future__ import annotations

import re
import sys
from typing import Any, cast

#: What a stand-in copies from its compiled pattern, so ``__getattr__`` runs once.
_COPIED = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split",
           "scanner", "pattern", "flags", "groups", "groupindex")


class _CompiledPattern:
    """A stand-in whose pattern is compiled: its attributes are the pattern's."""

    def __repr__(self) -> str:
        return f"compile_lazily({self.pattern!r}, {self.flags!r})"  # type: ignore[attr-defined]


class _LazyPattern(_CompiledPattern):
    """A ``re.Pattern`` compiled on first use (see the module docstring)."""

    def __init__(self, source: str, flags: int, module: dict[str, Any]) -> None:
        self._source, self._flags, self._module = source, flags, module

    def __getattr__(self, name: str) -> Any:
        # Only called for a name not on the instance: the first use.
        compiled = re.compile(self._source, self._flags)
        for attr in _COPIED:
            setattr(self, attr, getattr(compiled, attr))
        for key, value in list(self._module.items()):
            if value is self:
                self._module[key] = compiled
        # Without __getattr__ in its class, an attribute lookup takes the fast path.
        self.__class__ = _CompiledPattern  # type: ignore[assignment]
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"compile_lazily({self._source!r}, {self._flags!r})"


def compile_lazily(source: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile(source, flags)`` for a module-level name, deferred to the pattern's
    first use. A bad pattern raises ``re.error`` then rather than at import
    (``tests/test_lazy_patterns.py`` compiles every one)."""
    module = sys._getframe(1).f_globals
    return cast(re.Pattern[str], _LazyPattern(source, flags, module))
