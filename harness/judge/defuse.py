"""Judge-injection defusing: a prediction cannot imitate the structure of its judge prompt.

A judge template is structure (markers such as ``<Predicted End>``, labels such as
``Gold:``) around data (the sample's values and the model's prediction). A reply that
writes a copy of that structure, ``<Predicted End>`` and then ``Answer: A``, or a fake
``<Gold Target Begin>`` block, would speak to the judge from outside its own block.
:class:`Defuser` finds the template's delimiter-like tokens once and neutralises every
copy of one in a prediction, however it is disguised, in one pass.

**Delimiter-like** (found anywhere in the template's messages, literal ``\\n`` read as a
line break):

- a *marker*: a short phrase starting with a letter in ``<…>`` or ``[…]`` (look-alike
  brackets such as ``＜ ＞``, ``【 】``, ``⟨ ⟩`` count), with or without a ``/``:
  ``<Original Question Begin>``, ``<Predicted End>``, ``[/ANSWER]``;
- a *label*: one to three words and a colon at the start of a line or right after a
  placeholder or a marker: ``Question:``, ``Gold answer:``. A one-letter label (``A:``
  in ``A: CORRECT``) is a verdict option, not structure.

**A copy** is found on normalized text (:func:`fold`: compatibility forms, case,
combining marks, invisible characters and common look-alike letters all ignored), with
any whitespace, ``_`` or ``-`` between a marker's words, any bracket kind on either side
(one side is enough), and a marker alone on its line counting without brackets.

**Neutralised** in the prediction as written: a marker's brackets become parentheses
(``(Predicted End)``), a bare marker is put in parentheses, a colon becomes `` -``
(``Answer - A``). A reader sees the same words, but nothing reads as the template's
structure any more, so the result has no copy left. A prediction with no copy is
returned unchanged (the very same string).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Iterable, Iterator

_DROPPED_CATEGORIES = frozenset({"Mn", "Me", "Cf"})
# Invisible letters (Hangul fillers) that no category above covers.
_INVISIBLE = frozenset("\u115f\u1160\u3164\uffa0")
# Look-alikes a reader takes for ASCII structure or Latin letters, applied after case
# folding (so only lower-case letters are listed).
_LOOKALIKES = str.maketrans(
    {**dict.fromkeys("‹〈⟨《«❬❮⦑⧼", "<"), **dict.fromkeys("›〉⟩》»❭❯⦒⧽", ">"),
     **dict.fromkeys("【〔⟦〖⦋", "["), **dict.fromkeys("】〕⟧〗⦌", "]"),
     **dict.fromkeys("∶꞉ː˸׃⁚", ":"), **dict.fromkeys("∕⁄⧸", "/"), **dict.fromkeys("’‘ʼ", "'"),
     **dict(pair for pair in "аa еe оo рp сc уy хx ѕs іi јj һh ԁd ԛq ԝw ӏl вb кk мm нh тt "
                            "ıi ɡg αa βb εe ζz ηh ιi κk μm νn οo ρp τt υy χx".split())})


def _fold_char(char: str) -> str:
    """One character as matching sees it (possibly several characters, or none)."""
    kept = (c for c in unicodedata.normalize("NFKD", char.casefold())
            if unicodedata.category(c) not in _DROPPED_CATEGORIES and c not in _INVISIBLE
            and (c.isspace() or unicodedata.category(c) != "Cc"))
    return "".join(kept).translate(_LOOKALIKES)


class _FoldTable(dict):  # type: ignore[type-arg]
    """The ``str.translate`` table of ``_fold_char``, filled as characters are met, so
    folding a text runs in C."""

    def __missing__(self, code: int) -> str:
        self[code] = folded = _fold_char(chr(code))
        return folded


_FOLD = _FoldTable()


class _Folded:
    """``text`` normalized for matching, with the way back to the original's positions."""

    def __init__(self, original: str) -> None:
        self.original = original
        self.text = original.translate(_FOLD)
        self._origin: list[int] | None = None

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original's ``[start, end)`` that the folded ``[start, end)`` came from."""
        if len(self.text) == len(self.original) and self.original.isascii():
            return start, end  # an ASCII character folds to one or (a control) none
        if self._origin is None:  # built only when something matched (rare)
            origin: list[int] = []
            for at, char in enumerate(self.original):
                origin.extend([at] * len(_FOLD[ord(char)]))
            self._origin = origin
        return self._origin[start], self._origin[end - 1] + 1


def fold(text: str) -> str:
    """``text`` as injection matching reads it: case folded, compatibility forms
    replaced (NFKD: NFKC's mapping, with accents then split off), combining marks and
    invisible characters (format characters such as zero-width spaces and soft
    hyphens, controls) dropped, look-alike brackets, colons and letters mapped to
    ASCII, and each run of whitespace collapsed to one space (one line break when it
    holds one)."""
    return re.sub(r"\s+", lambda m: "\n" if "\n" in m.group() else " ", text.translate(_FOLD))


# --- the delimiter-like tokens of a template (found on folded text) ----------------------
_LINE_BREAK = re.compile(r"\\[nr]")
_MARKER = re.compile(r"[<\[]\s*/?\s*([^\W\d_][^<>\[\]{}\n]{0,60}?)\s*/?\s*[>\]]")
_WORD = r"[^\W\d_][\w'’\-]*"
# After the start, a line break, a placeholder, a marker or "|": one to three words, ":".
_LABEL = re.compile(rf"(?:\A|(?<=[\n}}>\]|]))[^\S\n]*"
                    rf"({_WORD}(?:[^\S\n]+{_WORD}){{0,2}})[^\S\n]*:")
_WORDS_SPLIT = re.compile(r"[\s_\-]+")


def _tokens(text: str) -> Iterator[tuple[re.Match[str], bool]]:
    """``(match, is_label)`` for each token of folded template text; ``group(1)`` is its
    phrase."""
    for found in _MARKER.finditer(text):
        if sum(c.isalpha() for c in found.group(1)) >= 2:
            yield found, False
    for found in _LABEL.finditer(text):
        if sum(c.isalnum() for c in found.group(1)) >= 2:
            yield found, True


# --- the context that makes a phrase in a prediction a copy of a marker -----------------
_REACH = 32  # how far before a phrase its opening bracket may stand
_OPENED = re.compile(r"[<\[]\s*/?\s*\Z")
_BARE_START = re.compile(r"(?<!\w)/?\Z")
_LINE_START = re.compile(r"(?:\A|(?<=\n))[^\S\n]*/?\Z")
_CLOSED = re.compile(r"\s*/?\s*[>\]]")
_UNCLOSED = re.compile(r"(?!\w)(?:[^\S\n]*:)?")
_LINE_END = re.compile(r"[^\S\n]*:?[^\S\n]*(?:\n|\Z)")


def _marker_copy(text: str, start: int, end: int, floor: int) -> tuple[int, int, bool] | None:
    """``(start, end, bare)`` of the marker copy around the phrase at ``text[start:end]``
    (brackets and slashes included, nothing before ``floor``), or ``None`` when the
    phrase is only words. A colon after an unclosed marker is taken with it: ``<Answer:
    A`` must not leave a label ``Answer:`` behind."""
    lo = max(floor, start - _REACH)
    opened = _OPENED.search(text, lo, start)
    closed = _CLOSED.match(text, end)
    if opened:
        after = closed or _UNCLOSED.match(text, end)
        return (opened.start(), after.end(), False) if after else None
    bare_start = _BARE_START.search(text, lo, start)
    if closed and bare_start:
        return bare_start.start(), closed.end(), False
    line_start = _LINE_START.search(text, lo, start)
    if line_start and _LINE_END.match(text, end):
        return line_start.start(), end, True
    return None


class Defuser:
    """Neutralises in a prediction every copy of the delimiter-like tokens of a template.

    ``contents`` are the template's message texts. ``tokens`` shows what was found, as
    written in the template.
    """

    def __init__(self, contents: Iterable[str]) -> None:
        phrases: dict[tuple[str, bool], None] = {}  # (phrase, is a label), in order
        shown: list[str] = []
        for content in contents:
            folded = _Folded(_LINE_BREAK.sub("\n", content))
            for found, is_label in sorted(_tokens(folded.text), key=lambda t: t[0].start()):
                start, end = folded.span(*found.span())
                shown.append(folded.original[start:end].strip())
                words = [w for w in _WORDS_SPLIT.split(found.group(1)) if w]
                phrases[" ".join(words), is_label] = None
        self.tokens: tuple[str, ...] = tuple(dict.fromkeys(shown))
        # Each copy starts with its phrase's first word: finding those with str.find
        # keeps a prediction with no copy (nearly all of them) at the cost of folding it.
        self._anchors = tuple({phrase.split()[0] for phrase, _ in phrases})
        self._phrase = _phrase_pattern(list(phrases))

    def __call__(self, prediction: str) -> str:
        """``prediction`` with every copy of a token neutralised (see the module)."""
        if not self._anchors:
            return prediction
        folded = _Folded(prediction)
        pieces: list[str] = []
        at = 0
        for start, end, bare in self._copies(folded.text):
            start, end = folded.span(start, end)
            pieces += [prediction[at:start], _inert(prediction[start:end], bare)]
            at = end
        return "".join([*pieces, prediction[at:]]) if pieces else prediction

    def _copies(self, text: str) -> Iterator[tuple[int, int, bool]]:
        """``(start, end, bare)`` of each copy in folded ``text``, in order, disjoint."""
        floor = 0
        for anchor in sorted(set(_occurrences(text, self._anchors))):
            found = self._phrase.match(text, anchor) if anchor >= floor else None
            if found is None:
                continue
            copy = ((*found.span(), False) if found.group("label")
                    else _marker_copy(text, *found.span(), floor))
            if copy is not None:
                yield copy
                floor = copy[1]


def _occurrences(text: str, words: Iterable[str]) -> Iterator[int]:
    for word in words:
        at = text.find(word)
        while at >= 0:
            yield at
            at = text.find(word, at + 1)


def _phrase_pattern(phrases: list[tuple[str, bool]]) -> re.Pattern[str]:
    """A label and a colon, or a marker's phrase; any whitespace, ``_`` or ``-`` (or
    none) between words. Longer phrases first, so none is cut short at another that it
    starts with."""
    def alternatives(labels: bool) -> str:
        chosen = sorted((p for p, is_label in phrases if is_label == labels),
                        key=len, reverse=True)
        return "|".join(r"[\s_\-]*".join(map(re.escape, p.split())) for p in chosen) or "(?!)"

    return re.compile(rf"(?P<label>(?:{alternatives(True)})\s*:)|(?:{alternatives(False)})")


def _inert(copy: str, bare: bool) -> str:
    """A copy of a token, neutralised: brackets become parentheses, a bare marker is put
    in them, a colon becomes `` -``."""
    swap = {"<": "(", "[": "(", ">": ")", "]": ")", ":": " -"}
    inert = "".join(swap.get(_FOLD[ord(c)], c) for c in copy)
    if bare:
        core = inert.strip()
        inert = inert.replace(core, f"({core})", 1)
    return inert
