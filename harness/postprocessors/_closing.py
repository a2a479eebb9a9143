"""The answer a MATH-style reply states in its closing line when it boxes nothing.

"Rosa is 49 years old.", "So $x = 6$.", "Polar coordinates: (3, π/2)", "因此 $x=5$。",
"The function is even." A careful grader reads these as the answer; a reply that
trails off, hedges ("$x = 1$ or $x = 5$", "It could also be $5$"), supposes, rejects
("$x$ cannot be $5$"), plans ("let's try $x = 5$") or ends on a step is no answer.
:func:`closing_answer` returns the answer text for math-verify, or None.
"""

from __future__ import annotations

import re

from ._lazy_re import compile_lazily
from ._numeric import normalize_numerals, words_to_digits
from ._text import HORIZONTAL_RULE, looks_truncated, sentences

_MARKUP = compile_lazily(r"\*\*|__|`")
_LEAD = compile_lazily(r"^[\s>#*+\-•]+")
_CLOSING_PUNCT = compile_lazily(r"[\s.。!,，:：]+$")
_MATH_AT_END = compile_lazily(r"(?:\$\$?([^$]+)\$\$?|\\\((.+?)\\\)|\\\[(.+?)\\\])$", re.DOTALL)
_HEDGE = compile_lazily(r"\bor\b|或|\bou\b|\bo\b|\boder\b|\bили\b")
# A closing line that does not commit to an answer: a hedge or hypothetical ("could
# also be", "Suppose $x = 5$"), a rejection ("cannot be $5$"), a plan or a question
# ("let's try", "we need to check whether"), a step ("Step 1: …", "1 case left").
_UNCOMMITTED = compile_lazily(
    r"(?i:\b(?:could|might|may|would|perhaps|maybe|possibly|probably|suppose|supposing"
    r"|assume|assuming|if|let's|let\s+us|try|trying|whether|need\s+to|check|verify"
    r"|left|remaining\s+to|next|not|cannot|never|no\s+longer)\b|n't\b)|如果|假设|不是|不能")
_UNCOMMITTED_LINE = compile_lazily(r"(?i:^step\s*\d|^si\b|^suppose\b|^if\b)|\?\s*$")
# Where the clause that states the closing value begins: "…, not $+1$, so the sum is $-50$".
_CLAUSE = compile_lazily(r"[,;:]\s|\b(?:so|thus|hence|therefore)\b|所以|因此")
_FENCE = compile_lazily(r"^\s*```")
# The verb that introduces the answer in a closing sentence.
_COPULA = compile_lazily(
    r"(?i:\b(?:is|are|was|were|equals|must\s+be|should\s+be|will\s+be|has|have|gives|"
    r"becomes|est|es|ist|vaut|равно)\b|'s\b|[=:：]|为|是)")
_NUMBER = compile_lazily(r"-?\d+(?:\.\d+)?(?:\s*/\s*\d+)?")
# What may follow a number as its unit ("49 years old", "3 units", "2000 calories").
_UNIT_TAIL = compile_lazily(r"^\s*(?:[A-Za-z°%$]+(?:\s+[A-Za-z]+){0,3})?$")
_WORD_ANSWER = compile_lazily(r"^(?:(?:facing|due|an?|the)\s+)?([A-Za-z]+)$", re.IGNORECASE)
#: Words MATH-style answers are made of (``\text{east}``, ``\text{even}``); any other
#: word after "is" ("The years were hard.") is prose, not an answer.
WORD_ANSWERS = frozenset(
    "even odd neither both none north south east west northeast northwest southeast "
    "southwest yes no true false undefined infinite circle ellipse parabola hyperbola line "
    "plane sphere cylinder cone point empty".split())
_VARIABLE_EQUALS = compile_lazily(r"^\s*[A-Za-z]\s*=")


def _last_sentence(reply: str) -> str:
    """The closing sentence, from the last line that is not a code fence or a rule."""
    lines = [line for line in reply.splitlines()
             if line.strip() and not _FENCE.match(line) and not HORIZONTAL_RULE.match(line)]
    return sentences(lines[-1])[-1] if lines else ""


def _math_value(math: str) -> str:
    """The value a math span ends on: ``x = 6`` stays (math-verify reads an equation in
    one variable), ``5x = 30 … 35 \\cdot 6 = 210`` gives its last right-hand side."""
    math = math.strip()
    if "=" in math and not _VARIABLE_EQUALS.match(math) and not re.search(r"[<>]|\\[lg]e", math):
        return math.rsplit("=", 1)[1].strip()
    return math


def closing_answer(reply: str) -> str | None:
    """The answer stated by the reply's closing line, or None (see the module docstring)."""
    if looks_truncated(reply):
        return None
    line = _CLOSING_PUNCT.sub("", _LEAD.sub("", _MARKUP.sub("", _last_sentence(reply))))
    clauses = [m.end() for m in _CLAUSE.finditer(line)]
    clause = line[clauses[-1]:] if clauses else line
    if (not line or len(line) > 160 or _HEDGE.search(line) or _UNCOMMITTED_LINE.search(line)
            or _UNCOMMITTED.search(clause)
            or "\\boxed" in line or line.count("{") != line.count("}")):
        return None  # a box left open is a cut-off reply, not a closing statement
    math = _MATH_AT_END.search(line)
    if math:
        return _math_value(next(g for g in math.groups() if g is not None)) or None
    copulas = list(_COPULA.finditer(line))
    if not copulas:
        return None  # "we now sum the 5 terms": a step, not a statement of the answer
    rest = line[copulas[-1].end():].strip()
    if not rest:
        return None
    if len(rest) <= 60 and re.search(r"[()\[\]\\^√π{]", rest) and not re.search(
            r"(?<![\\A-Za-z])[A-Za-z]{4,}", rest):
        return rest  # "(3, π/2)", "3\sqrt{13}"
    numeric = normalize_numerals(words_to_digits(rest))
    numbers = _NUMBER.findall(numeric)
    if len(numbers) == 1:
        number = _NUMBER.search(numeric)
        if number and _UNIT_TAIL.match(numeric[number.end():]):
            return number.group(0).replace(" ", "")
        return None
    word = _WORD_ANSWER.match(rest)
    if not numbers and word and word.group(1).lower() in WORD_ANSWERS:
        return f"\\text{{{word.group(1).lower()}}}"
    return None
