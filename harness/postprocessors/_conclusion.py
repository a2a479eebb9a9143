"""The number a reply concludes with when it states no answer explicitly.

Reading "She sells 9 eggs at $2, so she makes $18 a day. She started with 16 eggs.",
a grader takes 18, not the last number: the closing sentence only restates a given.
:func:`concluded_number` reads the way the grader does:

1. Sentences at the end that bring no new number and compute nothing ("She has 5 left",
   when 5 came up before as a given) restate; they are passed over. One that repeats a
   single result ("His profit is 20 dollars." after "= $20") or concludes ("Total: 9")
   is the answer.
2. The sentence reached gives its result: after its last concluding word if it has one
   ("…, so she makes $18 a day"), the number after its last ``=`` or its last number
   not seen before, whichever comes later ("so they won 15 of the 22 games" → 15).
3. A number named only to be rejected ("45, not 135", "20 would be wrong") never
   counts; neither does an aside on a line of its own in parentheses. A sentence that
   hedges ("18 or 20", "about 12–13 years") gives no answer at all.
"""

from __future__ import annotations

import re

from ._lazy_re import compile_lazily
from ._numeric import NEGATED, NUMBER, canonical, hedged
from ._text import sentences

_ASIDE_LINE = compile_lazily(r"(?m)^[ \t]*\([^\n]*\)[ \t.]*$")
_COMPUTED = compile_lazily(r"=\s*[$(]*\s*(?=-?\.?\d)")
_CONTRAST = compile_lazily(r"(?i:\bbut\s+(?:it|that|the\s+\w+)\s+(?:is|was|'s)\s+\$?)"
                           r"(?P<n>-?\d+(?:\.\d+)?)")
# "20 would be wrong": a number named to be rejected, after it.
_WRONG = compile_lazily(
    r"(-?\d+(?:\.\d+)?)\s+(?:would\s+be|is|was)\s+(?:wrong|incorrect|not\s+right)",
    re.IGNORECASE)
# "about 12–13 years", "somewhere between 12 and 13": a range, not an answer ("22 – 7 = 15"
# with a dash for minus is a computation).
_RANGE = compile_lazily(r"\b(?:about|around|approximately|roughly|somewhere|maybe)\b[^.\n]*?\d\s*"
                        r"(?:[–—-]|to)\s*\$?\d|\bbetween\s+\$?\d[\d.]*\s+and\s+\$?\d",
                        re.IGNORECASE)
_CONCLUSION = compile_lazily(
    r"(?i:\b(?:so|therefore|thus|hence|altogether|overall|in\s+total|in\s+all|all\s+told"
    r"|total(?:\s+is|:)?|that\s+means|which\s+means|this\s+means|finally)\b)")


def _numbers(text: str) -> list[str]:
    return [canonical(n) for n in NUMBER.findall(text)]


def _computed(text: str) -> set[str]:
    """Numbers ``text`` arrives at after an ``=``."""
    found = set()
    for m in _COMPUTED.finditer(text):
        number = NUMBER.match(text, m.end())
        if number:
            found.add(canonical(number.group(0)))
    return found


def _result(sentence: str, seen: set[str]) -> str | None:
    """The number a sentence arrives at, canonical: after its last concluding word
    ("…, so she makes $18 a day") if it has one, the result of the last ``=`` there
    or else the last number not seen before (else the first); without a concluding
    word the same over the whole sentence, the later of the two winning."""
    conclusions = list(_CONCLUSION.finditer(sentence))
    cut = conclusions[-1].end() if conclusions else 0
    if not NUMBER.search(sentence, cut):
        cut = 0
    part = sentence[cut:]
    seen = seen | set(_numbers(sentence[:cut]))
    picks: list[tuple[int, str]] = []
    for m in _CONTRAST.finditer(part):  # "…, but it is 26"
        picks.append((m.end(), canonical(m.group("n"))))
    equals = list(_COMPUTED.finditer(part))
    after = NUMBER.match(part, equals[-1].end()) if equals else None
    if after:
        picks.append((after.start(), canonical(after.group(0))))
    fresh = set(seen)
    for m in NUMBER.finditer(part):
        number = canonical(m.group(0))
        if number not in fresh:  # a number is new where it first comes up
            picks.append((m.start(), number))
            fresh.add(number)
    if picks:
        return max(picks)[1]
    numbers = _numbers(part)
    return (numbers[0] if conclusions else numbers[-1]) if numbers else None


def concluded_number(text: str, before: str = "") -> str | None:
    """The number ``text`` concludes with, canonical, or None when it has none.

    ``before`` is reply text that came earlier (its numbers count as seen).
    """
    text = _ASIDE_LINE.sub("", text)
    pieces = []
    for sentence in sentences(text):
        # "it is 26, not 18": 18 is rejected wherever the sentence names it.
        rejected = {canonical(n) for m in NEGATED.finditer(sentence)
                    for n in NUMBER.findall(m.group(0))}
        rejected |= {canonical(m.group(1)) for m in _WRONG.finditer(sentence)}
        kept = NEGATED.sub(" ", sentence)
        for number in rejected:
            kept = re.sub(rf"(?<![\d.]){re.escape(number)}(?![\d.]|/\d)", " ", kept)
        pieces.append(kept)
    before = NEGATED.sub(" ", before)
    seen = [set(_numbers(before))]  # seen[i]: numbers before sentence i
    computed = [_computed(before)]
    for sentence in pieces:
        seen.append(seen[-1] | set(_numbers(sentence)))
        computed.append(computed[-1] | _computed(sentence))
    for i in range(len(pieces) - 1, -1, -1):
        sentence = pieces[i]
        numbers = set(_numbers(sentence))
        if not numbers:
            continue
        if hedged(sentence) or _RANGE.search(sentence):
            return None  # "about 12–13 years", "18 or 20": no one answer
        if numbers - seen[i] or _COMPUTED.search(sentence):
            return _result(sentence, seen[i])
        if len(numbers) == 1 and (numbers <= computed[i] or _CONCLUSION.search(sentence)):
            return next(iter(numbers))  # "His profit is 20 dollars": a result restated
        # Otherwise the sentence restates givens ("She started with 16 eggs."): go on.
    found = _numbers(" ".join(pieces))
    return found[-1] if found else None


def concludes(text: str) -> bool:
    """Whether ``text`` has a concluding sentence ("So she paid $1,430 in total.")."""
    return any(_CONCLUSION.search(s) and NUMBER.search(s) for s in sentences(text))
