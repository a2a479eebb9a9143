"""``math-boxed``: the final ``\\boxed{…}`` answer of a MATH-style reply, and its helpers."""

from __future__ import annotations

import json
import re
from fractions import Fraction
from typing import Any

from ._boxed import brace_pairs, find_boxed
from ._closing import closing_answer
from ._commit import (
    DECLARED,
    HEDGE,
    RETRACTION,
    TAKEN_BACK,
    WITHDRAWN,
    Candidate,
    box_rank,
    commit,
    committed_clause,
    rank,
    rejects,
)
from ._lazy_re import compile_lazily
from ._numeric import normalize_numerals, retraction_value
from ._registry import POSTPROCESSORS
from ._text import (
    FOREIGN_CUE,
    appeal_proof,
    as_text,
    cut_inside_answer,
    inline_answer_headings,
    looks_truncated,
    prepare,
    span_after,
)


def last_boxed_only_string(text: Any) -> str | None:
    """The last ``\\boxed{…}`` (or ``\\fbox{…}``) with its wrapper, or None (OpenCompass)."""
    raw = as_text(text)
    if not raw:
        return None
    boxes = find_boxed(raw)
    return raw[boxes[-1][0]:boxes[-1][1]] if boxes else None


def extract_boxed_answer(text: Any, strip_double_curly_brace: bool = False) -> str | None:
    """The content of the last ``\\boxed{…}``, or None (OpenCompass).

    With ``strip_double_curly_brace``, ``\\boxed{{5}}`` gives ``5``, not ``{5}``.
    """
    raw = as_text(text)
    boxes = find_boxed(raw) if raw else []
    if not boxes:
        return None
    content = boxes[-1][2].strip()
    if strip_double_curly_brace and brace_pairs(content).get(0) == len(content) - 1:
        content = content[1:-1].strip()
    return content


_LATEX_NOISE = compile_lazily(r"\s+|\\left|\\right|\\[!,;: ]|\\displaystyle")


def _latex_key(s: str) -> str:
    return _LATEX_NOISE.sub("", re.sub(r"\\[dt]frac", r"\\frac", s))


_SIMPLE_NUMBER = compile_lazily(
    r"(?P<sign>-?)(?:(?P<whole>\d+)?\\frac\{(?P<num>\d+)\}\{(?P<den>\d+)\}"
    r"|(?P<dec>\d+(?:\.\d+)?|\.\d+))"
)


def _as_fraction(s: str) -> Fraction | None:
    """The value of a plain number, fraction or mixed number in LaTeX, else None."""
    m = _SIMPLE_NUMBER.fullmatch(_latex_key(s).replace("{,}", ""))
    if not m:
        return None
    if m.group("dec") is not None:
        value = Fraction(m.group("dec"))
    elif int(m.group("den")) == 0:
        return None
    else:
        value = int(m.group("whole") or 0) + Fraction(int(m.group("num")), int(m.group("den")))
    return -value if m.group("sign") else value


def same_latex(a: str, b: str) -> bool:
    """Whether two boxed answers are the same answer.

    Equal ignoring spacing and sizing commands, or plain numbers of equal value
    (``15\\frac{39}{40}`` and ``\\frac{639}{40}``, ``0.5`` and ``\\frac{1}{2}``).
    Anything richer is compared as written: two different expressions are a failure.
    """
    if _latex_key(a) == _latex_key(b):
        return True
    fa, fb = _as_fraction(a), _as_fraction(b)
    return fa is not None and fa == fb


def _clean(content: str) -> str:
    content = content.replace("**", "").strip().strip("\"'").strip()
    content = re.sub(r"^\$+|\$+$", "", content).strip()
    return content[:-1].rstrip() if content.endswith(".") else content


_FINAL = compile_lazily(
    r"(?i:\b(?:the\s+)?(?:final(?:\s+answer)?\s*[:：]|final\s+answer\s+is\s*[:：]?)"
    r"|\b(?:the\s+)?answer[\"']?\s*(?:is|:)\s*[:：]?\s*[\"']?"
    r"|\bI(?:'ll|\s+will|'d|\s+would)\s+(?:go|stick)\s+with\b)|" + FOREIGN_CUE
)
# LaTeX answers may contain ! and ?-free text only rarely, but "3!" is a factorial:
# the statement ends at a newline or a full stop only.
_STATEMENT_END = compile_lazily(r"\n|\.(?=\s|$)|。")
_MATH_DELIMS = compile_lazily(r"\$+|\\\(|\\\)|\\\[|\\\]")
# Where an answer stated in prose stops: its reason ("15, because …", "15 since …").
_REASON = compile_lazily(r",\s+(?=[A-Za-z]{3,})|\s+(?:because|since|as|which|instead|for)\b")
# A short answer: LaTeX and symbols, at most a word or two of three letters or more.
_PROSE_WORD = compile_lazily(r"(?<![\\A-Za-z])[A-Za-z]{4,}")
# "Our answer is correct": a verdict on the answer, not one.
_JUDGEMENT = compile_lazily(r"(?i:(?:not\s+|in)?(?:correct|right|wrong|valid|consistent|confirmed|"
                            r"verified|reasonable|plausible|as\s+follows|below|above))")
# Boxes a model copies from the problem or leaves as a blank: not answers.
_PLACEHOLDER = compile_lazily(
    r"\s*(?:\\(?:phantom|hphantom|vphantom)\s*\{.*\}|\?+|\\square|\\Box|\\blacksquare|_+|\\_+"
    r"|\.\.\.|\\ldots|\\dots|\\quad|\\qquad|\\text\{\s*\?*\s*\})?\s*", re.DOTALL)
# What may sit between boxes that together give one multi-part answer ("\boxed{2} and
# \boxed{-3}", "x_1 = \boxed{2}, x_2 = \boxed{-3}").
_JOINED = compile_lazily(
    r"(?:\s|\$|\\\(|\\\)|\\quad|\\qquad|,|;|&|\\text\{\s*(?:and|,)\s*\}|\band\b"
    r"|[A-Za-z](?:_\{?\w+\}?)?\s*=)*")
_OR = compile_lazily(r"\bor\b|\\text\{\s*or\s*\}|\\vee\b")
# An answer followed by a second one offered as likely too ("$\frac56$, maybe $\frac25$."),
# math or a number that ends the sentence (not "probably (as symmetry suggests)" or
# "perhaps 12 is the smallest such value").
_MAYBE = compile_lazily(
    r"\s*\$?\s*,\s*(?:maybe|perhaps|possibly|probably)\s+"
    r"(?P<other>\$[^$]+\$|\\\(.+?\\\)|-?\.?\d[\d,.]*)\s*(?:[.;!?](?!\d)|$)",
    re.IGNORECASE)


# A number followed by another in parentheses: "$\frac56$ (or $\frac25$)".
_OR_ALSO = compile_lazily(
    r"\s*\$?\s*\(\s*or\s+(?P<other>\$[^$]+\$|\\\(.+?\\\)|-?\.?\d[\d,./]*)\s*\)",
    re.IGNORECASE)


def _offers_another(text: str, pos: int, value: str) -> bool:
    """Whether ``value``, ending at ``pos`` in ``text``, is followed by a different one
    offered as likely too ("…, maybe $\frac25$."), or is a number followed by a different
    number in parentheses ("$\frac56$ (or $\frac25$)"; "(or $0.5$)" after ``\frac12``
    restates it, and richer expressions are not compared): a hedge."""
    m = _MAYBE.match(text, pos)
    if m is not None:
        return not same_latex(_clean(_MATH_DELIMS.sub("", m["other"])), value)
    m = _OR_ALSO.match(text, pos)
    if m is None:
        return False
    other = _clean(_MATH_DELIMS.sub("", m["other"]))
    return _as_fraction(value) is not None and _as_fraction(other) is not None \
        and not same_latex(other, value)


def _answer_value(span: str) -> Any:
    """The answer a prose statement gives ("$\\frac34$, since …" → ``\\frac34``),
    HEDGE for "2 or 3", or None when the statement is prose, not an answer."""
    cut = _REASON.split(span, maxsplit=1)[0]
    if _OR.search(cut):
        return HEDGE
    value = _clean(_MATH_DELIMS.sub("", cut))
    if value and _offers_another(span, len(cut.rstrip(" $")), value):
        return HEDGE
    if "\\boxed" in value or value.count("{") != value.count("}"):
        return None  # a box left open: the reply was cut off
    if not value or len(value) > 120 or _JUDGEMENT.fullmatch(value) or len(_PROSE_WORD.findall(
            re.sub(r"\\(?:text|mathrm|textbf|mbox)\{[^{}]*\}", "", value))) > 1:
        return None
    return value


def _statements(reply: str, boxes: list[tuple[int, int, str]]) -> list[Candidate]:
    """Answers stated in prose ("The final answer is $15$."), each unless a box in the
    same sentence carries it (then the box is the answer)."""
    cands = []
    for m in _FINAL.finditer(reply):
        if not committed_clause(reply, m.start()):
            continue
        span = span_after(reply, m.end(), _STATEMENT_END)
        end = m.end() + len(span)
        if any(m.end() <= s < end for s, _, _ in boxes):
            continue
        value = _answer_value(span)
        if value is not None:
            cands.append(Candidate(m.start(), end, value,
                                   final=rank(reply, m.start(), end, DECLARED)))
    return cands


def _box_answers(reply: str, boxes: list[tuple[int, int, str]]) -> list[Candidate]:
    """The boxed answers: placeholders dropped, boxes joined by "and" or a comma merged
    into one multi-part answer, boxes joined by "or" a hedge."""
    cands: list[Candidate] = []
    for start, end, content in boxes:
        if _PLACEHOLDER.fullmatch(content):
            continue
        value = _clean(content)
        if _offers_another(reply, end, value):
            value = HEDGE
        final = box_rank(reply, start, end)
        if cands:
            prev = cands[-1]
            between = reply[prev.end:start]
            if _OR.search(between) and len(between) < 40 and not same_latex(prev.value, value):
                cands[-1] = Candidate(prev.start, end, HEDGE, final=max(prev.final, final))
                continue
            if (prev.value is not HEDGE and _JOINED.fullmatch(between)
                    and not same_latex(prev.value, value)):
                cands[-1] = Candidate(prev.start, end, f"{prev.value}, {value}",
                                      final=max(prev.final, final))
                continue
        cands.append(Candidate(start, end, value, final=final))
    return cands


@POSTPROCESSORS.register("math-boxed", "boxed", "math_postprocess_v2")
@appeal_proof
def math_postprocess_v2(text: Any) -> str:
    """The final answer of a MATH-style reply: its ``\\boxed{…}`` (nested braces,
    ``\\boxed 5``, ``\\fbox``) or a sentence stating it; '' when there is none.

    Boxes inside ``<think>`` do not count, nor placeholder boxes copied from the
    problem (``\\boxed{\\phantom{2}}``, ``\\boxed{}``). The same answer boxed twice is
    fine; boxes joined by "and" or a comma are one multi-part answer (``2, -3``);
    two *different* answers are a failure '' (a hedge "either … or …" always) unless the
    model visibly corrects itself between them ("Actually, … the answer is -3") or the
    later one is a "The final answer is …" sentence, which outranks an earlier box of an
    intermediate result. Without a box, "The final answer is $…$" counts (as in
    OpenCompass), and so does a closing "So $x = 5$."; otherwise '' (OpenCompass
    returns the first sentence of the reply).
    """
    reply = prepare(text, unicode="width")
    if not reply:
        return ""
    reply = _JSON_ANSWER.sub(_json_answer, inline_answer_headings(reply))
    boxes = find_boxed(reply)
    cands = sorted(_box_answers(reply, boxes) + _statements(reply, boxes),
                   key=lambda c: c.start)
    if cands:
        if cut_inside_answer(reply, cands[-1].end):
            return ""
        tail = reply[cands[-1].end:]
        if RETRACTION.search(tail):
            # "\boxed{50}. Actually, I made a sign error: … so the sum is $-50$."
            if looks_truncated(tail):
                # Cut off after "Wait, actually": it stands by its answer only if it
                # rejected nothing and its working came back to that answer ("let me
                # check: 3 + 4 = 7, which matches").
                if TAKEN_BACK.search(tail) or not _settles_on(tail, cands[-1].value):
                    return ""
            elif (value := closing_answer(tail) or _rejected_for(tail)) is not None:
                cands.append(Candidate(cands[-1].end, len(reply), value))
            elif any(rejects(m.group(0)) for m in RETRACTION.finditer(tail)):
                # "\boxed{7}. No wait, the second term is negative." names no new answer.
                cands.append(Candidate(cands[-1].end, len(reply), WITHDRAWN))
        found = commit(cands, reply, same_latex)
        return found if isinstance(found, str) else ""
    return closing_answer(reply) or ""


def _rejected_for(tail: str) -> str | None:
    """The number a tail that rejects the answer before it states as the result
    instead ("Actually, I made a sign error, so the sum is $-50$. Hope this helps!"),
    when its closing line states none."""
    if not TAKEN_BACK.search(tail):
        return None
    return retraction_value(normalize_numerals(tail), result_only=True)


def _settles_on(text: str, value: Any) -> bool:
    """Whether the working in ``text`` settles on ``value`` (a boxed answer): the
    result after its last ``=`` or "so" (see ``retraction_value``)."""
    settled = retraction_value(normalize_numerals(text))
    return isinstance(value, str) and settled is not None and same_latex(settled, value)


# {"answer": "\\frac{3}{2}"}: a JSON answer field, its string escapes undone.
_JSON_ANSWER = compile_lazily(r'"answer"\s*:\s*"((?:[^"\\\n]|\\.)*)"')


def _json_answer(m: re.Match[str]) -> str:
    try:
        value = json.loads(f'"{m.group(1)}"')
    except ValueError:
        return m.group(0)
    return f"Answer: ${value}$\n"

