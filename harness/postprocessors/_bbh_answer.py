"""Normalizing one free-form BBH answer (``normalize_freeform``): labels, numbers in
digits or words, bracket sequences and word lists in the forms BBH's golds use."""

from __future__ import annotations

import re
from typing import Any

from ._commit import HEDGE
from ._labels import FOREIGN_LABELS
from ._lazy_re import compile_lazily
from ._numeric import normalize_numerals, span_value, words_to_number

_HEDGE = compile_lazily(r"(?:either\s+)?(\S+)\s+or\s+(\S+)")
# A label may be followed by its reason: "yes, because …", "yes (Bob tells the truth)".
_REASON = r"(?:$|[,.;:!]|\s*[(\[]|\s+[-–—]|\s+(?:because|since|as)\b)"
_YES_NO = compile_lazily(rf"(yes|no){_REASON}")
_TRUE_FALSE = compile_lazily(rf"(true|false){_REASON}")
_VALID = compile_lazily(r"(?:the\s+argument\s+is\s+)?(not\s+)?(?:deductively\s+)?(valid|invalid)\b")
# Words before a count that a grader reads past: "a total of 12", "I have twelve fruits".
_COUNT_LEAD = compile_lazily(
    r"(?:(?:a\s+)?total\s+(?:of\s+)?|(?:i|we|you)\s+have\s+|there\s+(?:are|is)\s+"
    r"|it\s+is\s+|it's\s+|exactly\s+)+"
)
# "7, not 8" and "not 8 but 7" settle on 7 (a label or a number only, see _atom).
_CONTRAST = compile_lazily(
    r"(?P<kept>.+?)\s*,\s*(?:and\s+)?not\s+.+|not\s+.+?,?\s+but\s+(?P<but>.+)")
_LATEX = compile_lazily(r"\\(?:boxed|text|textbf|mathrm|mathbf)\s*\{([^{}]*)\}")
_BRACKETS = "()[]{}<>"


def _number(low: str) -> str | None:
    """A numeric answer in digits or words ("seven", "minus twelve"), canonical."""
    digits = normalize_numerals(low)
    if re.match(r"\s*[-$]?\s*\d", digits):
        return span_value(digits)
    words = [w for w in re.split(r"[\s-]+", re.sub(r"[^\w\s-]", " ", low)) if w]
    read = words_to_number(words)
    # Only a number answer, perhaps with a unit ("seven fruits"); not a list of words
    # that happens to start with one.
    if read and len(words) - read[1] <= 2 and not any(
            words_to_number([w]) for w in words[read[1]:]):
        return str(read[0])
    return None


def _atom(low: str) -> str | None:
    """A label (Yes/No, True/False, valid/invalid) or a number, canonical; else None."""
    for pattern, names in ((_YES_NO, {"yes": "Yes", "no": "No"}),
                           (_TRUE_FALSE, {"true": "True", "false": "False"})):
        m = pattern.match(low)
        if m:
            return names[m.group(1)]
    m = _VALID.match(low)
    if m:
        # "not valid" and "invalid" are one answer; "not invalid" is valid.
        return "invalid" if bool(m.group(1)) != (m.group(2) == "invalid") else "valid"
    number = _number(low)
    if number is None:
        lead = _COUNT_LEAD.match(low)
        number = _number(low[lead.end():]) if lead else None
    if number is None and "=" in low:
        # "A - B = 46 - 22 = 24": a computation stated as the answer gives its result.
        number = _number(low.rsplit("=", 1)[1])
    return number


def normalize_freeform(answer: str) -> Any:
    """The canonical form of one free-form BBH answer ('' when empty, HEDGE for "X or Y").

    ``Yes``/``No``, ``True``/``False`` and ``valid``/``invalid`` in any case and with
    trailing reasons ("not valid" is ``invalid``); numbers in digits, also when written
    as words or after "a total of"; "7, not 8" is 7; bracket sequences spaced
    (``'[(]'`` → ``'[ ( ]'``, the Dyck gold format); anything else a lower-case word
    list without commas, quotes, a list's final "and" or extra spaces (``'Apple,
    banana, and cherry'`` → ``'apple banana cherry'``, the word-sorting format).
    """
    value = _LATEX.sub(r"\1", _LATEX.sub(r"\1", answer))
    value = re.sub(r"\$|\\[()\[\]]", "", value).strip().lstrip(":：").strip().strip("\"'`*").strip()
    value = re.sub(r"[.。]+$", "", value).strip().strip("\"'`*").strip()
    if not value:
        return ""
    low = re.sub(r"^that\s+", "", value.lower())
    if low in FOREIGN_LABELS:
        return FOREIGN_LABELS[low]
    hedge = _HEDGE.fullmatch(low)
    if hedge and hedge.group(1) != hedge.group(2):
        return HEDGE
    atom = _atom(low)
    if atom is not None:
        return atom
    contrast = _CONTRAST.fullmatch(low)
    if contrast:
        atom = _atom(contrast.group("kept") or contrast.group("but"))
        if atom is not None:
            return atom
    if all(c in _BRACKETS or c.isspace() or c == "," for c in value):
        return " ".join(c for c in value if c in _BRACKETS)
    if "," in low:
        low = re.sub(r",\s*and\s+", ", ", low)  # "a, b, and c": the Oxford comma's "and"
    low = re.sub(r"(?<![\w])'|'(?!\w)", " ", low)  # quotes around words, not "don't"
    return " ".join(re.sub(r"[^\w\s'-]", " ", low).split())
