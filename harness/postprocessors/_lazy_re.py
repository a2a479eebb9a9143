"""Module-level patterns compiled on first use.

The answer extractors hold over a hundred patterns, and compiling them at import took a
noticeable share of a rerun that is served from the store and extracts nothing (see
``bench/README.md``). ``compile_lazily`` returns a stand-in that compiles its pattern
the first time any attribute is asked for, then keeps the compiled pattern's methods on
itself: later calls are plain attribute lookups, as on the pattern itself.
"""

from __future__ import annotations

import re
from typing import Any, cast

#: What a stand-in copies from its compiled pattern, so ``__getattr__`` runs once.
_COPIED = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split",
           "scanner", "pattern", "flags", "groups", "groupindex")


class _LazyPattern:
    """A ``re.Pattern`` compiled on first use (see the module docstring)."""

    def __init__(self, source: str, flags: int) -> None:
        self._source, self._flags = source, flags

    def __getattr__(self, name: str) -> Any:
        # Only called for a name not yet on the instance: the first use, or a name
        # _COPIED leaves out.
        compiled = re.compile(self._source, self._flags)
        for attr in _COPIED:
            setattr(self, attr, getattr(compiled, attr))
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"compile_lazily({self._source!r}, {self._flags!r})"


def compile_lazily(source: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile(source, flags)``, deferred to the pattern's first use. A bad
    pattern raises ``re.error`` then rather than at import (the tests use them all)."""
    return cast(re.Pattern[str], _LazyPattern(source, flags))
