"""Mapping an option's *text* to its letter, when a reply names the option, not the letter.

A multiple-choice question lists its options ("Options:\\n(A) 12/14/2026\\n(B) …"); a
reply may end "So the answer is 12/14/1937." instead of "(D)". A careful grader gives
that reply the letter of the option it names, but only when exactly one option fits:

1. the stated text *is* an option's text (case, articles, quotes, markup and date
   spelling aside: "December 14, 1937" is ``12/14/1937``);
2. else its first clause is ("octagon, since it has eight sides");
3. else it is a fragment of exactly one option ("the quail" of "The quail is the
   second from the left"), never a fragment every option shares ("leftmost").

"kite or rectangle", two options offered together, is a hedge. Text that fits no
option, or several, is not an answer statement at all and is ignored.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any

from ._commit import HEDGE, Candidate, committed_clause, sentence_bounds
from ._lazy_re import compile_lazily
from ._text import sentences, span_after

# "(A) text", "A) text", "A. text", "A: text" at the start of a line.
_OPTION_LINE = compile_lazily(r"^[ \t]*(?:\(([A-Z])\)|([A-Z])[).:])[ \t]+(\S.*?)[ \t]*$",
                              re.MULTILINE)
_CUE = compile_lazily(
    r"(?i:\b(?:the\s+)?(?:final\s+|correct\s+|right\s+|best\s+)?(?:answer|option|choice)"
    r"\s*(?:is|would\s+be|should\s+be|must\s+be|will\s+be|=|:)\s*[:：]?)"
)
_LEAD = compile_lazily(r"^(?:that|option|choice)\s+", re.IGNORECASE)
_CLAUSE = compile_lazily(r"\s*(?:[,;(]|\s[-–—]\s|\b(?:because|since|as|which|so|for)\b)",
                         re.IGNORECASE)
_HEDGE_SPLIT = compile_lazily(r"\s*,?\s*\b(?:either|or|and/or)\b\s*", re.IGNORECASE)
_STOPWORDS = frozenset("a an the is are of to in on at from and".split())
_MONTHS = {m: i for i, m in enumerate(
    "jan feb mar apr may jun jul aug sep oct nov dec".split(), start=1)}
_MONTH = r"(?P<mon>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_DATES = [
    re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+(?:of\s+)?(?P<year>\d{{4}})\b"),
    re.compile(rf"\b(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MONTH},?\s+(?P<year>\d{{4}})\b"),
    re.compile(r"\b(?P<mm>\d{1,2})[/-](?P<day>\d{1,2})[/-](?P<year>\d{4})\b"),
]
# A word, or a letter in parentheses: "(a)" names an option, it is not the article "a".
_WORD = compile_lazily(r"\([a-z]\)|[a-z0-9]+(?:[/.'-][a-z0-9]+)*")


def option_texts(test_item: Mapping[str, Any] | None, letters: str) -> dict[str, str]:
    """The options of a dataset row as ``{letter: text}``; ``{}`` when it has none.

    Columns named by the letters (``A``, ``B`` … as in MMLU-style CSVs) win; else the
    option lines of the row's text fields ("(A) 12/14/2026"), from the field that lists
    the most, counted only when they run A, B, C … in order (a stray "A. " line is no
    option list).
    """
    if not isinstance(test_item, Mapping):
        return {}
    columns = {L: str(test_item[L]).strip() for L in letters
               if isinstance(test_item.get(L), (str, int, float)) and str(test_item[L]).strip()}
    if len(columns) >= 2:
        return columns
    best: dict[str, str] = {}
    for value in test_item.values():
        if isinstance(value, str):
            found = _listed(value, letters)
            if len(found) > len(best):
                best = found
    return best


def _listed(text: str, letters: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for m in _OPTION_LINE.finditer(text):
        letter = m.group(1) or m.group(2)
        expected = chr(ord("A") + len(found))
        if letter != expected or letter not in letters:
            break
        found[letter] = m.group(3)
    return found if len(found) >= 2 else _inline(text, letters)


# Options run together on one line: "Options: (A) circle (B) hexagon (C) kite".
_INLINE_MARKS = (re.compile(r"(?<![\w(])\(([A-Z])\)[ \t]+"),  # (A) circle (B) …
                 re.compile(r"(?<![\w.])([A-Z])[.)][ \t]+"))  # A. circle  B. …


def _inline(text: str, letters: str) -> dict[str, str]:
    """Options listed on one line, each marked by its letter in order from A; the last
    option runs to the end of its line."""
    for mark in _INLINE_MARKS:
        marks: list[re.Match[str]] = []
        for m in mark.finditer(text):
            if m.group(1) == chr(ord("A") + len(marks)) and (
                    not marks or "\n" not in text[marks[-1].end():m.start()]):
                marks.append(m)
            elif marks and len(marks) < 2 and m.group(1) == "A":
                marks = [m]
        if len(marks) < 2 or any(m.group(1) not in letters for m in marks):
            continue
        found = {}
        for m, nxt in zip(marks, marks[1:] + [None], strict=True):
            line_end = text.find("\n", m.end())
            end = nxt.start() if nxt else line_end if line_end >= 0 else len(text)
            value = text[m.end():end].strip().rstrip(",;").strip()
            if not nxt:
                value = re.sub(r"[.?!]$", "", value).strip()
            if not value:
                break
            found[m.group(1)] = value
        else:
            return found
    return {}


def _date(m: re.Match[str]) -> str:
    parts = m.groupdict()
    month = int(parts["mm"]) if parts.get("mm") else _MONTHS[parts["mon"][:3]]
    return f"{month:02d}/{int(parts['day']):02d}/{parts['year']}"


def _canonical(text: str) -> str:
    """Lower case, NFKC, every date spelled MM/DD/YYYY ("Dec 4th, 1937" → 12/04/1937)."""
    low = unicodedata.normalize("NFKC", text).lower()
    for pattern in _DATES:
        low = pattern.sub(_date, low)
    return low


def words(text: str) -> tuple[str, ...]:
    """``text`` as comparable words: see :func:`_canonical`; no articles, quotes or marks."""
    return tuple(w for w in _WORD.findall(_canonical(text)) if w not in ("a", "an", "the"))


def _fragment_of(part: tuple[str, ...], whole: tuple[str, ...]) -> bool:
    n = len(part)
    return any(whole[i:i + n] == part for i in range(len(whole) - n + 1))


def _clean(span: str) -> str:
    # Dates first: "December 14, 1937, ten days before" has its clause break after 1937.
    return _LEAD.sub("", _canonical(span).strip().strip("\"'`*").strip())


def exact(span: str, texts: Mapping[str, tuple[str, ...]]) -> str | None:
    """The letter of the one option whose whole text ``span`` is, or None."""
    said = words(_clean(span))
    hits = [L for L, t in texts.items() if said and t == said]
    return hits[0] if len(hits) == 1 else None


def match(span: str, texts: Mapping[str, tuple[str, ...]]) -> Any:
    """The letter whose option ``span`` names, HEDGE for "X or Y", or None."""
    span = _clean(span)
    said = words(span)
    if not said or (len(said) == 1 and len(said[0]) == 1):
        return None  # nothing, or a bare letter ("the answer is D"): letters are read elsewhere
    found = exact(span, texts)
    if found:
        return found
    parts = [words(p) for p in _HEDGE_SPLIT.split(span) if p.strip()]
    named = {L for p in parts for L, t in texts.items() if t == p}
    if len(parts) > 1 and len(named) > 1:
        return HEDGE
    found = exact(_CLAUSE.split(span, maxsplit=1)[0], texts)
    if found:
        return found
    if set(said) <= _STOPWORDS:
        return None
    fragments = [L for L, t in texts.items() if _fragment_of(said, t)]
    return fragments[0] if len(fragments) == 1 else None


def text_statements(reply: str, options: Mapping[str, str],
                    has_letter: Callable[[int, int], bool]) -> list[Candidate]:
    """Answer statements ("the answer is …") whose text names exactly one option.

    ``has_letter(start, end)`` tells whether an option letter stands in that stretch of
    the reply; such a statement is read by its letter ("12/14/1937 (D)"), not here,
    unless the whole statement is one option's text ("vitamin D.").
    """
    texts = {L: words(t) for L, t in options.items()}
    found = []
    for m in _CUE.finditer(reply):
        if not committed_clause(reply, m.start()):
            continue
        span = span_after(reply, m.end())
        if has_letter(m.end(), m.end() + len(span)) and not exact(span, texts):
            continue
        letter = match(span, texts)
        if letter is not None:
            found.append(Candidate(m.start(), m.end() + len(span), letter))
    return found


def bare_option(reply: str, options: Mapping[str, str]) -> str | None:
    """The letter of a one-line reply that is exactly one option's text ("octagon")."""
    lines = [line for line in reply.splitlines() if line.strip()]
    if len(lines) != 1:
        return None
    return exact(lines[0], {L: words(t) for L, t in options.items()})


_ORDINALS = ("first second third fourth fifth sixth seventh eighth ninth tenth eleventh "
             "twelfth").split()
# Only a position named as the choice counts: "that's the second option", "the answer is
# the second option", "I pick the last choice"; not "the first option is two weeks early".
_ORDINAL = compile_lazily(
    rf"(?P<chosen>\b(?:that's|that\s+is|it's|it\s+is|answer\s+is|choose|pick|select|go\s+with)"
    rf"\s+)?(?:the\s+)?(?P<n>{'|'.join(_ORDINALS)}|last)\s+(?:option|choice|one\s+listed)\b",
    re.IGNORECASE)
_ORDINAL_REJECTED = compile_lazily(r"\s+(?:is|seems|looks)\s+(?:wrong|incorrect|false|not)\b",
                                   re.IGNORECASE)


def _apposition(reply: str, start: int, m: re.Match[str]) -> bool:
    """Whether the ordinal stands beside the answer it names: "…, the seventh option" or
    "The second choice — the limousine is the oldest", not "Consider the second option"."""
    before = reply[start:m.start()].rstrip()
    return (before.endswith((",", "—", "–", ":")) if before
            else bool(re.match(r"\s*[,—–:]", reply[m.end():])))


def ordinal_statements(reply: str, options: Mapping[str, str]) -> list[Candidate]:
    """Options named by position ("that's the second option") as answer statements."""
    letters = sorted(options)
    found = []
    end = len(reply.rstrip())
    closing = sentence_bounds(reply, max(0, end - 1), end)[0]  # where the last sentence starts
    for m in _ORDINAL.finditer(reply):
        if not committed_clause(reply, m.start()) or _ORDINAL_REJECTED.match(reply, m.end()):
            continue
        # Without "that's"/"I pick", only the closing sentence may name its choice by
        # position ("…, the seventh option in the list."), and only without a negation.
        if not m.group("chosen") and (m.start() < closing
                                      or _NOT_A_CHOICE.search(reply[closing:])
                                      or not _apposition(reply, closing, m)):
            continue
        n = m.group("n").lower()
        index = len(letters) - 1 if n == "last" else _ORDINALS.index(n)
        if index < len(letters):
            found.append(Candidate(m.start(), m.end(), letters[index]))
    return found


def named_after_letter(span: str, letter: str, options: Mapping[str, str]) -> bool:
    """Whether the text after a stated letter is another option's text ("(B) 04/01/1985"
    where (B) is 04/03/1985 and (D) is 04/01/1985): the reply contradicts itself."""
    found = exact(span, {L: words(t) for L, t in options.items()})
    return found is not None and found != letter


# A closing sentence that names an option without an answer cue: "…, so the shape is a
# triangle.", "i.e. a heptagon.", or the whole sentence an option ("Eve finished first.").
_NAMING = compile_lazily(r"(?i:\b(?:is|are|was|were|be|draws|i\.e\.|namely|that\s+is)[,:]?\s+"
                         r"(?:(?:just|simply|exactly|clearly)\s+)?)")
_CLOSING = compile_lazily(r"(?i:\b(?:so|therefore|thus|hence|i\.e\.|namely|that\s+is|meaning)\b)")
# A closing sentence that names an option without choosing it.
_NOT_A_CHOICE = compile_lazily(
    r"(?i:\b(?:not|cannot|never|whether|if|could|might|or|either)\b|n't\b)")


def concluding_option(reply: str, options: Mapping[str, str]) -> str | None:
    """The letter of the option a reply's last sentence names, when exactly one fits."""
    texts = {L: words(t) for L, t in options.items()}
    closing = sentences(reply)
    if not closing:
        return None
    last = closing[-1].rstrip(".!").strip()
    found = exact(last, texts)
    if found or _NOT_A_CHOICE.search(last) or closing[-1].endswith("?"):
        return found
    namings = list(_NAMING.finditer(last))
    if not namings:
        return None
    named = last[namings[-1].end():]
    # The whole rest is one option's text ("… the element just draws a line"); a mere
    # fragment of one needs a concluding word ("…, so the shape is a triangle").
    letter = exact(named, texts) or (match(named, texts) if _CLOSING.search(last) else None)
    return letter if isinstance(letter, str) else None
