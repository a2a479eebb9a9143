"""Which of several answer statements in one reply the model committed to.

A reply can state an answer more than once. A careful grader reads them in order:
the same answer repeated is fine; a later, different answer replaces the earlier
one only when the model visibly corrects itself ("Wait, actually …") or declares it
final ("The final answer is …"); a conditional aside after a concluded answer ("If
instead the pairs were ordered, there would be 20") is passed over; two different
answers with no correction, a hedge ("B or C"), or a correction that says no without
naming another answer ("No wait, let me redo this"), earn nothing.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

from ..frozen import record
from ._lazy_re import compile_lazily
from ._text import may_match


class _Marker:
    """A candidate value that is no answer, named by its repr."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


HEDGE: Any = _Marker("HEDGE")
"""Candidate value for "B or C", "either A or D", "A and B": never a committed answer."""
WITHDRAWN: Any = _Marker("WITHDRAWN")
"""Candidate value of a change of mind that says no to the answer before it without
naming another ("18. No wait, let me redo this."): no answer stands until a later one."""


CONCLUDING = 1
"""Rank of a statement in a concluding sentence ("so", "therefore", "in total")."""
DECLARED = 2
"""Rank of a statement that declares itself the final answer."""


@record
class Candidate:
    """One answer statement: where it starts and ends in the text, and its value.

    ``start`` is where the statement begins (its cue, e.g. "the answer is"); a
    correction is looked for from the ``end`` of the previous statement to the ``end``
    of this one, so "Wait, actually the answer is (C)" corrects what came before.
    ``final`` ranks how plainly the statement closes the reply: :data:`CONCLUDING`
    ("So the total is \\boxed{210}") or :data:`DECLARED` ("The final answer is 18",
    ``#### 18``). A statement settles what came before, as a correction does, when it
    outranks it ("Boys: \\boxed{35}. … So the groups number \\boxed{210}."); two of
    the same rank that differ, without a correction, are a conflict.
    """

    start: int
    end: int
    value: Any
    final: int = 0


# Signals that the model takes back what it said before. Only consulted between two
# different answers, so it can be generous; bare "mistake"/"error"/"no" are left out
# because explanations use them ("(A) has no catalyst") without retracting anything.
CORRECTION = compile_lazily(
    r"\b(?:wait|oops|correction|actually|instead|scratch\s+that|just\s+kidding"
    r"|on\s+second\s+thought"
    r"|I\s+made\s+an?\s+(?:\w+\s+)?(?:mistake|error)|my\s+(?:mistake|error|bad)|I\s+was\s+wrong"
    r"|that(?:'s|\s+is|\s+was)\s+(?:wrong|incorrect|a\s+mistake)"
    r"|re-?(?:check\w*|calculat\w*|comput\w*|consider\w*|evaluat\w*|examin\w*)"
    r"|let\s+me\s+(?:correct|fix)|hmm|hold\s+on|no(?=\s*[,.!;:]))\b|等等|不对|错了|更正",
    re.IGNORECASE,
)

# "wait" as an interjection opens a clause (after a sentence end, an ellipsis, a dash, a
# comma or emphasis) and is followed by punctuation: "she has to wait 3 hours" and "no,
# wait times are long" hold none.
_MARKS = ".!?…\n,;:—–(*-"
_WAIT = r"wait\**[ \t]*(?:[,.!:;…—–]|-(?!\w))"


def _opening(word: str) -> str:
    """A pattern for ``word`` opening a clause, perhaps after one space. Its first letter
    comes before the look-behinds, so the regex engine tries them only where it stands."""
    first = word[0]
    return rf"{first}(?:(?<![^{_MARKS}]{first})|(?<=[{_MARKS}][ \t]{first})){word[1:]}"


# What a bare "wait" opens when it checks the answer instead of changing it: "Wait, let
# me check", "Wait, is that right?", "Wait, maybe I should verify".
_CHECK = (r"[ \t,.!:;…—–-]*(?:let\b|maybe|perhaps|but\b|I\s+(?:should|will|need|want)\b|I'll"
          r"|(?:is|are|was|were|am|does|do|did|should|could|would|can|will|has|have|had"
          r"|what|why|how|where|which|who)\b)")

# A visible change of mind after the answer was given ("12... wait, actually 14", "18.
# No wait, she sells 11 eggs, so 22"). A plain "wait, let me check" is not one: what
# follows is a check, not a new answer; "no, wait" rejects whatever follows.
RETRACTION = compile_lazily(
    r"(?i:\b(?:wait|hmm|hold\s+on|oh)\b[\s,.!…-]*"
    r"(?:no\b|actually\b|I\s+made|that'?s\s+(?:wrong|not)"
    rf"|correction)|{_opening('no')}[ \t]*[,.!…—–-]*[ \t]*{_WAIT}|{_opening(_WAIT)}(?!{_CHECK})"
    r"|\b(?:correction|oops|scratch\s+that|just\s+kidding|on\s+second\s+thought"
    r"|I\s+made\s+an?\s+(?:\w+\s+)?(?:mistake|error)|I\s+was\s+wrong)\b"
    r"|(?:^|(?<=[.!?…\n]))[ \t]*actually\b(?![\s,]+(?:we|let|I)\s+(?:can|could|might|should)\b)"
    r"|等等|不对|错了|更正)"
)
"""A visible change of mind after an answer was given; stricter than CORRECTION,
which only needs to tell two different answers apart."""

# Words each RETRACTION alternative needs (see may_match).
RETRACT_WORDS = ("wait", "hmm", "hold", "oh", "correction", "oops", "scratch", "kidding",
                 "second", "made", "wrong", "actually")

_SAYS_NO = compile_lazily(r"(?i:\bno\b)|不对|错了")


def rejects(retraction: str) -> bool:
    """Whether a RETRACTION match says no to the answer before it ("No wait", "Wait,
    no", "Hmm, no"), rather than pausing over it ("Wait, actually", "Hold on"): with no
    new answer after it, the old one no longer stands (see :data:`WITHDRAWN`)."""
    return bool(_SAYS_NO.search(retraction))

TAKEN_BACK = compile_lazily(
    r"(?i:\b(?:wrong|incorrect|mistake|error|misread|mis(?:calculat|count)\w*|oops"
    r"|scratch\s+that|just\s+kidding|on\s+second\s+thought|correction)\b)|不对|错了|更正")
"""Words that reject an answer already given ("that's wrong", "I made an error"), where
RETRACTION also matches a "Wait, actually" that goes on to confirm it."""


# A hypothetical or negation right before the statement ("whether the answer is A",
# "I don't think the answer is A"). Only the last few words count: "Since 12 is not
# divisible by 5 the answer is C" is a committed answer.
_NOT_COMMITTED = compile_lazily(
    r"(?:(?:\b(?:if|whether|suppose|supposing|assum\w*|unless|not|never|doubt\w*"
    r"|si|wenn|falls|ob)|n't)\s+|(?:如果|假如|若|もし)\s*)(?:[\w']+\s+){0,2}$",
    re.IGNORECASE,
)


def committed_clause(text: str, start: int) -> bool:
    """False when the words just before ``start`` make the statement hypothetical."""
    return not _NOT_COMMITTED.search(text[max(0, start - 60):start])


# A sentence that only entertains an answer: "If repetition were not allowed, the final
# answer would be 6", "For unordered pairs it would thus be \\boxed{6}".
_HYPOTHETICAL = compile_lazily(
    r"\b(?:if|would|could|might|suppose|supposing|assuming|unless|otherwise|either)\b"
    r"|\bwere\s+not\b|如果|假如|もし", re.IGNORECASE)
# The words an ASCII sentence needs for _HYPOTHETICAL to match (see may_match): the
# regex search pays per character, the substring test hardly at all.
_HYPOTHETICAL_WORDS = ("if", "would", "could", "might", "suppos", "assuming", "unless",
                       "otherwise", "either", "were")
_SENTENCE_BREAK = compile_lazily(r"[.!?。！？](?=\s)|\n")


def sentence_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """Where the sentence of ``text`` that holds ``start:end`` begins and ends.

    It begins after the last break that ends before ``start`` (a stop right before
    ``start`` is not one: what follows it is not seen, as a search that ends at
    ``start`` would not see it) and ends at the first break from ``end`` on.
    """
    breaks = _breaks(text)  # each a single character, so a break ends where it starts + 1
    i = bisect.bisect_left(breaks, start) - 1
    if i >= 0 and breaks[i] == start - 1 and text[breaks[i]] != "\n":
        i -= 1
    j = bisect.bisect_left(breaks, end)
    return breaks[i] + 1 if i >= 0 else 0, breaks[j] if j < len(breaks) else len(text)


@functools.lru_cache(maxsize=4)
def _breaks(text: str) -> list[int]:
    """Where each sentence break of ``text`` is, found once per text: a reply's boxes
    and statements each ask for their sentence, and a search from the start for each
    made a reply with thousands of boxes take seconds."""
    return [m.start() for m in _SENTENCE_BREAK.finditer(text)]


def sentence_around(text: str, start: int, end: int) -> str:
    """The sentence of ``text`` that holds ``start:end``."""
    low, high = sentence_bounds(text, start, end)
    return text[low:high]


def hypothetical(text: str, start: int, end: int) -> bool:
    """Whether the sentence that holds ``start:end`` only entertains its answer ("If
    instead the pairs were ordered, there would be \\boxed{20}")."""
    sentence = sentence_around(text, start, end)
    return bool(may_match(sentence, _HYPOTHETICAL_WORDS) and _HYPOTHETICAL.search(sentence))


def rank(text: str, start: int, end: int, base: int) -> int:
    """``base`` (:data:`CONCLUDING` or :data:`DECLARED`) for the statement at
    ``start:end``, or 0 when its sentence is hypothetical: an answer offered under a
    condition never outranks one given plainly."""
    if not base:
        return base
    return 0 if hypothetical(text, start, end) else base


def _replaces(cand: Candidate, text: str, since: int, settled: int) -> bool | None:
    """Whether ``cand``, a different answer than the current one (stated with rank
    ``settled``, ending at ``since``), replaces it; None when it is passed over.

    A visible change of mind (RETRACTION) always replaces it. An aside under a
    condition after a concluded or declared answer is passed over, since the model
    committed before entertaining it ("… is \\boxed{42}. If we had instead been asked
    for the area, it would be …"); after an answer given plainly it conflicts. A mere
    correction word ("instead", "hmm", "let me recheck") replaces an answer only with a
    statement of at least its rank, so a check or a comparison after a final answer
    does not; a statement of higher rank replaces it without one.
    """
    between = text[since:cand.end]
    if may_match(between, RETRACT_WORDS) and RETRACTION.search(between):
        return True
    if not cand.final and hypothetical(text, cand.start, cand.end):
        return None if settled else False
    return cand.final > settled or (cand.final == settled and bool(CORRECTION.search(between)))


def commit(candidates: Sequence[Candidate], text: str,
           same: Callable[[Any, Any], bool] | None = None) -> Any:
    """The answer the model committed to, or None when there is none.

    ``candidates`` are read in text order. ``same`` compares two values (default ``==``),
    so callers can treat e.g. ``\\frac{1}{2}`` and ``\\frac {1}{2}`` as one answer.
    """
    eq = same or (lambda a, b: a == b)
    current: Any = None
    conflict = False
    settled = 0  # the rank of the statement the current answer came from
    prev_end = 0
    for cand in sorted(candidates, key=lambda c: c.start):
        if current is None or current is WITHDRAWN:
            current, conflict, settled = cand.value, False, cand.final
        elif (not isinstance(cand.value, _Marker) and current is not HEDGE
              and eq(cand.value, current)):
            current = cand.value  # the same answer; keep its latest spelling
            # Restated with a higher rank, it settles a conflict as a new answer would.
            conflict = conflict and cand.final <= settled
            settled = max(settled, cand.final)
        elif (replaces := _replaces(cand, text, prev_end, settled)) is not None:
            # It took over, or conflicts; passed over (None), it never was an answer.
            current, conflict, settled = cand.value, not replaces, cand.final
        prev_end = max(prev_end, cand.end)
    if conflict or isinstance(current, _Marker):
        return None
    return current


_DECLARING = compile_lazily(r"(?i:\banswer\b)|答案|答え|정답")
_CONCLUDING = compile_lazily(r"(?i:\b(?:so|therefore|thus|hence|finally|in\s+total|altogether)\b)"
                             r"|因此|所以")


def box_rank(text: str, start: int, end: int) -> int:
    """The rank of a box from the words before it in its sentence: :data:`DECLARED`
    after "answer" ("**Answer:** \\boxed{1940}"), :data:`CONCLUDING` after "so" or
    "therefore", else 0 ("Boys: \\boxed{35}"); 0 in a hypothetical sentence."""
    lead = text[sentence_bounds(text, start, end)[0]:start]
    base = DECLARED if _DECLARING.search(lead) else CONCLUDING if _CONCLUDING.search(lead) else 0
    return rank(text, start, end, base)
