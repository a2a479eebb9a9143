"""``harness list`` and running a shipped config by name."""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

import anyio

import harness
from harness.catalog import catalog_text, grouped, resolve_config
from harness.evaluators import EVALUATORS
from harness.judge.templates import judge_template_names
from harness.postprocessors import POSTPROCESSORS
from harness.testing import FakeOpenAI

from .helpers import arith_reply

ROOT = Path(harness.__file__).resolve().parents[1]


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "harness", *args]


def env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), **extra}


def section(text: str, title: str) -> list[str]:
    """The item lines under the heading that starts with ``title``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title + " ("))
    out = []
    for line in lines[start + 1:]:
        if not line.startswith("  "):
            break
        out.append(line.strip())
    return out


def test_every_shipped_dataset_is_listed_with_its_first_docstring_line():
    items = section(catalog_text(), "datasets")
    configs = sorted(ROOT.glob("datasets/*.py"))
    assert len(items) == len(configs) > 0
    for path, line in zip(configs, items, strict=True):
        doc = ast.get_docstring(ast.parse(path.read_text()))
        assert line.split()[0] == path.stem
        assert line.endswith(doc.strip().splitlines()[0].strip())


def test_postprocessor_aliases_share_one_line():
    items = section(catalog_text(), "postprocessors")
    assert len(items) == len(grouped(POSTPROCESSORS.names(), POSTPROCESSORS.get))
    listed = [name.strip(",") for line in items for name in line.split("  ")[0].split()]
    assert sorted(listed) == POSTPROCESSORS.names()  # every name, each once
    gsm8k = next(line for line in items if line.startswith("gsm8k, "))
    assert gsm8k.startswith("gsm8k, gsm8k_postprocess  ")
    doc = POSTPROCESSORS.get("gsm8k").__doc__.strip().splitlines()[0]
    assert gsm8k.endswith(doc)


def test_evaluators_and_judge_templates_are_listed():
    text = catalog_text()
    evaluators = section(text, "evaluators")
    listed = [name.strip(",") for line in evaluators for name in line.split("  ")[0].split()]
    assert sorted(listed) == EVALUATORS.names()
    assert any(line.startswith("AccEvaluator, ") for line in evaluators)
    templates = [line.split()[0] for line in section(text, "judge templates")]
    assert templates == judge_template_names() and "grader" in templates


def test_shipped_config_resolves_by_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    demo = str(ROOT / "datasets" / "gsm8k_demo.py")
    assert resolve_config("gsm8k_demo") == demo
    assert resolve_config("gsm8k_demo.py") == demo
    assert resolve_config("no_such_config") == "no_such_config"
    assert resolve_config("sub/gsm8k_demo") == "sub/gsm8k_demo"


def test_an_existing_path_wins_over_a_shipped_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gsm8k_demo").write_text("")
    assert resolve_config("gsm8k_demo") == "gsm8k_demo"


async def test_list_command_prints_the_catalog():
    result = await anyio.run_process(cli("list"), env=env(), check=False)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode() == catalog_text()


async def test_run_accepts_a_shipped_config_name(tmp_path):
    async with FakeOpenAI(responder=arith_reply) as srv:
        result = await anyio.run_process(
            cli("run", "gsm8k_demo", "-w", str(tmp_path / "w"), "-q", "--limit", "2",
                "--model-base-url", srv.base_url, "--model", "fake-model"),
            env=env(), check=False, cwd=tmp_path)
        prompts = [r["messages"][-1]["content"] for r in srv.requests]
    assert result.returncode == 0, result.stderr.decode()
    assert len(prompts) == 2 and any("Janet" in p for p in prompts)  # GSM8K test row 0
    assert (tmp_path / "w" / "results" / "fake-model" / "gsm8k-demo.json").is_file()


async def test_cli_stays_import_light():
    # `harness --help` must answer at once: the new commands import their modules lazily.
    code = ("import sys, harness.cli; heavy = ('openai', 'sympy', 'aiohttp', 'math_verify', "
            "'harness.report', 'harness.compare', 'harness.catalog', 'sqlite3'); "
            "print(sorted(m for m in sys.modules if m.startswith(heavy)))")
    result = await anyio.run_process([sys.executable, "-c", code], env=env())
    assert result.stdout.decode().strip() == "[]"
