"""BIG-Bench-Hard postprocessors: ``bbh-mcq`` and ``bbh-freeform``.

Both are applied to predictions *and* golds, so a gold ``'(C)'`` and a prediction
"…So the answer is (C)." both become ``'C'``, and a gold ``'Yes'`` and a prediction
"So the answer is yes." both become ``'Yes'``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ._bbh_answer import normalize_freeform
from ._boxed import find_boxed
from ._commit import (
    HEDGE,
    RETRACTION,
    WITHDRAWN,
    Candidate,
    commit,
    committed_clause,
    rejects,
)
from ._conclusion import concluded_number
from ._labels import closing_label
from ._lazy_re import compile_lazily
from ._numeric import (
    NEGATED,
    NUMBER,
    normalize_numerals,
    words_to_digits,
)
from ._registry import POSTPROCESSORS
from ._text import (
    FOREIGN_CUE,
    HORIZONTAL_RULE,
    LINE_END,
    appeal_proof,
    inline_answer_headings,
    looks_truncated,
    prepare,
    sentences,
    span_after,
)
from .options import ALL_LETTERS, choose_option, question_options


@POSTPROCESSORS.register("bbh-mcq", "bbh_mcq_postprocess")
@appeal_proof
def bbh_mcq_postprocess(text: Any, test_item: Mapping[str, Any] | None = None) -> str:
    """The option letter of a BBH multiple-choice reply or gold (``'(C)'`` → ``'C'``).

    As in OpenCompass the answer statement ("So the answer is (C).") decides, and a
    self-correction counts its last statement. Differences, on purpose: on failure we
    return '' (OpenCompass returns the original text, which hides the failure from the
    extract rate and is scored as a normal, wrong prediction); a hedge ("(A) or (B)"),
    two different answers without a correction, or a truncated reply are failures;
    and a capital inside a word is never an option (OpenCompass falls back to the first
    upper-case letter anywhere, so "Let's think" gives L).

    With the dataset row (``test_item``, passed by the pipeline) the options listed in
    its ``input`` ("Options:\\n(A) 12/14/2026\\n…") are the only valid letters, and a
    statement naming one option's text ("So the answer is 12/14/1937.") gives that
    option's letter. A gold ``'(B)'`` has no statement and is read as before.
    """
    texts = question_options(test_item, ALL_LETTERS)
    letters = "".join(texts) if texts else ALL_LETTERS
    return choose_option(text, letters, cushion=True, texts=texts)


_CUE = compile_lazily(
    r"(?:(?i:\b(?:the\s+)?(?:final\s+|correct\s+)?answer[\"']?\s*(?:is|would\s+be|should\s+be"
    r"|must\s+be|will\s+be|=|:)\s*[:：]?)|" + FOREIGN_CUE + ")"
)
# A ticked checkbox ("- [x] No") is the answer it ticks.
_TICKED = compile_lazily(r"(?im)^[ \t*-]*\[[xX✓✔]\][ \t]*(.+)$")
_COUNT_CUE = compile_lazily(r"(?im)^[ \t*#>-]*total[ \t]*[:=]?[ \t]*(?=\S*\d)")
@POSTPROCESSORS.register("bbh-freeform", "bbh_freeform_postprocess")
@appeal_proof
def bbh_freeform_postprocess(text: Any, test_item: Mapping[str, Any] | None = None) -> str:
    """The normalized free-form answer of a BBH reply or gold; '' if none.

    As in OpenCompass: the sentence after "the answer is" (last committed statement),
    trailing period stripped, then :func:`normalize_freeform` so that "seven" equals
    ``7``, "not valid" equals ``invalid`` and ``"[ ( ]"`` equals ``"[(]"``. A reply
    with no answer statement is read from how it closes: a bare one-line answer (or a
    gold), a label stated by the closing sentence ("so the argument is not valid",
    see :mod:`._labels`), a count in a concluding sentence, or a closing list of single
    words; anything else is ''. OpenCompass would return the first line of the
    reasoning instead.

    With the dataset row (``test_item``, passed by the pipeline) whose gold
    (``target``) is a number, as in object counting and arithmetic, only a number
    (in digits or words) is an answer: "Let me think step by step." or "Unknown" is
    '', an extraction failure, not a wrong answer that counts as extracted.
    """
    found = _freeform_answer(text)
    if found and _number_task(test_item) and not _CANONICAL_NUMBER.fullmatch(found):
        return ""
    return found


# The form normalize_freeform gives every number ("8", "-33", "2.5", "3/4").
_CANONICAL_NUMBER = compile_lazily(r"-?\d+(?:\.\d+)?(?:/\d+)?")


def _number_task(test_item: Mapping[str, Any] | None) -> bool:
    """Whether the row's gold (BBH's ``target`` column) is a number."""
    gold = test_item.get("target") if isinstance(test_item, Mapping) else None
    if isinstance(gold, bool) or not isinstance(gold, (str, int, float)):
        return False
    return bool(_CANONICAL_NUMBER.fullmatch(_freeform_answer(str(gold))))


def _freeform_answer(text: Any) -> str:
    """:func:`bbh_freeform_postprocess` for any task: the answer whatever its kind."""
    reply = prepare(text)
    if not reply:
        return ""
    reply = re.sub(r"\*\*|__|`", "", reply)
    reply = inline_answer_headings(reply)
    reply = _TICKED.sub(r"Answer: \1", reply)
    reply = _COUNT_CUE.sub("Answer: ", reply)
    cands = []
    for m in _CUE.finditer(reply):
        if committed_clause(reply, m.start()):
            span = span_after(reply, m.end())
            cands.append(Candidate(m.start(), m.end() + len(span), normalize_freeform(span)))
    for start, end, content in find_boxed(reply):
        content = re.sub(r"\\text\{([^{}]*)\}", r"\1", content)
        cands.append(Candidate(start, end, normalize_freeform(content)))
    if cands:
        cands += _retractions(reply, cands)
        found = commit(sorted(cands, key=lambda c: c.start), reply)
        return found if isinstance(found, str) else ""
    if looks_truncated(reply):
        return ""
    lines = [line for line in reply.splitlines()
             if line.strip() and not HORIZONTAL_RULE.match(line)]
    if len(lines) == 1 and _bare(lines[0]):
        found = normalize_freeform(_LINE_MARK.sub("", lines[0]))  # a bare answer or a gold
        return found if isinstance(found, str) else ""
    return _closing(lines)


def _retractions(reply: str, stated: list[Candidate]) -> list[Candidate]:
    """After an answer statement, a visible change of mind whose line is a new answer
    ("No wait, 6.", a label or a number alone) or closes on one ("So the answer is 7. No
    wait, I forgot the piano, so 8." → 8, read as a closing label or count), as a
    correction of the earlier one; one that says no and
    names none withdraws it. A new answer statement on that line is a candidate of its
    own already."""
    found = []
    for m in RETRACTION.finditer(reply, min(c.start for c in stated)):
        rest = span_after(reply, m.end(), LINE_END)
        if any(m.end() <= c.start < m.end() + len(rest) for c in stated):
            continue
        value = normalize_freeform(rest)  # "No wait, 6." names its answer alone
        if value is not HEDGE and not (value in _LABELS or _CANONICAL_NUMBER.fullmatch(value)):
            value = _closing([rest]) if rest.strip() else ""
        if value:  # a hedge ("No wait, 6 or 7.") too: it settles on no answer
            found.append(Candidate(m.start(), m.end() + len(rest), value))
        elif rejects(m.group(0)):
            found.append(Candidate(m.start(), m.end() + len(rest), WITHDRAWN))
    return found


# Words a sentence of reasoning has and a bare answer (a label, a count, a sorted word
# list) does not.
_PROSE = frozenset("the is are was so we i it that this of to and because then there if "
                   "since which have has total".split())


def _bare(line: str) -> bool:
    """Whether a one-line reply is a bare answer ("eight", "not valid", a word list)
    rather than a sentence of reasoning, which is read like a longer reply."""
    words = re.findall(r"[\w']+", line.lower())
    if re.search(r"[.!?]\s+\S", line):
        return False  # two sentences
    return len(words) <= 3 or not _PROSE.intersection(words)


_LINE_MARK = compile_lazily(r"^[ \t]*(?:#+|[-*+•])[ \t]+")  # a heading or bullet, not "-5" or "> )"
_LIST_ITEM = compile_lazily(r"^[ \t]*(?:\d+[.)]|[-*+•])[ \t]+([\w'-]+)[ \t]*$")
_COUNT_SENTENCE = compile_lazily(r"(?i:\b(?:so|therefore|thus|altogether|in\s+total|total|i\s+have"
                                 r"|there\s+are|that\s+makes|we\s+have|you\s+have|that's"
                                 r"|that\s+is)\b"
                                 # "I count 8 instruments", not the step "We count 1 + 1 = 2"
                                 r"|\b(?:i|we)\s+count(?:ed)?\s+(?=\d+\s+[a-z]))")
_LABELS = frozenset(("Yes", "No", "True", "False", "valid", "invalid"))
# A parenthetical with words in it is an aside ("(the 4 stoves and 2 lamps are not
# instruments)"), not part of the closing statement.
_ASIDE = compile_lazily(r"\([^()]*[A-Za-z]{2}[^()]*\)")
_PARENTHESIZED = compile_lazily(r"\([^()]*\)")
_DOZEN = compile_lazily(r"(?i)\b(?:a|one)\s+dozen\b")
# A clause that names what is left out of a count ("the four stoves and two lamps don't
# count", "excluding the 4 stoves", "not 14") states no count.
_EXCLUSION = compile_lazily(r"(?i:\b(?:not|no|none|excluding|excluded?|except|besides|without"
                            r"|ignoring|other\s+than|apart\s+from|aside\s+from)\b|n't\b)")
_CLAUSE_BREAK = compile_lazily(r"([,;:—]|\bbut\b)")


def _closing(lines: list[str]) -> str:
    """The answer of a reply without an answer statement, from how it closes: a label
    stated as a sentence (see :mod:`._labels`), a count in a concluding sentence, or a
    closing list of single words (word sorting); '' otherwise. Parenthetical asides
    are not part of the closing text."""
    words: list[str] = []  # the closing run of list items' single words, last first
    for line in reversed(lines):
        if (m := _LIST_ITEM.match(line)) is None:
            break
        words.append(m.group(1).lower())
    if len(words) >= 2:  # the reply closes on a list of single words
        return " ".join(reversed(words))
    closing = [s for line in lines for s in sentences(_ASIDE.sub(" ", line))]
    if not closing:
        return ""
    bare = normalize_freeform(closing[-1])
    if bare in _LABELS:
        return bare  # "Does Gwenn tell the truth? Yes."
    label = closing_label(closing[-1])
    if label is not None:
        return label
    return _closing_count(closing)


def _closing_count(closing: list[str]) -> str:
    """The count a concluding sentence states ("So you have 8 instruments in total; the
    four stoves and two lamps don't count." → 8), after passing over closing sentences
    that only name what is not counted (not one that rejects a count: "…, so it is not
    5."); '' if there is none."""
    for sentence in reversed(closing):
        counted = normalize_numerals(words_to_digits(_DOZEN.sub("12", sentence)))
        kept = _counting_clauses(counted)
        if NEGATED.search(counted) or re.search(r"\w", _CLAUSE_BREAK.sub(" ", kept)):
            break
    else:
        return ""
    if not _COUNT_SENTENCE.search(counted):
        return ""
    value = concluded_number(kept)  # a hedged count concludes nothing (None)
    return "" if value is None else value


def _counting_clauses(sentence: str) -> str:
    """``sentence`` with its clauses that name what is not counted blanked out, and its
    parentheticals too when it has a number outside them."""
    outside = _PARENTHESIZED.sub(" ", sentence)
    if NUMBER.search(outside):  # "8 (1 + 1 + … + 1) instruments": the sum is an aside
        sentence = outside
    clauses = _CLAUSE_BREAK.split(sentence)
    return "".join(" " if _EXCLUSION.search(clause) else clause for clause in clauses)
