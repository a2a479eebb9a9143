"""Multiple-choice postprocessors: ``first-option``, ``last-option``, ``first-capital``.

Shared rules (stricter than OpenCompass, which takes the first capital anywhere):

1. An explicit answer statement wins ("the answer is (C)", "Answer: C", ``\\boxed{C}``).
   Repeating it is fine; a later different one counts only after a visible correction
   ("Wait, actually …"); otherwise two different answers, or a hedge ("B or C"),
   are a failure ''.
2. Without a statement, a reply cut off mid-sentence is a failure.
3. Otherwise only option-shaped letters count (see :mod:`._letters`), never a capital
   inside a word, an article ("A lot") or a pronoun ("I think").
4. Given the dataset row (``test_item``), a statement that names an option's text
   instead of its letter ("So the answer is 12/14/1937.") counts as that option's
   letter when exactly one option fits (see :mod:`._option_text`).
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any

from . import _letters, _option_text
from ._commit import HEDGE, TAKEN_BACK, Candidate, commit
from ._lazy_re import compile_lazily
from ._registry import POSTPROCESSORS
from ._text import appeal_proof, looks_truncated, prepare, span_after

ALL_LETTERS = string.ascii_uppercase

# A line-leading option followed by one of these is being discussed, not chosen:
# "(A) is wrong because …", "B. would double count …".
_DISCUSSION = compile_lazily(
    r"[ \t]*(?i:is|are|was|were|says|states|claims|would|could|might|can|cannot|does|doesn't"
    r"|seems|looks|isn't|has|gives|suggests|means|implies|and|or|vs)\b"
)
_LINE_PREFIX = compile_lazily(r"[ \t>#*+-]*")
_SENTENCE_END = compile_lazily(r"[ \t]*(?:[.!。][ \t]*)?(?:\n|$)|[ \t]*[.!。](?=\s)")


def reply_text(text: Any) -> str:
    """The prepared reply (see :func:`._text.prepare`) with emphasis markup unwrapped."""
    prepared = prepare(text)
    return _letters.unmark(prepared) if prepared else ""


def _line_start(text: str, pos: int) -> bool:
    start = text.rfind("\n", 0, pos) + 1
    return _LINE_PREFIX.fullmatch(text, start, pos) is not None


def _leading(text: str, toks: list[_letters.Token],
             options: str) -> tuple[Any, _letters.Token | None]:
    """The letter the reply leads with ("B. Paris", "(B)"), HEDGE, or None; and the
    token that gave it.

    Several different line-leading letters are a list of options, not an answer.
    """
    lead = [t for t in toks if _line_start(text, t.start) and not _DISCUSSION.match(text, t.end)]
    if not lead or len({t.letter for t in lead}) > 1:
        return None, None
    first = lead[0]
    line_end = text.find("\n", first.end)
    stop = line_end if line_end >= 0 else len(text)
    same_line = [t for t in toks if first.end <= t.start < stop]
    if any(t.shape == first.shape and t.letter != first.letter for t in same_line):
        return None, None  # "(A) 12 (B) 14 (C) 16" lists the options
    return _letters.value(first, text, options), first


def _concluding(text: str, toks: list[_letters.Token], options: str) -> Any:
    """The letter the reply concludes with ("…, so (C)."), HEDGE, or None."""
    cands = []
    for tok in toks:
        line_end = text.find("\n", tok.end)
        rest = text[tok.end:line_end if line_end >= 0 else len(text)].strip()
        if _line_start(text, tok.start) and rest:
            continue  # "C. 16" leads a line of a list; it concludes nothing
        closes = tok.shape == "line" or (tok.shape == "." and text[tok.end - 1] == ".")
        # Options rejected after it ("…, which is (B), not (E).") do not keep it from
        # ending its sentence.
        rejected = _letters.REJECTED_AFTER.match(text, tok.end)
        if closes or _SENTENCE_END.match(text, rejected.end() if rejected else tok.end):
            cands.append(Candidate(tok.start, tok.end, _letters.value(tok, text, options)))
    return commit(cands, text) if cands else None


def option_letters(options: Any) -> str:
    """``options`` as one string of letters; a config may give ``['A', 'B', 'C']``."""
    if isinstance(options, str):
        return options
    try:
        return "".join(str(o).strip() for o in options)
    except TypeError:
        return str(options)


def resolve(reply: str, options: str,
            texts: Mapping[str, str] | None = None) -> tuple[bool, str]:
    """(whether ``reply`` states an answer, the committed letter from ``options`` or '').

    Letter statements ("the answer is (C)") and, with ``texts`` (``{letter: option
    text}``), statements naming one option's text are read together, so a later
    "Wait, actually …" corrects either kind and two different answers are a failure.
    """
    if not texts:
        return _letters.resolve_statements(reply, options)
    toks = _letters.tokens(reply, options)

    def has_letter(start: int, end: int) -> bool:
        return any(start <= t.start < end for t in toks)

    cands = []
    for cand in _letters.statements(reply, options):
        after = span_after(reply, cand.end)
        if isinstance(cand.value, str) and _option_text.named_after_letter(
                after, cand.value, texts):
            cand = Candidate(cand.start, cand.end, HEDGE)  # letter and text disagree
        cands.append(cand)
    cands += _option_text.text_statements(reply, texts, has_letter)
    cands += _option_text.ordinal_statements(reply, texts)
    if not cands:
        return False, ""
    letter = commit(cands, reply)
    return True, letter if isinstance(letter, str) and letter in options else ""


def choose_option(text: Any, options: Any, *, cushion: bool = True,
                  texts: Mapping[str, str] | None = None) -> str:
    """Statement, then leading letter, then (with ``cushion``) concluding letter; or ''.

    With ``texts`` (the question's ``{letter: option text}``) a statement may name the
    option's text, and a one-line reply that is exactly one option's text counts.
    """
    options = option_letters(options)
    reply = reply_text(text)
    if not reply:
        return ""
    stated, letter = resolve(reply, options, texts)
    if stated:
        return letter
    toks = _letters.tokens(reply, options)
    found, lead = _leading(reply, toks, options)
    # A reply that opens with its option ("(A) The blue jay…") committed to it, however
    # it goes on, unless it takes it back ("Wait, that's wrong"); a later line leading
    # with a letter may be a list cut short.
    opens = (lead is not None and not reply[:lead.start].strip()
             and not TAKEN_BACK.search(reply, lead.end))
    if not opens and looks_truncated(reply):
        return ""
    if found is None and cushion:
        found = _concluding(reply, toks, options)
    if found is None and texts:
        found = (_option_text.bare_option(reply, texts)
                 or _option_text.concluding_option(reply, texts))
    return found if isinstance(found, str) else ""


def question_options(test_item: Mapping[str, Any] | None, options: str) -> dict[str, str]:
    """The ``{letter: text}`` options of a dataset row, limited to ``options``; may be {}."""
    found = _option_text.option_texts(test_item, options)
    return {k: v for k, v in found.items() if k in options}


@POSTPROCESSORS.register("first-option", "first_option_postprocess")
@appeal_proof
def first_option_postprocess(text: Any, options: Any = "ABCD", cushion: bool = True,
                             test_item: Mapping[str, Any] | None = None) -> str:
    """The option letter the reply commits to, from ``options``; '' if none.

    In order: an explicit answer statement (OpenCompass's ordered "answer is (X)",
    "答案是 X", "Answer: X", ``\\boxed{X}`` patterns, plus "I choose X", "option X is
    correct"); a line the reply leads with ("B. Paris", "(B)", a lone "B"); and with
    ``cushion=True`` a letter that ends a sentence ("…, so (C).").

    The pipeline passes the dataset row as ``test_item``; its options (columns named
    ``A``, ``B`` …, or "(A) …" lines in the question) let a statement that names an
    option's text ("The answer is Paris.") count as that option's letter.

    Differences from OpenCompass, on purpose: a capital inside a word never counts,
    so "Clearly" or "A lot" is not A; a self-correction counts its last answer; a
    hedge, two different answers or a truncated reply is '' instead of the first
    capital letter found.
    """
    options = option_letters(options)
    return choose_option(text, options, cushion=cushion,
                         texts=question_options(test_item, options))


@POSTPROCESSORS.register("last-option", "last_option_postprocess")
@appeal_proof
def last_option_postprocess(text: Any, options: Any = "ABCD",
                            test_item: Mapping[str, Any] | None = None) -> str:
    """The last option-shaped letter from ``options`` in the reply; '' if none.

    An explicit answer statement still wins over mere mentions (with ``test_item``, one
    naming an option's text too, as in :func:`first_option_postprocess`); OpenCompass
    takes the last capital letter anywhere, even inside a word ("…is Correct" → C),
    which we don't.
    """
    options = option_letters(options)
    reply = reply_text(text)
    if not reply:
        return ""
    stated, letter = resolve(reply, options, question_options(test_item, options))
    if stated:
        return letter
    if looks_truncated(reply):
        return ""
    toks = _letters.tokens(reply, options)
    if not toks:
        return ""
    found = _letters.value(toks[-1], reply, options)
    return found if isinstance(found, str) else ""  # not HEDGE


@POSTPROCESSORS.register("first-capital", "first_capital_postprocess")
@appeal_proof
def first_capital_postprocess(text: Any) -> str:
    """The first capital letter that stands as an option (``(B)``, ``B.``, "option B"…).

    OpenCompass returns the first upper-case character anywhere, so "Clearly, B" → C;
    here a capital inside a word, an article ("A lot") or the pronoun "I" never counts,
    and an explicit answer statement (with self-correction) wins over earlier mentions.
    """
    reply = reply_text(text)
    if not reply:
        return ""
    stated, letter = _letters.resolve_statements(reply, ALL_LETTERS)
    if stated:
        return letter
    if looks_truncated(reply):
        return ""
    toks = _letters.tokens(reply, ALL_LETTERS)
    if not toks:
        return ""
    found = _letters.value(toks[0], reply, ALL_LETTERS)
    return found if isinstance(found, str) else ""  # not HEDGE
