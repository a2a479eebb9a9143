"""Which of several answer statements in one reply the model committed to.

A reply can state an answer more than once. A careful grader reads them in order:
the same answer repeated is fine; a later, different answer replaces the earlier
one only when the model visibly corrects itself ("Wait, actually …") or declares it
final ("The final answer is …"); two different answers with no correction, or a hedge
("B or C"), earn nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence


class _Hedge:
    """Marker value of a statement that names several answers at once."""

    def __repr__(self) -> str:
        return "HEDGE"


HEDGE: Any = _Hedge()
"""Candidate value for "B or C", "either A or D", "A and B": never a committed answer."""


CONCLUDING = 1
"""Rank of a statement in a concluding sentence ("so", "therefore", "in total")."""
DECLARED = 2
"""Rank of a statement that declares itself the final answer."""


@dataclass(frozen=True, slots=True)
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
CORRECTION = re.compile(
    r"\b(?:wait|oops|correction|actually|instead|scratch\s+that|on\s+second\s+thought"
    r"|I\s+made\s+an?\s+(?:\w+\s+)?(?:mistake|error)|my\s+(?:mistake|error|bad)|I\s+was\s+wrong"
    r"|that(?:'s|\s+is|\s+was)\s+(?:wrong|incorrect|a\s+mistake)"
    r"|re-?(?:check\w*|calculat\w*|comput\w*|consider\w*|evaluat\w*|examin\w*)"
    r"|let\s+me\s+(?:correct|fix)|hmm|hold\s+on|no(?=\s*[,.!;:]))\b|等等|不对|错了|更正",
    re.IGNORECASE,
)

# A hypothetical or negation right before the statement ("whether the answer is A",
# "I don't think the answer is A"). Only the last few words count: "Since 12 is not
# divisible by 5 the answer is C" is a committed answer.
_NOT_COMMITTED = re.compile(
    r"(?:\b(?:if|whether|suppose|supposing|assum\w*|unless|not|never|doubt\w*)|n't)"
    r"\s+(?:[\w']+\s+){0,2}$",
    re.IGNORECASE,
)


def committed_clause(text: str, start: int) -> bool:
    """False when the words just before ``start`` make the statement hypothetical."""
    return not _NOT_COMMITTED.search(text[max(0, start - 60):start])


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
        if current is None:
            current, settled = cand.value, cand.final
        elif cand.value is not HEDGE and current is not HEDGE and eq(cand.value, current):
            current = cand.value  # the same answer; keep its latest spelling
            settled = max(settled, cand.final)
        elif CORRECTION.search(text[prev_end:cand.end]) or cand.final > settled:
            # The correction may sit between the statements or open the new one; a
            # final statement outranks earlier answers (an intermediate box, say).
            current, conflict, settled = cand.value, False, cand.final
        else:
            current, conflict, settled = cand.value, True, cand.final
        prev_end = max(prev_end, cand.end)
    if conflict or current is HEDGE:
        return None
    return current
