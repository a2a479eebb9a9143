"""The delimiter-like tokens of a judge template, found once per template (see
:mod:`harness.judge.defuse` for what counts and how a prediction's copies are found)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

from .fold import Folded


class Token(NamedTuple):
    """One delimiter-like token of a template."""

    kind: str  # "marker", "label", "line" (a heading) or "rule" (a separator)
    key: str  # its letters and digits, folded ("rule" or "fence" for a separator)
    words: tuple[str, ...]  # its words, folded
    shown: str  # as written in the template


_LINE_BREAK = re.compile(r"\\[nr]")
_MARKER = re.compile(r"[<\[]\s*/?\s*(?P<phrase>[^\W\d_][^<>\[\]{}\n]{0,60}?)\s*/?\s*[>\]]")
_WORD = r"[^\W\d_][\w'\-]*"
_DECORATION = r"(?:#{1,6}[^\S\n]+|[-*+>][^\S\n]+)?(?:\*\*|__)?"
_LABEL = re.compile(rf"(?:\A|(?<=[\n}}>\]|]))[^\S\n]*(?P<shown>{_DECORATION}"
                    rf"(?P<phrase>{_WORD}(?:[^\S\n]+{_WORD}){{0,2}})(?:\*\*|__)?[^\S\n]*:)")
_HEADING = re.compile(r"^[^\S\n]*(?P<shown>#{1,6}[^\S\n]+(?P<phrase>[^\n{}]+?)"
                      r"|(\*\*|__)(?P<bold>[^\n{}*]+?)\3[^\S\n]*:?)[^\S\n]*$", re.MULTILINE)
# A separator: a horizontal rule, or a code fence.
RULE_LINE = re.compile(r"^[^\S\n]*(?P<shown>(?P<rule>(?P<c>[-=*_])(?:[^\S\n]*(?P=c)){2,})"
                       r"|(?:`{3,}|~{3,})[^\S\n]*[\w+\-]*)[^\S\n]*$", re.MULTILINE)
_NOT_ALNUM = re.compile(r"[\W_]+")
WORDS = re.compile(r"[^\W_]+")


def alnum(text: str) -> str:
    """``text``'s letters and digits: what a copy is compared on."""
    return _NOT_ALNUM.sub("", text)


def template_tokens(content: str) -> Iterator[tuple[int, Token]]:
    """``(position, token)`` for each delimiter-like token of one template message
    (literal ``\\n`` read as a line break)."""
    folded = Folded(_LINE_BREAK.sub("\n", content))
    text = folded.text
    found = [("marker", m, m.group("phrase"), m.span()) for m in _MARKER.finditer(text)]
    found += [("label", m, m.group("phrase"), m.span("shown")) for m in _LABEL.finditer(text)]
    for m in _HEADING.finditer(text):
        phrase = m.group("phrase") or m.group("bold")
        found.append(("line", m, phrase, m.span("shown")))
        if phrase.endswith(":"):  # "### Verdict (A or B):" is a label of any length too
            found.append(("label", m, phrase, m.span("shown")))
    for kind, _, phrase, (start, end) in found:
        if sum(c.isalnum() for c in phrase) >= 2:
            start, end = folded.span(start, end)
            yield start, Token(kind, alnum(phrase), tuple(WORDS.findall(phrase)),
                               folded.original[start:end].strip())
    for m in RULE_LINE.finditer(text):
        start, end = folded.span(*m.span("shown"))
        yield start, Token("rule", separator(m), (), folded.original[start:end].strip())


def separator(line: re.Match[str]) -> str:
    """The kind of a ``RULE_LINE`` match: ``"rule"`` or ``"fence"``."""
    return "rule" if line.group("rule") else "fence"
