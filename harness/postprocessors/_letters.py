"""Finding option letters that stand as a choice, not as part of a word.

Two kinds of evidence, strongest first:

- *statements*: "the answer is (B)", "Answer: B", "I choose B", "答案是B",
  "option B is correct", ``\\boxed{B}``;
- *tokens*: a letter shaped like an option on its own: ``(B)``, ``[B]``, ``B)``,
  ``B.``/``B:`` before a space, ``**B**``, "option B", or a line that is only ``B``.

A capital inside a word ("Clearly", "Answer"), an article ("A lot") or a pronoun
("I think") is neither, so it is never read as a choice.
"""

from __future__ import annotations

import functools
import re
import string
from dataclasses import dataclass

from ._commit import HEDGE, RETRACTION, WITHDRAWN, Candidate, commit, committed_clause, rejects
from ._lazy_re import compile_lazily
from ._text import FOREIGN_CUE, LINE_END, span_after

_MARKDOWN = [
    # **B**, *B*, `B`, $B$, $\text{B}$ are emphasis around one letter: make them (B).
    (re.compile(r"\*{1,2}\s*\(?([A-Za-z0-9])\)?\s*\*{1,2}"), r"(\1)"),
    (re.compile(r"`\s*\(?([A-Za-z0-9])\)?\s*`"), r"(\1)"),
    (re.compile(r"\$\s*(?:\\text(?:bf)?\{\s*)?\(?([A-Z])\)?\s*\}?\s*\$"), r"(\1)"),
    (re.compile(r"\*\*|__|`"), ""),
]


def unmark(text: str) -> str:
    """Markdown/LaTeX emphasis around a single letter becomes ``(X)``; other ``**`` go."""
    for pattern, repl in _MARKDOWN:
        text = pattern.sub(repl, text)
    return text


@dataclass(frozen=True, slots=True)
class Token:
    """An option-shaped letter: position, the letter, and its shape (``(``, ``)``, ``.`` …)."""

    start: int
    end: int
    letter: str
    shape: str


def _letter_class(options: str) -> str:
    return "[" + re.escape("".join(sorted(set(string.ascii_uppercase) | set(options)))) + "]"


_CUE = (
    r"(?:(?i:\b(?:the\s+)?(?:final\s+|correct\s+|right\s+|best\s+)?(?:answer|option|choice)"
    r"\s*(?:is|would\s+be|should\s+be|must\s+be|will\s+be|=)\s*[:：]?"
    r"|\b(?:final\s+)?answer[\"']?\s*[:：]\s*[\"']?"
    r"|\bI\s*(?:would\s+|will\s+|'ll\s+|'d\s+)?(?:choose|pick|select|go\s+with)"
    r"|答案\s*(?:应该|应)?\s*选|[故应]选)|" + FOREIGN_CUE + ")"
)
# What may follow a bare letter after a cue: "answer is B.", "answer is B because …".
_BARE_END = (r"(?=[ \t]*$|[.,;:!?)\]\"']|\s+(?i:because|since|as|which|for|with)\b|\s+[-–—]"
             r"|\s*[\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7af])")
_SHAPES = {"p": "(", "b": "[", "o": "option", "r": ")", "d": ".", "l": "line"}


@functools.lru_cache(maxsize=64)
def _patterns(options: str) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    L = _letter_class(options)
    statement = re.compile(
        rf"{_CUE}\s*(?:(?P<hedge>(?i:either|both))\s+)?(?:(?i:option|choice)\s*|选项\s*)?"
        rf"(?:\(\s*(?P<s1>{L})\s*\)|\(\s*(?P<s10>[a-z])\s*\)(?=[ \t]*(?:[.,;!)]|$))"
        rf"|\[\s*(?P<s2>{L})\s*\]|(?P<s3>{L}){_BARE_END})"
        rf"|(?i:option|choice)\s+\(?(?P<s4>{L})\)?\s+"
        rf"(?i:is\s+(?:the\s+)?(?:correct|right|best|answer))"
        rf"|(?:\(\s*(?P<s5>{L})\s*\)|(?:^|(?<=[.!?]\s)|(?<=\n))[ \t]*(?P<s9>{L}))\s+"
        rf"(?i:is\s+(?:the\s+)?(?:correct|right)(?:\s+(?:answer|option|choice|one))?)"
        rf"(?=[ \t]*(?:[.!,;]|$))"
        rf"|\\boxed\s*\{{\s*(?:\\text(?:bf)?\s*\{{\s*)?\(?\s*(?P<s6>{L})\s*\)?\s*\}}?\s*\}}"
        rf"|\\boxed\s+(?P<s7>{L})(?![\w'])"
        rf"|(?P<s8>{L})\s*是正确(?:答案|的)",
        re.MULTILINE,
    )
    token = re.compile(
        rf"(?<![\w(\[])(?:\(\s*(?P<p>{L})\s*\)|\[\s*(?P<b>{L})\s*\]"
        rf"|(?i:option|choice)\s+(?P<o>{L})(?![\w'])|(?P<r>{L})\)"
        rf"|(?P<d>{L})[.:](?=\s|$)|^[ \t]*(?P<l>{L})[ \t]*$)",
        re.MULTILINE,
    )
    maybe = r"(?i:possibly|maybe|perhaps|probably)\s+"
    item = rf"[(\[]?{L}[)\]]?(?![\w'])"
    hedge = re.compile(
        rf"(?<![\w'])[(\[]?(?P<x>{L})[)\]]?\s*(?:"
        # "B or C", "A and B", "A/B", "A (or B)", "A or maybe B"
        rf"(?:\(\s*)?(?:,?\s*(?i:or|and|and/or|&)\s+(?:{maybe})?|/\s*)"
        rf"(?:(?i:option|choice)s?\s+)?[(\[]?(?P<y>{L})[)\]]?(?![\w'])"
        # "A, maybe B"
        rf"|,\s*{maybe}[(\[]?(?P<y2>{L})[)\]]?(?![\w'])"
        # a list ending its sentence: "A, C.", "(A), (B), or (C)." (not "(C), (A) and (B)
        # are wrong", "A, I think" or "(D), E. coli …")
        rf"|,\s*[(\[]?(?P<y3>{L})[)\]]?(?![\w'])"
        rf"(?=(?:\s*,?\s*(?:(?i:or|and)\s+)?{item})*\s*(?:[.;!?](?!\S)(?!\s+[a-z])|$)))"
    )
    return statement, token, hedge


def _hedged(text: str, start: int, end: int, options: str) -> bool:
    """True when the letter at ``start:end`` is one side of "B or C" / "A and B" / "A/B"."""
    hedge = _patterns(options)[2]
    lo = max(0, start - 40)
    for m in hedge.finditer(text, lo, min(len(text), end + 40)):
        other = m.group("y") or m.group("y2") or m.group("y3")
        if m.group("x") != other and m.start() <= start and end <= m.end() + 1:
            # "(A) and (B) is wrong" names B only to rule it out: not a hedge.
            return not _REJECTED.match(text, m.end())
    return False


def statements(text: str, options: str) -> list[Candidate]:
    """Every committed answer statement in ``text``, each valued by its letter or HEDGE.

    The letter is any capital (not only ``options``) so that "the answer is E" with
    options ABCD is still read as the model's answer, an invalid one.
    """
    found = []
    for m in _patterns(options)[0].finditer(text):
        if not committed_clause(text, m.start()):
            continue
        name = next(k for k in ("s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10")
                    if m.group(k))
        s, e = m.span(name)
        # "(b)." closing a cue is option B; a lower-case letter is read nowhere else
        # ("Answer: (a) the path closes …" enumerates points).
        letter = m.group(name).upper()
        value = HEDGE if m.group("hedge") or _hedged(text, s, e, options) else letter
        found.append(Candidate(m.start(), m.end(), value))
    if found:
        found = sorted(found + _retractions(text, found, options), key=lambda c: c.start)
    return found


# What a change of mind may say besides the new option: "Just kidding, it is (A).",
# "Wait, actually it's (A)", "Oops, make that C". Anything more ("Hmm, actually (A) might
# look tempting, but …") is a re-check, not a new answer.
_RESTATED = compile_lazily(
    r"[\s,.!…-]*(?:(?i:so|then|no)[\s,]+)?"
    r"(?:(?i:it|that)(?:'s|’s|\s+is|\s+should\s+be|\s+must\s+be|\s+has\s+to\s+be)"
    r"|(?i:make\s+(?:it|that)|I\s+(?:choose|pick|mean)))?\s*"
    r"(?:(?i:option|choice)\s+)?[(\[]?(?P<letter>[A-Z])[)\]]?"
    r"(?:\s*(?:,|/|(?i:or|and))\s*[(\[]?(?P<other>[A-Z])[)\]]?)?[ \t]*[.!]?[ \t]*")
# Or the change of mind reasons its way to an option that closes its line: "No wait,
# re-reading, tomorrow would be 12/25/2006, so (E)."
_CONCLUDED = compile_lazily(
    r"\b(?i:so|thus|therefore|hence|then)\b[\s,]*"
    r"(?:(?i:it|that)(?:'s|’s|\s+is|\s+should\s+be|\s+must\s+be)\s*)?"
    r"(?:(?i:option|choice)\s+)?[(\[](?P<letter>[A-Z])[)\]]"
    r"(?:\s*(?:,|/|(?i:or|and))\s*[(\[]?(?P<other>[A-Z])[)\]]?)?[ \t]*[.!]?[ \t]*$")


def _retractions(text: str, stated: list[Candidate], options: str) -> list[Candidate]:
    """After an answer statement, a visible change of mind whose sentence only names an
    option ("Just kidding, it is (A).", "Wait, actually it's (A)") or whose line
    concludes with one ("No wait, re-reading, … so (E)."): the new answer, as a
    correction of the earlier one (a hedge when it names two)."""
    found = []
    for m in RETRACTION.finditer(text, stated[0].start):
        rest = span_after(text, m.end(), LINE_END)
        restated = _RESTATED.fullmatch(rest) or _CONCLUDED.search(rest)
        if restated and restated.group("letter") in options:
            letter, other = restated.group("letter", "other")
            found.append(Candidate(m.start(), m.end() + len(rest),
                                   HEDGE if other and other != letter else letter))
        elif rejects(m.group(0)):
            found.append(Candidate(m.start(), m.end() + len(rest), WITHDRAWN))
    return found


def tokens(text: str, options: str) -> list[Token]:
    """Option-shaped letters from ``options`` in text order, minus negated mentions
    ("not (E)", "(A) is wrong", the "(F)" of "(B), not (E) or (F)")."""
    out = []
    rejected_until = -1
    for m in _patterns(options)[1].finditer(text):
        name = m.lastgroup or ""
        letter = m.group(name)
        if (letter not in options or m.start() < rejected_until or _negated(text, m.start())
                or _REJECTED.match(text, m.end())):
            continue
        if after := REJECTED_AFTER.match(text, m.end()):
            rejected_until = after.end()
        out.append(Token(m.start(), m.end(), letter, _SHAPES[name]))
    return out


_NEGATION = compile_lazily(
    r"\b(?:not|than|except|unlike|eliminat\w*|rule\s+out|ruled\s+out|excluding|exclude|"
    r"besides|nor|neither|between|vs\.?|versus|over)\s+$",
    re.IGNORECASE,
)


# "(A) is wrong", "B seems too small": the option is mentioned to be ruled out.
_REJECTED = compile_lazily(
    r"[)\]]?\s+(?i:is|are|was|seems|looks|would\s+be|must\s+be)\s+(?i:also\s+|clearly\s+)?"
    r"(?i:incorrect|wrong|false|invalid|impossible|eliminated|ruled\s+out|out|too\s+\w+"
    r"|not\s+(?:correct|right|the\s+answer|possible|valid))\b"
)


# "(B), not (E)": options named after a letter only to be rejected, as "14, not 12"
# rejects a number (see _numeric.NEGATED); the letter before them still ends its sentence.
REJECTED_AFTER = compile_lazily(
    r"[ \t]*,?[ \t]*(?i:and[ \t]+)?(?i:not|rather[ \t]+than|instead[ \t]+of)[ \t]+"
    r"(?:(?i:option|choice)[ \t]+)?[(\[]?[A-Z][)\]]?"
    r"(?:[ \t]+(?i:or|nor|and)[ \t]+[(\[]?[A-Z][)\]]?)*(?![\w'])")
"""Options rejected right after an option token: ", not (E)", " rather than (C) or (D)"."""


def _negated(text: str, start: int) -> bool:
    return bool(_NEGATION.search(text[max(0, start - 30):start]))


def value(token: Token, text: str, options: str) -> object:
    """The token's letter, or HEDGE when it is one of several letters offered together."""
    return HEDGE if _hedged(text, token.start, token.end, options) else token.letter


def resolve_statements(text: str, options: str) -> tuple[bool, str]:
    """(whether ``text`` states an answer at all, the committed valid letter or '')."""
    cands = statements(text, options)
    if not cands:
        return False, ""
    letter = commit(cands, text)
    return True, letter if isinstance(letter, str) and letter in options else ""
