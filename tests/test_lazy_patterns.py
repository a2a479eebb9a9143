"""Postprocessor patterns compiled on first use: each one compiles, and behaves as
``re.compile`` of the same source, and importing the extractors compiles none."""

from __future__ import annotations

import importlib
import pkgutil
import re
import subprocess
import sys

import pytest

import harness.postprocessors as pp
from harness.postprocessors._lazy_re import _LazyPattern, compile_lazily


def _lazy_patterns() -> list[tuple[str, _LazyPattern]]:
    found = []
    for info in pkgutil.iter_modules(pp.__path__):
        module = importlib.import_module(f"harness.postprocessors.{info.name}")
        found += [(f"{info.name}.{name}", value) for name, value in vars(module).items()
                  if isinstance(value, _LazyPattern)]
    return found


PATTERNS = _lazy_patterns()


def test_the_extractors_patterns_are_lazy() -> None:
    # The conversion covers the extractors' module-level patterns (over a hundred).
    assert len(PATTERNS) > 100


@pytest.mark.parametrize(("name", "pattern"), PATTERNS, ids=[name for name, _ in PATTERNS])
def test_every_pattern_compiles(name: str, pattern: _LazyPattern) -> None:
    # A bad pattern no longer fails at import: it would fail here.
    compiled = re.compile(pattern._source, pattern._flags)
    assert pattern.pattern == compiled.pattern
    assert pattern.flags == compiled.flags
    assert pattern.groups == compiled.groups


def test_a_lazy_pattern_matches_as_the_compiled_one() -> None:
    source = r"(?P<n>-?\d+)\s*(apples|pears)"
    lazy, compiled = compile_lazily(source, re.IGNORECASE), re.compile(source, re.IGNORECASE)
    text = "3 Apples, -4 pears and 5 plums"
    assert lazy.search(text).group("n") == compiled.search(text).group("n") == "3"  # type: ignore[union-attr]
    assert lazy.findall(text) == compiled.findall(text)
    assert lazy.sub("#", text) == compiled.sub("#", text)
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in compiled.finditer(text)]
    assert lazy.groupindex == compiled.groupindex
    assert lazy.fullmatch("3 pears") is not None


def test_a_bad_pattern_fails_on_first_use() -> None:
    bad = compile_lazily("(unclosed")
    with pytest.raises(re.error):
        bad.search("text")


def test_importing_the_gsm8k_extractor_compiles_no_pattern() -> None:
    # A rerun served from the store loads the extractor its config names, and extracts
    # nothing: compiling its patterns then is pure start-up cost.
    code = ("import harness.postprocessors.numbers, sys\n"
            "from harness.postprocessors._lazy_re import _LazyPattern\n"
            "mods = [m for n, m in sys.modules.items() if n.startswith('harness.postprocessors')]\n"
            "print(sum(isinstance(v, _LazyPattern) and 'search' in vars(v)\n"
            "          for m in mods for v in vars(m).values()))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "0"
