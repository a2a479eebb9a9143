"""``python -m harness list``: what ships with harness, and shipped configs by name.

Shipped dataset configs are described from their module docstrings, read with
:mod:`ast` rather than imported: listing must not run a config (nor import the
modules a config imports). ``resolve_config`` lets ``python -m harness run gsm8k_demo``
name a shipped config without its path. Where the shipped files are, in a checkout or
an installed wheel, is :mod:`harness.shipped`'s business.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .shipped import datasets_dir


def shipped_datasets() -> list[tuple[str, str]]:
    """``(name, first docstring line)`` of every config in ``datasets/``, by name."""
    out = []
    for path in sorted(datasets_dir().glob("*.py")):
        if path.name.startswith("_"):
            continue
        try:
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        except (OSError, SyntaxError, ValueError):
            doc = None
        out.append((path.stem, first_line(doc)))
    return out


def resolve_config(name: str) -> str:
    """``name`` itself when it is an existing path, else the shipped config so named.

    ``gsm8k_demo`` and ``gsm8k_demo.py`` both resolve to ``datasets/gsm8k_demo.py``.
    Anything else is returned unchanged, so the usual "no such config" error names
    what the user typed.
    """
    if Path(name).exists() or "/" in name or "\\" in name:
        return name
    stem = name[:-3] if name.endswith(".py") else name
    candidate = datasets_dir() / f"{stem}.py"
    return str(candidate) if stem and candidate.is_file() else name


def first_line(doc: str | None) -> str:
    """The first non-empty line of a docstring ('' when there is none)."""
    for line in (doc or "").strip().splitlines():
        if line.strip():
            return line.strip()
    return ""


def grouped(names: Iterable[str], get: Callable[[str], Any]) -> list[tuple[list[str], str]]:
    """Registry names grouped by the object they name: ``([aliases...], first doc line)``.

    Within a group the short harness names (``gsm8k``, ``math-boxed``) come before the
    OpenCompass function names (``gsm8k_postprocess``); groups are ordered by their
    first name.
    """
    groups: dict[int, tuple[list[str], Any]] = {}
    for name in sorted(names, key=lambda n: ("_" in n, n)):
        obj = get(name)
        groups.setdefault(id(obj), ([], obj))[0].append(name)
    return sorted(((aliases, first_line(inspect.getdoc(obj))) for aliases, obj
                   in groups.values()), key=lambda g: g[0][0])


def judge_templates() -> list[tuple[str, str]]:
    """``(name, first line of its text)`` of the shipped judge prompt presets."""
    from .judge.templates import judge_template_names, judges_dir

    out = []
    for name in judge_template_names():
        try:
            text = (judges_dir() / f"{name}.txt").read_text(encoding="utf-8")
        except OSError:
            text = ""
        out.append((name, first_line(text)))
    return out


def catalog_text() -> str:
    """The ``list`` command's output: four headed sections, one item per line."""
    from .evaluators import EVALUATORS
    from .postprocessors import POSTPROCESSORS

    def section(title: str, items: list[tuple[str, str]], hint: str) -> list[str]:
        if not items:
            return [f"{title}: none", ""]
        pad = min(max(len(n) for n, _ in items), 40)
        lines = [f"{title} ({hint}):"]
        for name, doc in items:
            lines.append(f"  {name.ljust(pad)}  {doc}".rstrip())
        return lines + [""]

    def aliases(groups: list[tuple[list[str], str]]) -> list[tuple[str, str]]:
        return [(", ".join(names), doc) for names, doc in groups]

    lines = section("datasets", shipped_datasets(), "python -m harness run NAME")
    lines += section("postprocessors", aliases(grouped(POSTPROCESSORS.names(),
                                                       POSTPROCESSORS.get)),
                     "pred_postprocessor=dict(type=NAME)")
    lines += section("evaluators", aliases(grouped(EVALUATORS.names(), EVALUATORS.get)),
                     "evaluator=dict(type=NAME)")
    lines += section("judge templates", judge_templates(), "judge_template(NAME)")
    return "\n".join(lines).rstrip() + "\n"
