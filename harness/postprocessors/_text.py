"""Text helpers every answer-extracting postprocessor shares.

One reply goes through :func:`prepare` before any pattern looks at it, so all
postprocessors agree on what counts as the answer-bearing part of a reply:
Unicode folded, ``<think>`` reasoning removed, an invented few-shot continuation
cut off, and sentences addressed to a grader dropped.
"""

from __future__ import annotations

import contextlib
import functools
import re
import unicodedata
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

from ._lazy_re import compile_lazily

# Full-width ASCII (U+FF01..U+FF5E) maps to ASCII by a fixed offset.
_WIDTH: dict[int, int | str | None] = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}
_WIDTH.update({
    0x3000: " ",  # ideographic space
    0x2212: "-", 0xFE63: "-", 0x2796: "-",  # minus signs a model may print for negatives
    0x200B: None, 0x200C: None, 0x200D: None, 0x2060: None, 0xFEFF: None,  # zero-width
})
# Decimal digits of other scripts models write numbers in (Arabic-Indic, Persian,
# Devanagari, Bengali) read as ASCII digits.
for _zero in (0x0660, 0x06F0, 0x0966, 0x09E6):
    _WIDTH.update({_zero + d: str(d) for d in range(10)})
_WIDTH[0x066B] = "."  # the Arabic decimal separator
# Space characters used as thousands separators or typographic spaces. They are
# folded to a plain space only here; numbers.py joins digit groups before folding.
SPECIAL_SPACES = ("\u00a0\u2007\u2008\u2009\u200a\u202f\u205f"
                  "\u2000\u2001\u2002\u2003\u2004\u2005\u2006")
_WIDTH.update({ord(c): " " for c in SPECIAL_SPACES})
# The same table as a pattern and a dict of strings: a reply has few of its characters
# (often none), and str.translate looks every character up.
_FOLDABLE = compile_lazily("[" + "".join(re.escape(chr(code)) for code in _WIDTH) + "]")
_FOLDED = {chr(code): "" if to is None else chr(to) if isinstance(to, int) else to
           for code, to in _WIDTH.items()}


def as_text(value: Any) -> str | None:
    """``value`` as a string, or None when there is nothing to read (None, bytes that fail).

    Postprocessors must never raise on odd input: a non-string becomes ``str(value)``.
    """
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return str(value)


def may_match(text: str, words: tuple[str, ...]) -> bool:
    """False only when a case-insensitive pattern that needs one of ``words`` (lower-case
    ASCII) cannot match ``text``: a cheap test to skip a slow regex scan.

    Python's case-insensitive matching pairs a few non-ASCII letters with ASCII ones
    (``ſ`` with ``s``, ``ı`` with ``i``, the Kelvin sign with ``k``), so only ASCII text
    is ruled out; for any other text the pattern must run.
    """
    if not text.isascii():
        return True
    lower = text.lower()
    for word in words:  # a loop: a third cheaper than any(map(...)) on a short reply
        if word in lower:
            return True
    return False


def fold_width(text: str) -> str:
    """Full-width ASCII, Unicode minus, odd spaces and zero-width characters to ASCII.

    Lighter than NFKC: superscripts and fractions (``x²``, ``½``) stay as they are,
    which matters in LaTeX and arithmetic where NFKC would turn ``x²`` into ``x2``.
    """
    if text.isascii():  # nothing to fold (no ASCII character is in the table)
        return text
    return _FOLDABLE.sub(_fold, text)


def _fold(match: re.Match[str]) -> str:
    return _FOLDED[match.group()]


def nfkc(text: str) -> str:
    """NFKC plus the minus signs and zero-width characters NFKC leaves alone."""
    return unicodedata.normalize("NFKC", fold_width(text))


@functools.lru_cache(maxsize=32)
def _tag_patterns(start: str, end: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Case-insensitive patterns of a pair of tags (every reply is searched for them)."""
    return (re.compile(re.escape(start), re.IGNORECASE),
            re.compile(re.escape(end), re.IGNORECASE))


def strip_think(text: str, start: str = "<think>", end: str = "</think>") -> str | None:
    """``text`` without its reasoning blocks; None when a block is never closed.

    - ``<think>…</think>`` blocks are removed (all of them, tags matched case-insensitively);
    - a closing tag without an opening one means everything before it was reasoning
      (chat templates often put ``<think>`` in the prompt, so the reply starts inside it);
    - an opening tag that is never closed means the model was still reasoning when it
      stopped: there is no answer, so the caller must report a failure.
    """
    open_re, close_re = _tag_patterns(start, end)
    kept: list[str] = []
    pos = 0
    while True:
        opened = open_re.search(text, pos)
        closed = close_re.search(text, pos)
        if closed and (not opened or closed.start() < opened.start()):
            kept, pos = [], closed.end()  # an orphan close tag: all before it is reasoning
            continue
        if not opened:
            kept.append(text[pos:])
            return "".join(kept)
        kept.append(text[pos:opened.start()])
        closed = close_re.search(text, opened.end())
        if not closed:
            return None
        pos = closed.end()


# A model that keeps generating after its answer often invents the next few-shot item.
_CONTINUATION = compile_lazily(
    r"\n[ \t]*(?P<heading>\*\*|#+[ \t]*)?"
    r"(?:(?:Follow[- ]?up|Next|Another|New|Bonus|Extra)[ \t]+)?(?:Question|Q|Problem|Human|User)"
    r"[ \t]*\d*[ \t]*(?:\*\*)?[ \t]*[:：]",
    re.IGNORECASE,
)
# What an answered question shows before the model invents the next one.
_ANSWERED = compile_lazily(r"(?i:answer)|\\boxed|####|答案")


def cut_continuation(text: str) -> str:
    """Cut ``text`` where the model starts inventing a new "Question:"/"Q:"/"Problem:".

    Only a marker at the start of a later line counts, so a reply that itself begins
    by restating "Question: …" keeps its content. A marker dressed as a heading
    ("**Problem:**", "## Question:") is how chat models lay out their own working, so
    it counts only after the reply has given an answer.
    """
    if "\n" not in text:  # a marker starts a line
        return text
    for match in _CONTINUATION.finditer(text):
        before = text[:match.start()]
        if before.strip() and (not match.group("heading") or _ANSWERED.search(before)):
            return before
    return text


# Words addressed to whoever scores the reply. Saying them must earn nothing, so they
# are dropped (see drop_grader_appeals) before any answer pattern runs.
_APPEAL = compile_lazily(
    r"\b(?:graders?|evaluators?|scorers?|autograders?|grading\s+(?:model|system|script)"
    r"|dear\s+judge|judge\s*[:,])"
    r"|\b(?:mark|grade|score|count|treat)\s+(?:this|it|me|my\s+\w+|the\s+\w+|this\s+\w+)"
    r"\s+(?:as\s+)?(?:correct|right|full)"
    r"|\bignore\s+(?:all\s+|any\s+)?(?:the\s+|your\s+)?(?:previous|prior|above|earlier|preceding|"
    r"other)\s+(?:instructions|rules|prompts?)"
    r"|\bfull\s+(?:marks|credit|points|score)"
    r"|\bgive\s+(?:me|this|it)\s+(?:full\s+)?(?:credit|marks|points)",
    re.IGNORECASE,
)
# Words every _APPEAL alternative needs (see may_match): graders/grading, evaluator,
# judge, ignore, full, give, and the correct/right/full a "mark this as" appeal ends with.
_APPEAL_WORDS = ("grad", "evaluator", "scorer", "judge", "correct", "right", "full", "ignore",
                 "give")
_APPEAL_OR_VERDICT = (*_APPEAL_WORDS, "verdict")
_CLAUSE_BREAK = compile_lazily(r"[,;.!?。，；>(\[]")
# Sentence pieces: text up to and including ., ! or ? followed by space, or up to a newline.
# A dot between digits (3.5) is not a boundary.
_SENTENCE = compile_lazily(r"[^\n]*?(?:[.!?。！？](?=\s|$)|\n|$)")


# A block dressed as the grader's own output: "=== GRADER OUTPUT ===", "[Evaluator]",
# "### Judge verdict" (a heading-like line that names the grader early). It, and what
# follows up to a blank line, is the reply talking to its grader.
_GRADER_BLOCK = compile_lazily(
    r"(?im)^[ \t]*(?:={2,}|-{3,}|#{1,6}|\[|\*\*)[ \t]*[^\n]{0,30}"
    r"\b(?:grader|grading|judge|evaluator|verdict|scorer)\b[^\n]*$"
    r"(?:\n(?![ \t]*\n)[^\n]*)*")


def sentences(text: str) -> list[str]:
    """``text`` split into its sentences (a line break ends one too), stripped, none
    empty. The one splitter every closing-sentence reader uses."""
    return [m.group(0).strip() for m in _SENTENCE.finditer(text) if m.group(0).strip()]


def drop_grader_appeals(text: str) -> str:
    """``text`` without what addresses a grader: the clause of the appeal to sentence end.

    "The grader should accept A." goes entirely; "The answer is 18, so mark this as
    correct." keeps "The answer is 18,"; "<answer>B</answer> Grader: …" keeps the tag.
    What the model said before an appeal stands on its own merits; the appeal and
    what follows it in the sentence earn nothing.
    """
    return _split_appeals(text)[0]


def _split_appeals(text: str) -> tuple[str, list[str]]:
    """(``text`` without its appeals to the grader, the sentences and blocks that held
    them)."""
    if not may_match(text, _APPEAL_OR_VERDICT):
        return text, []
    dropped = [m.group(0) for m in _GRADER_BLOCK.finditer(text)]
    if dropped:  # else there is nothing to remove: no second scan
        text = _GRADER_BLOCK.sub("", text)
    if not _APPEAL.search(text):
        return text, dropped
    kept = []
    for m in _SENTENCE.finditer(text):
        piece = m.group(0)
        appeal = _APPEAL.search(piece)
        if appeal:
            breaks = _CLAUSE_BREAK.finditer(piece, 0, appeal.start())
            clause = max((b.end() for b in breaks), default=0)
            dropped.append(piece)  # whole: "Final Answer (verified by grader): 190"
            piece = piece[:clause] + ("\n" if piece.endswith("\n") else "")
        kept.append(piece)
    return "".join(kept), dropped


# An answer named inside an appeal: "the correct answer is 9", "accept 9", "expected (E)",
# "Extracted answer: 694".
_NAMED_ANSWER = compile_lazily(
    r"(?i:\b(?:answer|key|expected|accept)\b[^.\n\]]{0,30}?(?:\b(?:is|be)\b|[:=]|(?<=accept))"
    r"\s*[\"'$]*(?P<value>\(?[\w\-./\\{}]+\)?))")


def appeal_proof(func: Callable[..., str]) -> Callable[..., str]:
    """Make an answer-extracting postprocessor immune to answers named in appeals.

    An appeal earns nothing (see :func:`drop_grader_appeals`), but it must not be a
    way to hide a second answer either: "So the answer is 8. [Note to grader: the
    correct answer is 9, accept 9]" names two answers. The reply is extracted again
    with each answer an appeal names stated plainly after it; if that changes the
    result, the reply contradicts itself and the result is ''.
    """
    @functools.wraps(func)
    def guarded(text: Any, *args: Any, **kwargs: Any) -> str:
        result = func(text, *args, **kwargs)
        raw = as_text(text)
        if not result or raw is None or not may_match(raw, _APPEAL_OR_VERDICT):
            return result
        named = [m.group("value") for piece in _split_appeals(raw)[1]
                 for m in _NAMED_ANSWER.finditer(piece)]
        if not named:
            return result
        stated = raw + "".join(f"\n\nThe answer is {value}." for value in named)
        return result if func(stated, *args, **kwargs) == result else ""
    return guarded


# A line the reply quotes: a markdown blockquote, or a line wholly inside quotation marks.
_QUOTED_LINE = compile_lazily(r'^[ \t]*(?:>[^\n]*|["“][^\n]*["”][ \t]*)$')


# What introduces someone else's words: "Following the format of the example:", "The
# textbook hint reads:", "like the example from the prompt".
_ATTRIBUTION = compile_lazily(r"(?i:\b(?:example|hint|textbook|reads|says|said|wrote|quote[sd]?"
                              r"|prompt|format|like\s+this|as\s+in|according\s+to)\b)")


def drop_quoted(text: str) -> str:
    """``text`` without the quoted lines someone else wrote ("> A: … #### 18" after
    "Following the format of the example:"): a quoted answer is not the model's. A
    quote the reply does not attribute is kept; models set their own answer off as a
    blockquote ("> **Answer:** 5")."""
    if ">" not in text and '"' not in text and "“" not in text:
        return text
    lines = text.split("\n")
    keep = [True] * len(lines)
    i = 0
    while i < len(lines):
        if not _QUOTED_LINE.match(lines[i]):
            i += 1
            continue
        j = i
        while j < len(lines) and _QUOTED_LINE.match(lines[j]):
            j += 1
        lead = next((line for line in reversed(lines[:i]) if line.strip()), "")
        if _ATTRIBUTION.search(lead):
            keep[i:j] = [False] * (j - i)
        i = j
    return "\n".join(line for line, k in zip(lines, keep, strict=True) if k)


# Reasoning blocks under other names: "<think >", "<reasoning>", "<|begin_of_thought|>".
_THINK_VARIANT = compile_lazily(
    r"<\s*(/)?\s*(?:think|thinking|reasoning)\s*>|<\|(?:begin|(end))_of_thought\|>",
    re.IGNORECASE)


def prepare(value: Any, *, unicode: str = "nfkc") -> str | None:
    """The answer-bearing part of one reply, or None when the reply has none.

    ``unicode`` is ``'nfkc'`` (text and options) or ``'width'`` (numbers and LaTeX,
    see :func:`fold_width`). The result is stripped; '' and None both mean failure.
    """
    text = as_text(value)
    if text is None:
        return None
    text = nfkc(text) if unicode == "nfkc" else fold_width(text)
    if "<" in text:  # else there is no reasoning block to remove
        text = _THINK_VARIANT.sub(lambda m: "</think>" if m.group(1) or m.group(2) else "<think>",
                                  text)
        text = strip_think(text)
        if text is None:
            return None
    return drop_grader_appeals(cut_continuation(drop_quoted(text))).strip()


# "### Final answer" or "**Answer**" on a line of its own introduces the next line.
_ANSWER_HEADING = compile_lazily(r"(?im)^[ \t#*>]*((?:final\s+)?answer)[ \t*:]*\n\s*")


def inline_answer_headings(text: str) -> str:
    """``text`` with an answer heading and the line under it made one statement:
    "### Final answer\n\n8" → "Final answer: 8"."""
    return _ANSWER_HEADING.sub(r"\1: ", text)


FOREIGN_CUE = (
    r"答案\s*(?:应该|应)?\s*(?:是|为)?\s*[:：]?|答えは|정답은"
    r"|(?i:(?:die\s+)?(?:richtige\s+|korrekte\s+)?antwort\s+(?:ist|lautet)\s*:?"
    r"|la\s+(?:bonne\s+)?r[ée]ponse\s+(?:est|:)|la\s+respuesta\s+(?:correcta\s+)?es(?:\s+la)?\s*:?"
    r"|a\s+resposta\s+(?:correta\s+)?[ée]|(?:правильный\s+)?ответ\s*(?:[:：—-]|это))"
)
"""Answer cues in the other languages models answer in ("Die Antwort ist", "答案是").
A pattern of its own, joined into each postprocessor's cue pattern."""
#: Words an ASCII text needs for FOREIGN_CUE to match (see may_match).
FOREIGN_CUE_WORDS = ("antwort", "respuesta", "resposta", "reponse")


SENTENCE_END = compile_lazily(r"\n|[!?]|\.(?=\s|$)")
"""The end of an answer sentence: newline, ! or ?, or a dot that is not a decimal point."""
LINE_END = compile_lazily(r"\n")


def span_after(text: str, start: int, stop: re.Pattern[str] = SENTENCE_END,
               limit: int = 400) -> str:
    """``text`` from ``start`` up to ``stop``, at most ``limit`` characters.

    An answer statement is short; the limit keeps a reply that repeats "the answer is"
    thousands of times without a full stop from costing quadratic time.
    """
    window = text[start:start + limit]
    end = stop.search(window)
    return window[:end.start()] if end else window


# Words a sentence cannot end with: a reply ending in one was cut off mid-sentence.
_DANGLING = frozenset(
    "the a an and or but because so of to is are was were be been that which with for in on "
    "at by as than then if since from into its their his her our we it this these has have "
    "had will would can could should not plus minus times equals divided multiply multiplied "
    "add subtract gives get gets each per".split()
)


# Whether the reply being extracted was cut off by the server (``finish_reason``
# "length"): a cut its text need not show. A context variable, so postprocessors keep
# OpenCompass's text-only signature; set by the scorer around them (``reply_cut_off``).
_CUT_OFF: ContextVar[bool] = ContextVar("reply_cut_off", default=False)


@contextlib.contextmanager
def reply_cut_off(cut: bool) -> Iterator[None]:
    """Within this block, with ``cut`` true (the reply being extracted stopped for
    length), ``looks_truncated`` is true of any reply longer than a bare answer: only an
    answer it committed to counts, never the number or option it happens to end on. A
    reply of a few words ("B", "42", "B) Paris") is an answer a small ``max_out_len``
    left whole, and is read as before."""
    token = _CUT_OFF.set(cut)
    try:
        yield
    finally:
        _CUT_OFF.reset(token)


def stopped_for_length() -> bool:
    """Whether the reply being extracted stopped for length (see ``reply_cut_off``)."""
    return _CUT_OFF.get()


#: Words a reply stopped for length may have and still be read as a bare answer.
_BARE_ANSWER_WORDS = 3


def cut_inside_answer(text: str, end: int) -> bool:
    """Whether the reply ``text`` stopped for length inside the answer statement that
    ends at ``end``: the statement runs to the very end, unclosed ("The answer is 12"
    may have gone on to 125). A bare answer of a few words is read whole."""
    return (stopped_for_length() and end >= len(text) and text[-1:] not in "}$)]"
            and len(text.split(maxsplit=_BARE_ANSWER_WORDS)) > _BARE_ANSWER_WORDS)


_RULE = r"[ \t]*(?:-{3,}|_{3,}|\*{3,})[ \t]*"
HORIZONTAL_RULE = compile_lazily(rf"^{_RULE}$")
"""A markdown horizontal rule ("---"): a line that is layout, not words."""
# Markdown a finished reply may end with: horizontal rules on their own lines.
_CLOSING_RULE = compile_lazily(rf"(?:\n{_RULE})+$")
# An emphasis closing the last line: "*So 366 in total.*", not "9 * 2 *" (an
# opener is followed, and a closer preceded, by a non-space).
_CLOSING_EMPHASIS = compile_lazily(r"(?:^|(?<=\s))([*_])[^\s*_](?:[^\n]*[^\s*_])?\1$")


def without_closing_markup(tail: str) -> str:
    """``tail`` (stripped) without a closing horizontal rule or the mark that closes
    an emphasis ("*So 366 downloads in total.*"): markup, not a cut operator."""
    tail = tail.rstrip()
    if tail.endswith(("-", "_", "*")):
        tail = _CLOSING_RULE.sub("", tail).rstrip()
    if tail.endswith(("*", "_")) and (m := _CLOSING_EMPHASIS.search(tail)):
        tail = tail[:m.start()] + tail[m.start() + 1:-1]
    return tail


def looks_truncated(text: str) -> bool:
    """True when ``text`` visibly stops mid-sentence (max-token cut, dropped stream), or
    when the reply being extracted stopped for length (``reply_cut_off``).

    A dangling connector word ("…multiply by"), operator ("16 - 3 =") or opening bracket
    at the very end; closing markup ("---", "*…*") does not count. A cut inside a word
    cannot be seen and is not reported.
    """
    tail = without_closing_markup(text)
    if not tail:
        return True
    if stopped_for_length() and len(tail.split(maxsplit=_BARE_ANSWER_WORDS)) > _BARE_ANSWER_WORDS:
        return True
    if tail[-1] in ",;:([{=+-*/×÷\\–—" and not tail.endswith("**"):
        return True
    # Only the tail is searched: a regex anchored at $ would otherwise rescan a long
    # run of letters from every start position.
    last = re.search(r"([A-Za-z]+)\W*$", tail[-64:])
    # Only a lower-case word dangles: a final "A" or "I" is an option letter, not "a"/"i".
    return last is not None and last.group(1) in _DANGLING and tail[-1].isalpha()
