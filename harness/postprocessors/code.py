"""``humaneval_postprocess_v2`` / ``code``: the Python program a reply contains.

What models write, and what is kept:

- ``<think>…</think>`` reasoning is dropped (an unclosed block: no answer, '');
- MBPP's few-shot style ``[BEGIN] '…code…' [DONE]``: the code between the marks;
- fenced blocks, tagged (```` ```python ````) or not: the block that defines the
  entry point wins (the last one, if several do: a corrected version), else the first
  Python block (as OpenCompass's ``humaneval_postprocess_v2`` does); a fence the reply
  never closes (cut off) runs to the end; a fence indented inside a Markdown list is
  dedented;
- unfenced code with prose before or after: from the first line that starts code to
  the last line that still compiles;
- a bare continuation of the prompt (the function body only, even one line such as
  ``return x % 1.0``): kept as a body, re-indented when the model lost the first
  line's indentation or all of it.

A reply with no code is '' (an extraction failure). The entry point comes from the
dataset row: HumanEval's ``entry_point``, or for MBPP the function its first test
calls (see ``entry_point_of``).
"""

from __future__ import annotations

import ast
import builtins
import re
import textwrap
import warnings
from collections.abc import Mapping
from typing import Any

from ._lazy_re import compile_lazily
from ._registry import POSTPROCESSORS
from ._text import as_text, strip_think

_FENCE = compile_lazily(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_PYTHON_TAGS = {"", "python", "py", "python3", "py3", "pycon", "ipython"}
_BEGIN_DONE = compile_lazily(r"\[BEGIN\]\s*(.*?)\s*(?:\[DONE\]|\Z)", re.DOTALL)
_CODE_START = compile_lazily(r"^(?:def |async def |class |import |from \S+ import |@\w)")
_BUILTINS = set(dir(builtins))


@POSTPROCESSORS.register("code", "humaneval_postprocess_v2", "humaneval-v2", "mbpp-code")
def humaneval_postprocess_v2(text: Any, entry_point: str | None = None,
                             test_item: Mapping[str, Any] | None = None) -> str:
    """The program in ``text`` (see the module docstring); '' when there is none.

    ``entry_point`` overrides the row's; ``test_item`` is the dataset row (for its
    ``entry_point``, ``test_list`` and, to re-indent a continuation, ``prompt``).
    """
    raw = as_text(text)
    if raw is None:
        return ""
    kept = strip_think(raw)
    if kept is None or not kept.strip():
        return ""
    row = test_item or {}
    name = entry_point or entry_point_of(row)
    code = _select(kept, name)
    if not code.strip():
        return ""
    # Only HumanEval's prompt is code that a body continues (MBPP's is the task's prose).
    prompt = row.get("prompt") if isinstance(row.get("entry_point"), str) else None
    if prompt is not None and not _defines(code, name) and _is_body(code):
        code = _reindent(prompt, code)
    return code


def entry_point_of(row: Mapping[str, Any]) -> str | None:
    """The function a row's tests call: HumanEval's ``entry_point``, else the first
    function MBPP's first ``test_list`` assertion calls by its bare name that is not a
    builtin (so ``math.isclose(volume_sphere(10), …)`` gives ``volume_sphere``), or if
    all are builtins the first (task 126 defines its own ``sum``); None without one."""
    if isinstance(row.get("entry_point"), str):
        return row["entry_point"]
    tests = row.get("test_list")
    if isinstance(tests, (list, tuple)) and tests and isinstance(tests[0], str):
        called = _called_names(tests[0])
        return next((name for name in called if name not in _BUILTINS),
                    called[0] if called else None)
    return None


def _called_names(source: str) -> list[str]:
    """The functions ``source`` calls by a bare name, in the order the calls start;
    attribute calls (``math.isclose``, ``x.method``) are left out: they are a library's
    or an object's, never the task's function."""
    tree = _compile(source, ast.PyCF_ONLY_AST)
    if tree is None:
        return []
    calls = [(node.lineno, node.col_offset, node.func.id) for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)]
    return [name for _, _, name in sorted(calls)]


def _select(text: str, name: str | None) -> str:
    begin = _BEGIN_DONE.search(text)
    if begin is not None:
        return _unquote(begin.group(1))
    blocks = [(tag.lower(), _unlisted(body)) for tag, body in _FENCE.findall(text)]
    python = [body for tag, body in blocks if tag in _PYTHON_TAGS]
    if python:
        defining = [body for body in python if _defines(body, name)]
        return defining[-1] if defining else python[0]
    if blocks:
        return ""  # only shell, output or another language: no Python program
    return _unfenced(text)


def _unlisted(block: str) -> str:
    """A fenced block without the indentation a Markdown list item gives all its lines,
    when removing it is what makes the block a program; else as written (a
    continuation's indentation belongs to the prompt's function)."""
    dedented = textwrap.dedent(block)
    return dedented if not _compiles(block) and _compiles(dedented) else block


def _unquote(code: str) -> str:
    """MBPP's prompt shows each solution as ``'...'`` between the marks."""
    for quote in ("'''", '"""', "'", '"'):
        if len(code) >= 2 * len(quote) and code.startswith(quote) and code.endswith(quote):
            return code[len(quote):-len(quote)]
    return code


def _unfenced(text: str) -> str:
    """Code written without fences: a body, or the span from the first code line that
    compiles."""
    if _is_body(text) and _fix_body("def _f():\n", text) is not None:
        return text.rstrip() + "\n"
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if _CODE_START.match(line)]
    if not starts:
        return ""
    start = starts[0]
    for end in range(len(lines), start, -1):
        candidate = "\n".join(lines[start:end])
        if _compiles(candidate):
            return candidate.rstrip() + "\n"
    return ""


def _defines(code: str, name: str | None) -> bool:
    if name is None:
        return bool(re.search(r"^\s*(?:async\s+)?def\s+\w+", code, re.MULTILINE))
    return bool(re.search(rf"^\s*(?:async\s+)?def\s+{re.escape(name)}\s*\(", code,
                          re.MULTILINE))


def _is_body(code: str) -> bool:
    """Whether ``code`` looks like the rest of a function body: some indented line and
    no top-level ``def``/``class``/``import`` first, or, however it starts and is
    indented, no module either (a ``return`` at the top level, say)."""
    lines = [line for line in code.splitlines() if line.strip()]
    if not lines:
        return False
    indented = any(line.startswith((" ", "\t")) for line in lines)
    return (indented and not _CODE_START.match(lines[0])) or not _compiles(code)


def _compiles(code: str) -> bool:
    """Whether ``code`` compiles as a module: unlike ``ast.parse``, ``compile`` rejects a
    ``return`` or ``yield`` outside a function, so a body that lost its indentation
    does not pass for a program."""
    return _compile(code) is not None


def _compile(code: str, flags: int = 0) -> Any:
    """``compile(code)`` as a module (its tree with ``ast.PyCF_ONLY_AST``), None if
    ``code`` is not valid Python."""
    # An invalid escape ("\.") only warns when the program runs, but under a
    # warnings-as-errors filter compile raises SyntaxError for it: ignore warnings.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return compile(code, "<reply>", "exec", flags, dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError):  # too deeply nested to be code
            return None


def _indent(code: str, everything: bool) -> str:
    lines = code.splitlines()
    if everything:
        return "\n".join("    " + line if line.strip() else line for line in lines)
    return code


def _reindent(prompt: str, body: str) -> str:
    """``body`` indented so that ``prompt + body`` compiles, if a simple fix does."""
    fixed = _fix_body(prompt, body)
    return body if fixed is None else fixed


def _fix_body(prompt: str, body: str) -> str | None:
    """The first of: the body as written, its first line indented like the rest, all of
    it re-indented to four (as in a fence inside a Markdown list, or flush left), that
    compiles after ``prompt``; None if none does."""
    lines = body.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), 0)
    rest = [line for line in lines[first + 1:] if line.strip()]
    candidates = [body]
    if rest and not lines[first].startswith((" ", "\t")):
        width = min(len(line) - len(line.lstrip()) for line in rest)
        fixed = lines[:first] + [" " * width + lines[first]] + lines[first + 1:]
        candidates.append("\n".join(fixed) + "\n")
    candidates.append(_indent(textwrap.dedent(body), True) + "\n")
    for candidate in candidates:
        if _compiles(prompt + candidate):
            return candidate
    return None
