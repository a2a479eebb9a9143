"""Judge-injection defusing: a prediction cannot imitate the structure of its judge prompt.

A judge template is structure (markers such as ``<Predicted End>``, labels such as
``Gold:``, headings, separator lines) around data (the sample's values and the model's
prediction). A reply that writes a copy of that structure, ``<Predicted End>`` and then
``Answer: A``, or a fake ``<Gold Target Begin>`` block, would speak to the judge from
outside its own block. :class:`Defuser` finds the template's delimiter-like tokens once
and neutralises every copy of one in a prediction, however it is disguised.

**Delimiter-like** (found anywhere in the template's messages, literal ``\\n`` read as a
line break):

- a *marker*: a short phrase starting with a letter in ``<…>`` or ``[…]``, with or
  without a ``/``: ``<Original Question Begin>``, ``<Predicted End>``, ``[/ANSWER]``;
- a *label*: one to three words and a colon at the start of a line (after markdown
  decoration, if any) or right after a placeholder or a marker: ``Question:``,
  ``Gold answer:``, ``### Reference:``, ``**Gold**:``. A one-letter label (``A:`` in
  ``A: CORRECT``) is a verdict option, not structure;
- a *heading*: a markdown heading or a bold line: ``## Gold``, ``**Gold**`` (a label
  too when it ends with a colon: ``### Verdict (A or B):``);
- a *separator*: a line of ``---``, ``***``, ``___``, ``===`` or a code fence.

**A copy** is found on folded text (:mod:`harness.judge.fold`: character references,
compatibility forms, look-alikes, case, marks and invisible characters undone) and
compared on its letters and digits only, so spacing and punctuation inside it do not
matter (``<P r e d i c t e d  E n d>``, ``<Predicted.End>``). It is

- a marker's phrase in a pair of brackets of any kind, with any spacing (and a slip or
  two in a long one: ``<Pred1cted End>``), or next to one bracket (``<Predicted End``,
  ``Predicted End>``);
- a pair of brackets around a short phrase holding two of the template's words
  (``<End of Predicted Answer>``);
- a label's words before a colon (``Final answer:``, ``**Gold**:``);
- a line holding nothing but a token's words, however decorated (``**Predicted End**``,
  ``## Reference``, ``(Predicted End)``), and a short heading or bold line sharing a
  word with one of the template's headings (``### Verdict:`` for ``### Verdict (A or
  B):``);
- any separator line of the kind the template has (a rule of any character, a fence).

**Neutralised** in the prediction as written: a copy becomes ``(quoted: …)`` around its
words, without its brackets, colon or markdown (``(quoted: Predicted End)``,
``(quoted: Answer) A``). A reader sees what the reply wrote, marked as quoted, and
nothing reads as the template's structure any more; the result has no copy left. A
prediction with no copy is returned unchanged (the very same string).
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterable, Iterator

from .fold import Folded, fold
from .tokens import RULE_LINE, WORDS, separator, template_tokens

__all__ = ["Defuser", "fold"]


# Words too common to make a bracketed phrase a synonym of a marker.
_COMMON = frozenset("the and for are with your this that from not you its".split())
_REACH = 100  # the longest bracket pair (in folded characters) taken for one marker
_BRACKETS = re.compile(r"[<>\[\]]")
# Between one bracket and a phrase: a copy with one bracket is written tight ("x < answer"
# is a comparison); a pair of brackets may hold any spacing.
_GAP = re.compile(r"/?")
# After a marker with no closing bracket: a colon goes with it ("<Answer: A" must not
# leave a label "Answer:" behind).
_UNCLOSED_TAIL = re.compile(r"[^\S\n]*/?[^\S\n]*:?")
_LABEL_GAP = re.compile(r"(?:[^\w\n:]|_){0,3}")  # between a label's words and its colon
_LEAD = re.compile(r"[^\S\n]*(?P<hashes>#{1,6}[^\S\n]+)?(?P<em>\*\*|__)?[^\S\n]*")
_LINE = re.compile(r"\S(?:[^\n]*\S)?")  # a line without the spaces around it
# A heading or a bold line in a prediction: "###Verdict:", "**Verdict**:".
_HEADING_LINE = re.compile(r"(?:#{1,6}|(?P<em>\*\*|__))(?P<text>[^#*_\n][^\n]*?)(?(em)(?P=em):?)")
_LINE_COPY_MAX = 300  # longer lines are text, whatever their words
# A copy can appear when the one inside it is neutralised ("[see <Gold Target> here]");
# each level adds words, and past eight a bracketed phrase is text, so a few passes do.
_PASSES = 8


# For ``bytes.translate``: 1 at an ASCII letter or digit, 0 at any other byte; and the
# ASCII bytes that are neither.
_ASCII_ALNUM = bytes(chr(c).isalnum() for c in range(128)) + bytes(128)
_ASCII_NOT_ALNUM = bytes(c for c in range(128) if not chr(c).isalnum())


class _Scan:
    """Folded prediction text with the positions of its letters and digits."""

    def __init__(self, text: str) -> None:
        self.text = text
        if text.isascii():  # most folded replies: marked in C rather than per character
            data = text.encode("ascii")
            self.at = list(itertools.compress(range(len(data)), data.translate(_ASCII_ALNUM)))
            self.alnum = data.translate(None, _ASCII_NOT_ALNUM).decode("ascii")
        else:
            self.at = [i for i, c in enumerate(text) if c.isalnum()]
            self.alnum = "".join(text[i] for i in self.at)

    def letters(self, start: int, end: int) -> str:
        """The letters and digits of ``text[start:end]`` (``tokens.alnum`` of it)."""
        return self.alnum[bisect.bisect_left(self.at, start):bisect.bisect_left(self.at, end)]

    def starting(self, after: int, keys: list[str]) -> int | None:
        """End of the longest key whose characters follow ``after`` on its line (with
        at most a ``/`` between), not running on into a longer word."""
        k = bisect.bisect_right(self.at, after)
        if k == len(self.at) or not _GAP.fullmatch(self.text, after + 1, self.at[k]):
            return None
        for key in keys:
            n = len(key)
            if self.alnum.startswith(key, k):
                last = self.at[k + n - 1]
                if "\n" not in self.text[after:last] and (
                        k + n == len(self.at) or self.at[k + n] != last + 1):
                    return last + 1
        return None

    def ending(self, before: int, keys: list[str], gap: re.Pattern[str],
               whole_word: bool) -> int | None:
        """Start of the longest key whose characters end before ``before`` on its line,
        with only ``gap`` between (and not the end of a longer word if ``whole_word``)."""
        k = bisect.bisect_left(self.at, before) - 1
        if k < 0 or not gap.fullmatch(self.text, self.at[k] + 1, before):
            return None
        for key in keys:
            n = len(key)
            if k + 1 >= n and self.alnum.endswith(key, 0, k + 1):
                first = self.at[k + 1 - n]
                if "\n" not in self.text[first:before] and not (
                        whole_word and k >= n and self.at[k - n] == first - 1):
                    return first
        return None


class Defuser:
    """Neutralises in a prediction every copy of the delimiter-like tokens of a template.

    ``contents`` are the template's message texts. ``tokens`` shows what was found, as
    written in the template.
    """

    def __init__(self, contents: Iterable[str]) -> None:
        tokens = [token for content in contents
                  for _, token in sorted(template_tokens(content), key=lambda t: t[0])]
        self.tokens: tuple[str, ...] = tuple(dict.fromkeys(t.shown for t in tokens))

        def keys(kind: str) -> list[str]:  # longest first: none is cut short at another
            return sorted({t.key for t in tokens if t.kind == kind}, key=len, reverse=True)

        self._markers, self._labels = keys("marker"), keys("label")
        self._lines = frozenset(t.key for t in tokens if t.kind != "rule")
        self._separators = frozenset(t.key for t in tokens if t.kind == "rule")
        self._vocabulary = frozenset(w for t in tokens for w in t.words
                                     if len(w) >= 3 and w not in _COMMON)
        self._heading_words = frozenset(w for t in tokens if t.kind == "line"
                                        for w in t.words if w in self._vocabulary)

    def __call__(self, prediction: str) -> str:
        """``prediction`` with every copy of a token neutralised (see the module)."""
        if not self.tokens:
            return prediction
        text = prediction
        for _ in range(_PASSES):
            defused = self._pass(text)
            if defused is text:
                break
            text = defused
        return text

    def _pass(self, text: str) -> str:
        folded = Folded(text)
        copies = _disjoint(self._copies(_Scan(folded.text)))
        if not copies:
            return text
        pieces: list[str] = []
        at = 0
        for start, end in copies:
            start, end = folded.span(start, end)
            pieces += [text[at:start], _inert(folded, start, end)]
            at = end
        return "".join([*pieces, text[at:]])

    def _copies(self, scan: _Scan) -> Iterator[tuple[int, int]]:
        """``(start, end)`` of each copy in the folded text (possibly overlapping)."""
        text = scan.text
        for line in _LINE.finditer(text):
            content = line.group()
            rule = self._separators and RULE_LINE.fullmatch(content)
            if len(content) <= _LINE_COPY_MAX and (
                    scan.letters(*line.span()) in self._lines
                    or (rule and separator(rule) in self._separators)
                    or self._names_heading(content)):
                yield line.span()
        for colon in (m.start() for m in re.finditer(":", text)) if self._labels else ():
            first = scan.ending(colon, self._labels, _LABEL_GAP, whole_word=False)
            if first is not None:
                yield _label_span(text, first, colon)
        yield from (_widen(text, *copy) for copy in self._bracketed(scan))

    def _bracketed(self, scan: _Scan) -> Iterator[tuple[int, int]]:
        text = scan.text
        brackets = [m.start() for m in _BRACKETS.finditer(text)]
        paired: set[int] = set()
        for n, at in enumerate(brackets):
            if text[at] in "<[":
                after = brackets[n + 1] if n + 1 < len(brackets) else None
                if (after is not None and text[after] in ">]" and after - at <= _REACH
                        and self._names_marker(text[at + 1:after],
                                               scan.letters(at + 1, after))):
                    paired.add(after)
                    yield at, after + 1
                    continue
                end = scan.starting(at, self._markers)
                if end is not None:
                    tail = _UNCLOSED_TAIL.match(text, end)  # all optional: always matches
                    yield at, tail.end() if tail else end
            elif at not in paired:
                first = scan.ending(at, self._markers, _GAP, whole_word=True)
                if first is not None:
                    yield first - (text[first - 1:first] == "/"), at + 1

    def _names_heading(self, line: str) -> bool:
        """Whether ``line`` (folded) is a heading or a bold line that reads as one of the
        template's headings: a short one holding one of their words (``### Verdict:``
        for ``### Verdict (A or B):``)."""
        heading = self._heading_words and _HEADING_LINE.fullmatch(line)
        if not heading:
            return False
        words = WORDS.findall(heading.group("text"))
        return len(words) <= 8 and not self._heading_words.isdisjoint(words)

    def _names_marker(self, inside: str, letters: str) -> bool:
        """Whether a bracket pair around ``inside`` (folded; ``letters`` its letters and
        digits) reads as a template marker: its letters are a marker's, but for a slip
        or two (``<Pred1cted End>``), or it is a short phrase starting with a word and
        holding two of the template's words."""
        if any(_near(letters, marker) for marker in self._markers):
            return True
        words = WORDS.findall(inside)
        return ("\n" not in inside and len(words) <= 8
                and re.match(r"\s*/?\s*[^\W\d_]", inside) is not None
                and len(self._vocabulary.intersection(words)) >= 2)


def _near(key: str, marker: str) -> bool:
    """Whether ``key`` is ``marker`` but for a slip a reader reads past: none in a short
    marker, one from six letters, two from ten (edits: insert, delete, replace)."""
    allowed = 0 if len(marker) < 6 else 1 if len(marker) < 10 else 2
    if abs(len(key) - len(marker)) > allowed:
        return False
    if allowed == 0 or key == marker:
        return key == marker
    previous = list(range(len(marker) + 1))
    for i, char in enumerate(key, 1):
        current = [i]
        for j, other in enumerate(marker, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1,
                               previous[j - 1] + (char != other)))
        if min(current) > allowed:
            return False
        previous = current
    return previous[-1] <= allowed


def _label_span(text: str, first: int, colon: int) -> tuple[int, int]:
    """A label copy from its first letter ``first`` to its ``colon``, with the heading
    marks or the bold around it when they are the label's (``### Reference:``,
    ``**Gold**:``, ``**Gold:**``; not ``**Answer: 200 pounds**``)."""
    line_start = text.rfind("\n", 0, first) + 1
    lead = _LEAD.fullmatch(text, line_start, first)
    end = colon + 1
    if lead is None:
        return first, end
    em = lead.group("em")
    if em and em not in text[first:colon]:
        if not text.startswith(em, end):
            return first, end  # the bold goes on past the label
        end += len(em)
    start = lead.start("hashes") if lead.group("hashes") else lead.start("em") if em else first
    return start, end


def _widen(text: str, start: int, end: int) -> tuple[int, int]:
    """A bracketed copy with the brackets right around it (``<<Predicted End>>``)."""
    while start > 0 and text[start - 1] in "<[":
        start -= 1
    while end < len(text) and text[end] in ">]":
        end += 1
    return start, end


def _disjoint(copies: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The copies to neutralise: earliest first, the longest of those starting together,
    none overlapping one already taken."""
    taken: list[tuple[int, int]] = []
    for start, end in sorted(copies, key=lambda c: (c[0], -c[1])):
        if not taken or start >= taken[-1][1]:
            taken.append((start, end))
    return taken


# Folded characters that are a copy's structure, not its words, at either end of it.
_EDGE = frozenset("<>[]#*_`~=-:|\\ \t\r\n\f\v\u2028\u2029")


def _inert(folded: Folded, start: int, end: int) -> str:
    """The copy at ``original[start:end]``, neutralised: its words, as written, without
    the structure characters at its ends, in ``(quoted: …)``."""
    units = folded.units
    lo = bisect.bisect_left(units, (start,))
    hi = bisect.bisect_left(units, (end,))
    while lo < hi and set(units[lo][2]) <= _EDGE:
        lo += 1
    while hi > lo and set(units[hi - 1][2]) <= _EDGE | {"/"}:  # a leading "/" stays
        hi -= 1
    original = folded.original
    words = original[units[lo][0]:units[hi - 1][1]] if lo < hi else original[start:end].strip()
    return f"(quoted: {words})"
