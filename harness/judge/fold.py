"""How judge-injection matching reads text: :func:`fold` and :class:`Folded`.

A reply can write its judge template's structure in disguises that a judge model still
reads as that structure. Folding undoes them, so a copy compares equal to the original:

1. HTML character references are decoded (``&lt;``, ``&#58;``, ``&colon;``), as a model
   reads them;
2. each character is put in compatibility normal form (NFKD: NFKC's mapping, then
   accents split off) *before* case folding, so ``𝐏``, ``ℙ`` and ``🄰`` become ``P``
   and ``A`` first and then ``p`` and ``a``;
3. look-alikes become the ASCII character they imitate (:func:`ascii_lookalike`);
4. case is folded; combining marks and invisible characters (format characters such as
   zero-width spaces, soft hyphens and bidi controls, control characters, fillers)
   are dropped.
"""

from __future__ import annotations

import functools
import html
import html.entities
import re
import unicodedata

_DROPPED_CATEGORIES = frozenset({"Mn", "Me", "Cf"})
# Blank characters that no category above covers: Hangul fillers, the blank braille cell.
_INVISIBLE = frozenset("\u115f\u1160\u3164\uffa0\u2800")

# Character names that say what a character imitates (Unicode's confusables table
# relates these to other look-alikes, not to ASCII, or leaves them out).
_LATIN_NAME = re.compile(
    r"(?:^|\s)LATIN (?:(?:CAPITAL|SMALL)(?: CAPITAL)? )?LETTER "
    r"(?:(?:SMALL CAPITAL|CAPITAL|OPEN|SCRIPT|DOTLESS|CLOSED|BARRED|STRETCHED) )?"
    r"([A-Z])(?: WITH .+)?$")
_NAMED = (
    (re.compile(r"\bLEFT(?:-POINTING)?\b.*\bANGLE (?:BRACKET|QUOTATION MARK)\b"
                r"|LESS-THAN (?:SIGN|BRACKET)$"), "<"),
    (re.compile(r"\bRIGHT(?:-POINTING)?\b.*\bANGLE (?:BRACKET|QUOTATION MARK)\b"
                r"|GREATER-THAN (?:SIGN|BRACKET)$"), ">"),
    (re.compile(r"\bLEFT\b.*\b(?:SQUARE|LENTICULAR|TORTOISE SHELL) BRACKET\b"), "["),
    (re.compile(r"\bRIGHT\b.*\b(?:SQUARE|LENTICULAR|TORTOISE SHELL) BRACKET\b"), "]"),
    (re.compile(r"\bCOLON$"), ":"),
    (re.compile(r"^(?!.*(?:REVERSE|BACK)).*\b(?:SOLIDUS|SLASH)$"), "/"),
    (re.compile(r"^BOX DRAWINGS (?:LIGHT|HEAVY|DOUBLE) HORIZONTAL$"), "-"),
)


def _named(char: str) -> str | None:
    name = unicodedata.name(char, "")
    if latin := _LATIN_NAME.search(name):
        return latin.group(1).lower()
    if unicodedata.category(char) == "Pd":  # every dash reads as a hyphen
        return "-"
    return next((ascii_ for pattern, ascii_ in _NAMED if pattern.search(name)), None)


def _confusable(char: str) -> str | None:
    """The ASCII prototype Unicode's confusables table (UTS #39) gives ``char``, if one."""
    # Imported on first use: loading the table (and the urllib it imports) is a good part
    # of start-up, and only a non-ASCII character no name explains needs it.
    from confusable_homoglyphs import confusables

    # The package keys right-to-left characters with left-to-right marks around them.
    glyphs = (confusables.confusables_data.get(char)
              or confusables.confusables_data.get(f"\u200e{char}\u200e") or [])
    ascii_ = {text for glyph in glyphs
              if (text := "".join(c for c in glyph["c"] if unicodedata.category(c) != "Cf"))
              and text.isascii() and text.isprintable() and not text.isspace()}
    return ascii_.pop() if len(ascii_) == 1 else None


@functools.cache
def ascii_lookalike(char: str) -> str:
    """The ASCII text (lower case) a reader takes ``char`` for, or ``char`` itself.

    From the character's name (small capitals and other Latin letter forms: ``ᴘ``,
    ``Ɛ``; angle and square brackets: ``⟨``, ``【``; colons: ``᠄``, ``⦂``; dashes), else
    from Unicode's confusables table (UTS #39: Cyrillic, Greek, Armenian, Cherokee
    letters, ``˂``, ``ᐸ``, ``։``, ``ꓽ``), else, for a lower-case letter, from its
    capital (Greek ``ε`` reads as ``e`` because ``Ε`` reads as ``E``).
    """
    if char.isascii():
        return char
    found = _named(char) or _confusable(char)
    if found is None and char.islower() and len(upper := char.upper()) == 1:
        found = _named(upper) or _confusable(upper)
    return found.lower() if found is not None else char


def _invisible(char: str) -> bool:
    category = unicodedata.category(char)
    return (category in _DROPPED_CATEGORIES or char in _INVISIBLE
            or (category == "Cc" and not char.isspace()))


def _fold_char(char: str) -> str:
    """One character as matching sees it (possibly several characters, or none)."""
    out = []
    for c in unicodedata.normalize("NFKD", char):
        if _invisible(c):
            continue
        for d in unicodedata.normalize("NFKD", ascii_lookalike(c).casefold()):
            if not _invisible(d):
                out.append(ascii_lookalike(d))
    return "".join(out)


class _FoldTable(dict[int, str]):
    """The ``str.translate`` table of ``_fold_char``, filled as characters are met, so
    folding a text runs in C."""

    def __missing__(self, code: int) -> str:
        self[code] = folded = _fold_char(chr(code))
        return folded


_FOLD = _FoldTable()
# A character reference: numeric, or named with its ";", or one of HTML's legacy names
# that need none (``&ltb`` reads as ``<b`` in a browser).
_LEGACY = sorted((n for n in html.entities.html5 if not n.endswith(";")), key=len, reverse=True)
_REFERENCE = re.compile(r"&(?:#[0-9]{1,7};?|#[xX][0-9a-fA-F]{1,6};?|[A-Za-z][A-Za-z0-9]{1,31};|"
                        rf"(?:{'|'.join(_LEGACY)}))")


class Folded:
    """``original`` folded for matching (``text``), with the way back to the original's
    positions (``span``) and its pieces (``units``)."""

    def __init__(self, original: str) -> None:
        self.original = original
        self._units: list[tuple[int, int, str]] | None = None
        self._references = "&" in original and _REFERENCE.search(original) is not None
        if self._references:
            self.text = "".join(folded for _, _, folded in self.units)
        else:
            self.text = original.translate(_FOLD)
        self._origin: list[tuple[int, int]] | None = None

    @property
    def units(self) -> list[tuple[int, int, str]]:
        """``(start, end, folded)`` for each character, or character reference, of the
        original, in order."""
        if self._units is None:
            units, at = [], 0
            for ref in _REFERENCE.finditer(self.original):
                units += [(i, i + 1, _FOLD[ord(self.original[i])]) for i in range(at, ref.start())]
                decoded = html.unescape(ref.group())
                units.append((ref.start(), ref.end(), decoded.translate(_FOLD)))
                at = ref.end()
            units += [(i, i + 1, _FOLD[ord(self.original[i])])
                      for i in range(at, len(self.original))]
            self._units = units
        return self._units

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original's ``[start, end)`` that the folded ``[start, end)`` came from."""
        if (not self._references and len(self.text) == len(self.original)
                and self.original.isascii()):
            return start, end  # an ASCII character folds to one or (a control) none
        if self._origin is None:  # built only when something matched (rare)
            self._origin = [(s, e) for s, e, folded in self.units for _ in folded]
        return self._origin[start][0], self._origin[end - 1][1]


def fold(text: str) -> str:
    """``text`` as injection matching reads it (see the module), each run of whitespace
    collapsed to one space (one line break when it holds one)."""
    return re.sub(r"\s+", lambda m: "\n" if "\n" in m.group() else " ", Folded(text).text)
