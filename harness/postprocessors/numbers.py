"""GSM8K postprocessors: ``gsm8k`` (prediction) and ``gsm8k-dataset`` (gold)."""

from __future__ import annotations

import math
import re
from typing import Any

from ._boxed import find_boxed
from ._commit import (
    CONCLUDING,
    DECLARED,
    HEDGE,
    RETRACT_WORDS,
    RETRACTION,
    WITHDRAWN,
    Candidate,
    box_rank,
    commit,
    committed_clause,
    rank,
    rejects,
)
from ._conclusion import concluded_number, concludes
from ._lazy_re import compile_lazily
from ._numeric import (
    NEGATED,
    NUMBER,
    canonical,
    hedged,
    normalize_numerals,
    retraction_value,
    signed_words,
    span_value,
    words_to_digits,
)
from ._registry import POSTPROCESSORS
from ._text import (
    FOREIGN_CUE,
    FOREIGN_CUE_WORDS,
    LINE_END,
    appeal_proof,
    as_text,
    cut_inside_answer,
    looks_truncated,
    may_match,
    prepare,
    span_after,
    stopped_for_length,
    without_closing_markup,
)

# GSM8K's answer marker, not a markdown heading ("#### Step 3") or a longer run of #.
# "#(?<!##)" is "(?<!#)#" put so that the pattern starts with a literal, which the
# regex engine skips ahead to instead of trying every position of the text.
_HASHES = compile_lazily(r"#(?<!##)###(?!#)[ \t]*(?=[-+$\\.\d])(?!\d+\.[ \t]+[^\W\d])")
_CUE = compile_lazily(
    r"(?:(?i:\b(?:the\s+)?(?:final\s+|correct\s+)?answer\s*(?:is|would\s+be|should\s+be|must\s+be"
    r"|will\s+be|=|:)\s*[:：]?)|" + FOREIGN_CUE + ")"
)
# The words an ASCII text needs for _CUE to match (see may_match).
_CUE_WORDS = ("answer", *FOREIGN_CUE_WORDS)
# Verification the model adds after working out its answer; its numbers are not answers.
_CHECK_LINE = compile_lazily(
    r"(?im)^[ \t\W]*(?:check|verify|verification|sanity\s+check|double[- ]check\w*"
    r"|let\s+me\s+(?:double[- ])?check|let'?s\s+(?:double[- ])?check|proof)\b.*$"
    r"|^.*[✓✔✅].*$"
)
_SENTENCE_CLOSE = ".!?。)*"
_CHECK_FINDS_ERROR = compile_lazily(
    r"(?i:\b(?:mistake|error|wrong|incorrect|actually|oops)\b|[✗✘❌])")
# A number offered with another right after it: "18 or 20", "$18 or maybe $20".
_NUMBER_OR_NUMBER = compile_lazily(r"[ \t$]*-?[\d.,]+[ \t]+or[ \t]+(?:maybe[ \t]+)?\$?-?\.?\d",
                                   re.IGNORECASE)
# Filler allowed between a cue and its number: "the answer is approximately $18".
_LEAD_IN = compile_lazily(
    r"[\s:$*({\\]*(?:(?:about|approximately|roughly|exactly|only|just|=)\s*[$*]*\s*)?-?\.?\d"
)


def _cue_value(span: str) -> str | None:
    """The number right after an answer cue; None when the cue opens reasoning instead.

    "Answer: 18" and "The answer is 9 * 2 = 18" give numbers; "Answer: Janet sells
    16 - 3 - 4 = 9 eggs…" is the start of the working, not an answer.
    """
    if not _LEAD_IN.match(span):
        return None
    return HEDGE if hedged(span) else span_value(span)


def _until_retraction(span: str) -> str:
    """An answer span up to where the model takes it back in the same sentence ("18 —
    no, wait: she sells 11 eggs, so 22"): what follows is the correction, not the answer."""
    cut = RETRACTION.search(span) if may_match(span, RETRACT_WORDS) else None
    return span[:cut.start()] if cut else span


def _statements(text: str) -> list[Candidate]:
    """Explicit final answers: ``#### N``, ``\\boxed{N}``, "the answer is N", and after
    one of those, a retraction that gives a new number. ``####`` and answer statements
    rank as declared, a box by its sentence (see :func:`._commit.box_rank`)."""
    found = []
    for m in _HASHES.finditer(text):
        end = m.end() + len(span_after(text, m.end(), LINE_END))
        span = text[m.end():end]
        # "#### 18 or 20" hedges; "#### 18 dollars (or 1800 cents)" converts.
        value = HEDGE if _NUMBER_OR_NUMBER.match(span) and hedged(span) else span_value(span)
        found.append((m.start(), end, value, rank(text, m.start(), end, DECLARED)))
    for start, end, content in find_boxed(text):
        found.append((start, end, span_value(content), box_rank(text, start, end)))
    cues = _CUE.finditer(text) if may_match(text, _CUE_WORDS) else ()
    for m in cues:
        if committed_clause(text, m.start()):
            end = m.end() + len(_until_retraction(span_after(text, m.end())))
            found.append((m.start(), end, _cue_value(text[m.end():end]),
                          rank(text, m.start(), end, DECLARED)))
    found = [c for c in found if c[2] is not None]
    if not found:
        return []
    first = min(c[0] for c in found)
    retractions = RETRACTION.finditer(text, first) if may_match(text, RETRACT_WORDS) else ()
    for m in retractions:
        # A retraction may run over a sentence break ("I made a mistake. It is 14."),
        # so it reads to the end of the line, unless an explicit answer on that line
        # carries the new value itself.
        span = span_after(text, m.end(), LINE_END)
        if any(m.end() <= c[0] < m.end() + len(span) for c in found):
            continue
        value = retraction_value(span)
        if value is None and rejects(m.group(0)):
            value = WITHDRAWN  # "No wait, she also sells the muffins' eggs." names none
        if value is not None:
            found.append((m.start(), m.end() + len(span), value, 0))
    return [Candidate(*c) for c in sorted(found, key=lambda c: c[:2])]


@POSTPROCESSORS.register("gsm8k", "gsm8k_postprocess")
@appeal_proof
def gsm8k_postprocess(text: Any) -> str:
    """The final numeric answer of a GSM8K-style reply, canonical (``'18'``); '' if none.

    Explicit answers win over the last number: ``#### N``, ``\\boxed{N}``, "the answer
    is N" (a computation after the cue gives its result: "9 * 2 = 18" → 18). A later
    answer counts after a visible correction ("wait, actually 14"); two different
    explicit answers otherwise are a failure, unless the later one declares itself
    final ("The final answer is …") or closes the reply after an intermediate box.
    Without an explicit answer, the number the reply concludes with counts (see
    :mod:`._conclusion`: restated givens, rejected numbers, check lines and a closing
    verification are passed over; a hedge or a range is ''). Number and magnitude
    words count ("eighteen", "2.5 million"), and so do signs in words ("minus 3", "3
    degrees below zero": -3). Text after an invented
    "Question:"/"Q:"/"Problem:" is cut first (OpenCompass cuts only "Question:").

    Unlike OpenCompass, thousands separators of every kind are understood (``1,000``
    is 1000, not 000), as are full-width digits, the Unicode minus, ``$`` and units,
    and scientific notation (``2.5e-3`` is 0.0025, not 2.5); ``18.00`` is ``18``, and
    a dataset without a ``dataset_postprocessor`` has its plain-number golds written
    alike (:func:`number_reference`). No number, a truncated reply or unclosed
    ``<think>`` → ''.
    """
    reply = prepare(text, unicode="width")
    if not reply:
        return ""
    reply = signed_words(normalize_numerals(reply))
    cands = _statements(reply)
    if cands:
        last = cands[-1]
        if cut_inside_answer(reply, last.end):
            return ""
        tail = reply[last.end:]
        if last.value is WITHDRAWN and not looks_truncated(tail):
            # "18. No wait, she also sells the muffins' eggs.\n…\nSo she makes $22.":
            # the answer is the one the correction goes on to conclude with.
            value = concluded_number(tail, reply[:last.end])
            if value is not None:
                cands.append(Candidate(last.end, len(reply), value))
        elif (reply.startswith("\\boxed", last.start) and last.final == 0 and concludes(tail)
                and without_closing_markup(tail)[-1:] in _SENTENCE_CLOSE):
            # "3 × 60 = \boxed{180} downloads … So 366 downloads in total.": the box
            # held an intermediate result; the closing sentence is the answer.
            value = concluded_number(tail, reply[:last.end])
            if stopped_for_length() and (value != last.value or RETRACTION.search(tail)):
                return ""  # cut off after it moved past its box: it concluded nothing
            if value is not None:
                cands.append(Candidate(last.end, len(reply), value,
                                       final=rank(reply, len(reply) - 1, len(reply), CONCLUDING)))
        found = commit(cands, reply)
        return found if isinstance(found, str) else ""
    body = _cut_verification(reply)
    body = _UNTICKED.sub("", _CHECK_LINE.sub(_kept_check, body)).rstrip()
    if not body or looks_truncated(body):
        return ""
    body = _HOURS_MINUTES.sub(_minutes, words_to_digits(body))  # "eighteen", "2 h 20 min"
    return concluded_number(body) or ""


def number_reference(value: Any) -> Any:
    """A reference written as :func:`gsm8k_postprocess` writes an answer, when it is a
    plain number (``'3.0'`` → ``'3'``, ``'1,000'`` → ``'1000'``, ``2.5`` → ``'2.5'``);
    any other value as it is.

    The reference side of ``gsm8k_postprocess`` when a dataset sets no
    ``dataset_postprocessor``: the reply "3.0" is extracted as ``'3'``, so a gold
    written ``3.0`` must be read the same way for exact match to compare like with like.
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return canonical(repr(value)) if math.isfinite(value) else value
    if isinstance(value, str):
        text = normalize_numerals(value.strip())
        if NUMBER.fullmatch(text):
            return canonical(text)
    return value


# The reference side of gsm8k_postprocess (see harness.postprocessors.build.reference_form).
gsm8k_postprocess.reference_form = number_reference  # type: ignore[attr-defined]


# "Verification:" alone on a line opens a section that only checks the answer above it.
_VERIFICATION = compile_lazily(r"(?im)^[ \t#*>-]*(?:verification|check|checking|sanity\s+check"
                               r"|double[- ]check)[ \t*]*:?[ \t*]*$")
# "- [ ] 10": an option the reply did not tick.
_UNTICKED = compile_lazily(r"(?m)^[ \t]*[-*+]?[ \t]*\[ \][^\n]*$")
_HOURS_MINUTES = compile_lazily(
    r"(\d+)\s*(?:hours?|hrs?|h)\s*(?:and\s+)?(\d+)\s*(?:minutes?|mins?)\b", re.IGNORECASE)


def _minutes(m: re.Match[str]) -> str:
    return f"{int(m.group(1)) * 60 + int(m.group(2))} minutes"


def _cut_verification(reply: str) -> str:
    """The reply without its closing verification section, unless that finds an error."""
    m = _VERIFICATION.search(reply)
    if m and reply[:m.start()].strip() and not _CHECK_FINDS_ERROR.search(reply[m.end():]):
        return reply[:m.start()]
    return reply


def _kept_check(m: re.Match[str]) -> str:
    """A check line goes, unless it finds a mistake ("= 623, not 613"): then it is
    the model correcting itself, and its numbers count."""
    line = m.group(0)
    return line if NEGATED.search(line) or _CHECK_FINDS_ERROR.search(line) else ""


@POSTPROCESSORS.register("gsm8k-dataset", "gsm8k_dataset", "gsm8k_dataset_postprocess")
def gsm8k_dataset_postprocess(text: Any) -> str:
    """The gold answer after the last ``####``, canonical (``'#### 1,000'`` → ``'1000'``).

    A gold without ``####`` that is already a number is accepted as it is; anything
    else is ''. OpenCompass strips only commas, so its golds keep ``$``, spaces or
    full-width digits that never equal a prediction.
    """
    raw = as_text(text)
    if raw is None:
        return ""
    raw = normalize_numerals(raw)
    marks = list(_HASHES.finditer(raw))
    span = raw[marks[-1].end():].split("\n", 1)[0] if marks else raw.strip()
    value = span_value(span)
    return value if value is not None else ""

