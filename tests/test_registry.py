"""The registry: harness's own names are declared by module and imported on first use,
and count as registered before that (membership, listing, duplicates)."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.evaluators import EVALUATORS
from harness.postprocessors import POSTPROCESSORS
from harness.registry import Registry

OWN = "regtest_own"  # the module that registers the declared names


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Registry]:
    """A registry declaring ``alpha`` (also ``a``) and ``ghost`` in a module not yet
    imported, which registers ``alpha`` (and not ``ghost``) into it."""
    (tmp_path / "regtest_home.py").write_text(
        "from harness.registry import Registry\n"
        f"REG = Registry('thing', {{{OWN!r}: ('alpha', 'a', 'ghost')}})\n")
    (tmp_path / f"{OWN}.py").write_text(
        "from regtest_home import REG\n\n"
        "@REG.register('alpha', 'a')\n"
        "def alpha(value):\n"
        "    return value\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    home = importlib.import_module("regtest_home")
    yield home.REG
    for name in ("regtest_home", OWN):
        sys.modules.pop(name, None)


def test_a_declared_name_is_registered_before_its_module_is_imported(registry):
    assert "alpha" in registry and "a" in registry
    assert registry.names() == ["a", "alpha", "ghost"]
    assert OWN not in sys.modules


def test_get_imports_the_declared_module(registry):
    alpha = registry.get("a")
    assert alpha is sys.modules[OWN].alpha
    assert registry.get("alpha") is alpha


def test_another_object_under_a_declared_name_is_a_duplicate(registry):
    with pytest.raises(ValueError, match="thing 'alpha' is already registered"):
        registry.register("alpha")(lambda value: value)
    assert registry.get("alpha") is sys.modules[OWN].alpha


def test_a_new_name_registers_without_importing_the_declared_modules(registry):
    def beta(value):
        return value

    registry.register("beta")(beta)
    assert registry.get("beta") is beta
    assert "beta" in registry and "beta" in registry.names()
    assert OWN not in sys.modules


def test_an_unknown_name_suggests_the_declared_ones(registry):
    with pytest.raises(KeyError, match="unknown thing 'alpah'; did you mean 'alpha'"):
        registry.get("alpah")
    assert OWN not in sys.modules


def test_a_declared_name_its_module_does_not_register_is_an_error(registry):
    with pytest.raises(RuntimeError, match=f"{OWN} does not register the thing 'ghost'"):
        registry.get("ghost")


@pytest.mark.parametrize("registry,home", [
    (POSTPROCESSORS, "harness.postprocessors._registry"),
    (EVALUATORS, "harness.evaluators.base"),
], ids=["postprocessors", "evaluators"])
def test_every_shipped_name_is_declared_with_the_module_that_registers_it(
        registry: Registry, home: str) -> None:
    package = home.rpartition(".")[0]
    for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
        importlib.import_module(f"{package}.{info.name}")
    for name, module in registry.shipped.items():
        assert registry.get(name).__module__ == module, name
    for name in registry.names():
        module = registry.get(name).__module__
        if module.startswith("harness.") and module != home:  # not a user's, not built in
            assert registry.shipped.get(name) == module, f"{name} is not declared"
