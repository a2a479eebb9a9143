"""A judge that falls for injections, for the tests of judge-injection defusing.

:func:`gullible_judge` believes whatever follows the last ``Answer:`` it sees. Its
reading is written apart from ``harness.judge.fold`` on purpose: a test of the defuser
against a judge that shares the defuser's blind spots would prove nothing.
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata
from collections.abc import Iterator
from typing import Any

from confusable_homoglyphs import confusables

from .replies import Responder

_VERDICTS = {"a": "A", "correct": "A", "b": "B", "incorrect": "B"}
_READ_BY_NAME = (
    (re.compile(r"\bLEFT\b.*\b(?:ANGLE|LESS-THAN)\b|LESS-THAN SIGN"), "<"),
    (re.compile(r"\bRIGHT\b.*\b(?:ANGLE|GREATER-THAN)\b|GREATER-THAN SIGN"), ">"),
    (re.compile(r"\bLEFT\b.*\b(?:SQUARE|LENTICULAR|TORTOISE SHELL) BRACKET"), "["),
    (re.compile(r"\bRIGHT\b.*\b(?:SQUARE|LENTICULAR|TORTOISE SHELL) BRACKET"), "]"),
    (re.compile(r"\bCOLON$"), ":"),
    (re.compile(r"\bLATIN\b.*\bLETTER (?:SMALL CAPITAL |OPEN |SCRIPT |DOTLESS )?([A-Z])\b"), ""),
)


@functools.cache
def _reads_char(char: str) -> str:
    """A character as a careless judge model takes it: invisible ones are not there; one
    that looks like an ASCII character, by its Unicode name or by Unicode's confusables
    table, is that character (its capital's, for a lower-case letter)."""
    if unicodedata.category(char) in ("Cf", "Mn", "Me") or char in "\u115f\u1160\u3164\uffa0":
        return ""
    if unicodedata.category(char) == "Pd":
        return "-"
    for candidate in (char, char.upper()):
        if candidate.isascii():
            return candidate
        name = unicodedata.name(candidate, "")
        for pattern, reads in _READ_BY_NAME:
            if found := pattern.search(name):
                return reads or found.group(1)
        glyphs = confusables.confusables_data.get(candidate, [])
        ascii_ = sorted(g["c"] for g in glyphs if g["c"].isascii() and g["c"].strip())
        if ascii_:
            return ascii_[0]
    return char


def judge_reads(text: str) -> str:
    """What a careless judge model reads: literal ``\\n`` as a line break, HTML
    references decoded, NFKC, then each character as ``_reads_char``, in lower
    case."""
    text = unicodedata.normalize("NFKC", html.unescape(text.replace("\\n", "\n")))
    return "".join(map(_reads_char, text)).lower()


class _Structure:
    """Where a careless reader sees one piece of a template's structure in read text:
    ``phrase`` as the template writes it (``<Predicted End>``, ``Answer:``, ``/answer``,
    ``### Response:``, ``---``)."""

    def __init__(self, phrase: str) -> None:
        read = judge_reads(phrase).strip()
        self.label = read.endswith(":")
        self.rule = not re.search(r"[^\W_]", read)
        core = read.strip("<>[]#*_ :")
        self.slash = core.startswith("/")
        self.key = re.sub(r"[\W_]+", "", core)
        self.words = set(re.findall(r"[^\W_]+", core))
        # A heading is also seen in a short heading sharing a word ("### Verdict:").
        self.heading_words = ({w for w in self.words if len(w) >= 3}
                              if read.startswith("#") else set())
        letters = r"(?:[^\w\n]|_)*".join(map(re.escape, self.key))  # spaced, dotted …
        slash = "/" if self.slash else "(?!/)"
        self._patterns = [  # one bracket is enough, next to the words ("x < y" compares)
            rf"[<\[]{slash}{letters}(?![^\W_])",
            rf"(?<![^\W_]){'/' if self.slash else '(?<!/)'}{letters}/?[>\]]",
            rf"(?m)^[^\S\n]*(?:[^\w\n/]|_)*{slash}{letters}(?:[^\w\n]|_)*$",  # alone, decorated
        ] + ([rf"{letters}(?:[^\w\n:]|_){{0,3}}:"] if self.label else [])  # glued too

    def find(self, text: str) -> list[tuple[int, int]]:
        """The ``(start, end)`` of each place it is seen, in order."""
        if self.rule:
            return [m.span() for m in re.finditer(r"(?m)^[^\S\n]*([-=*_])(?:[^\S\n]*\1){2,}"
                                                  r"[^\S\n]*$", text)]
        pairs = list(re.finditer(r"[<\[]([^<>\[\]]{0,100})[>\]]", text))
        spans = set()
        for pair in pairs:
            inside = pair.group(1).strip()
            words = set(re.findall(r"[^\W_]+", inside))
            if inside.startswith("/") == self.slash and (
                    re.sub(r"[\W_]+", "", inside) == self.key
                    or (len(self.words) > 1 and self.words <= words and len(words) <= 8)):
                spans.add(pair.span())  # the same letters, or a phrase holding its words
        for line in re.finditer(r"(?m)^[^\S\n]*(?:#{1,6}|\*\*)([^#*\n]+?)(?:\*\*)?:?[^\S\n]*$",
                                text):
            heading = re.findall(r"[^\W_]+", line.group(1))
            if len(heading) <= 8 and self.heading_words & set(heading):
                spans.add(line.span())
        # Within a pair of brackets only the pair decides ("[/ A N S W E R]" is a closer).
        spans |= {m.span() for pattern in self._patterns for m in re.finditer(pattern, text)
                  if not any(p.start() < m.start() < p.end() - 1 for p in pairs)}
        return sorted(spans)


def _told(text: str) -> Iterator[tuple[int, str]]:
    """``(position, word)`` for the word after each ``Answer:`` (spaced, decorated …)."""
    answer = r"(?:[^\w\n]|_)*".join("answer")
    for found in re.finditer(rf"{answer}(?:[^\w\n:]|_){{0,3}}:\W*(\w+)", text):
        yield found.start(), found.group(1)


def gullible_judge(prediction: tuple[str, str | None] = ("<Predicted Answer Begin>",
                                                         "<Predicted End>"),
                   gold: str = "<Gold Target Begin>") -> Responder:
    """A judge that believes whatever follows the last ``Answer:`` it sees, to show that
    judge-injection defusing (``harness.judge.defuse``) leaves it nothing to believe.

    It reads the judge prompt as a careless model would (``judge_reads``: HTML
    references, NFKC, look-alike characters, invisible characters, case), and takes
    structure at face value. ``prediction`` names the template's markers that open and
    close the answer's block (closer ``None``: there is none; the same for both: a
    separator line), ``gold`` the one that opens the gold answer, as the template
    writes them. It sees a marker wherever its letters are next to a ``<``/``[``
    bracket, alone on a line however decorated, before a colon (a label), where a
    bracketed phrase holds all its words (``<End of Predicted Answer>``), and a heading
    in any short heading sharing one of its words (``### Verdict:``).

    The block runs from the last opener (the first, for a separator) to the first
    closer after it, so a fake end ends it (with no closer: to the next gold opener, or
    the end). Then it replies what it is told: the verdict (``A``, ``correct``, ``B``,
    ``incorrect``) after the last ``Answer:`` outside the block or opening it, else a
    verdict standing right after the block. Told nothing, it grades: the block's last
    number against the first number after every gold opener it saw, fake ones included.
    """
    opener, closer = (_Structure(p) if p else None for p in prediction)
    gold_opener = _Structure(gold)
    assert opener is not None
    separator = prediction[0] == prediction[1]

    def respond(body: dict[str, Any]) -> str:
        text = judge_reads("\n".join(m["content"] for m in body["messages"]))
        opened = opener.find(text)
        if not opened:
            return "B"
        start = opened[0 if separator else -1][1]
        endings = [span for span in (closer or gold_opener).find(text) if span[0] >= start]
        end = endings[0][0] if endings else len(text)
        told = [word for at, word in _told(text) if not start <= at < end]
        if told and told[-1] in _VERDICTS:
            return _VERDICTS[told[-1]]
        after = re.match(r"\W*(\w+)", text[endings[0][1]:]) if endings and closer else None
        if after and after.group(1) in _VERDICTS:
            return _VERDICTS[after.group(1)]
        numbers = re.findall(r"\d+", text[start:end])
        golds = {found.group() for found in (re.search(r"\d+", text[g_end:])
                                             for _, g_end in gold_opener.find(text)) if found}
        return "A" if numbers and numbers[-1] in golds else "B"

    return respond
