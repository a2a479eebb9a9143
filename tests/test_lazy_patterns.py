"""Postprocessor patterns compiled on first use: each one compiles, and behaves as
``re.compile`` of the same source, and importing the extractors compiles none."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from harness.postprocessors._lazy_re import compile_lazily

# Run in a fresh interpreter: in the test process other tests have used (and so
# compiled) many of the patterns already.
_EVERY_PATTERN = """
import importlib, pkgutil, re
import harness.postprocessors as pp
from harness.postprocessors._lazy_re import _LazyPattern
modules = [importlib.import_module(f"harness.postprocessors.{info.name}")
           for info in pkgutil.iter_modules(pp.__path__)]
checked = 0
for module in modules:
    for name, value in list(vars(module).items()):
        if not isinstance(value, _LazyPattern) or value._module is not vars(module):
            continue  # not a stand-in, or one imported from another module
        compiled = re.compile(value._source, value._flags)
        where = f"{module.__name__}.{name}"
        assert (value.pattern, value.flags, value.groups) == (
            compiled.pattern, compiled.flags, compiled.groups), where
        assert getattr(module, name) == compiled, where  # the module holds the pattern
        checked += 1
print(checked)
"""


def _python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_every_pattern_compiles_and_takes_its_stand_ins_place() -> None:
    # A bad pattern no longer fails at import: it fails here (the child's error).
    assert int(_python(_EVERY_PATTERN)) > 100  # the extractors' module-level patterns


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
    code = ("import re, sys, harness.postprocessors.numbers\n"
            "from harness.postprocessors._lazy_re import _LazyPattern\n"
            "mods = [m for n, m in sys.modules.items() if n.startswith('harness.postprocessors')]\n"
            "values = [v for m in mods for v in vars(m).values()]\n"
            "print(sum(isinstance(v, _LazyPattern) for v in values),\n"
            "      sum(isinstance(v, re.Pattern) for v in values))\n")
    lazy, compiled = map(int, _python(code).split())
    assert lazy > 50
    assert compiled == 0


def test_a_module_s_own_uses_get_the_compiled_pattern_and_importers_the_stand_in() -> None:
    code = ("import re\n"
            "from harness.postprocessors import _numeric, _conclusion\n"
            "stand_in = _numeric.NUMBER\n"
            "assert _conclusion.NUMBER is stand_in\n"
            "assert stand_in.findall('3 and -4.5') == ['3', '-4.5']\n"
            "assert isinstance(_numeric.NUMBER, re.Pattern)\n"
            "assert _conclusion.NUMBER is stand_in\n"
            "assert stand_in.findall('7 or 8') == _numeric.NUMBER.findall('7 or 8') == ['7', '8']\n"
            "print('ok')\n")
    assert _python(code) == "ok"
