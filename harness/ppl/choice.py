"""Pick a candidate from its continuation's log-likelihood, under a length normalization.

Each candidate prompt is the shared context plus its own continuation (the text after
the longest common prefix of all candidates; scored by echo, from the last point before
it where a token starts in every candidate, so that no candidate's score leaves out the
start of its answer). A candidate's score is the log-likelihood of its continuation,
normalized as the config says:

- ``sum``: the total log-probability (the default; for single-token candidates such as
  option letters every normalization ranks alike);
- ``token``: per token of the continuation (the mean token log-probability);
- ``byte``: per UTF-8 byte of the continuation text (fair between tokenizers and
  between long and short answers).

The highest score wins; ties go to the first candidate in template order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

#: The cause of a sample whose stored next-token list cannot tell its candidates apart:
#: a rerun reads the same stored list, so only other PPL settings can decide it.
UNDECIDABLE_CAUSE = "PPL: no candidate decidable from the top_logprobs"

#: The length normalizations a PPL dataset can rank by.
Normalization = Literal["sum", "token", "byte"]
NORMALIZATIONS: tuple[str, ...] = ("sum", "token", "byte")


@dataclass(frozen=True)
class Likelihood:
    """One candidate's continuation: its text, token log-probabilities and tokens.

    ``logprobs`` is empty when the server did not report the candidate (absent from a
    next-token top list): then ``below`` is the lowest listed log-probability, an upper
    bound on the candidate's own.
    """

    label: str
    continuation: str
    tokens: tuple[str, ...] = ()
    logprobs: tuple[float, ...] = ()
    below: float | None = None

    @property
    def found(self) -> bool:
        """Whether the server reported this candidate's log-probability."""
        return bool(self.logprobs)

    @property
    def total(self) -> float:
        """The continuation's log-likelihood (sum over its tokens)."""
        return float(sum(self.logprobs))

    def score(self, normalization: Normalization) -> float:
        """The score ranked by: ``total`` normalized per ``normalization``."""
        return normalize(self.total, len(self.logprobs), self.continuation, normalization)


def normalize(total: float, tokens: int, text: str, normalization: Normalization) -> float:
    """``total`` as is (``sum``), per token (``token``) or per UTF-8 byte of ``text``."""
    if normalization == "sum":
        return total
    if normalization == "token":
        return total / max(tokens, 1)
    return total / max(len(text.encode("utf-8")), 1)


@dataclass(frozen=True)
class Choice:
    """The outcome of ranking: the chosen label (``None``: undecidable) and why."""

    label: str | None
    scores: dict[str, float | None]
    reason: str | None = None


def choose(candidates: Sequence[Likelihood], normalization: Normalization) -> Choice:
    """The best candidate by score; a candidate the server did not report counts only if
    it could have won (its score's upper bound beats the best reported one), in which
    case the choice is undecidable and ``label`` is ``None``."""
    scores = {c.label: (c.score(normalization) if c.found else None) for c in candidates}
    found = [c for c in candidates if c.found]
    if not found:
        return Choice(None, scores, "no candidate is among the next tokens the server listed")
    best = max(found, key=lambda c: c.score(normalization))  # first of equals wins
    top = best.score(normalization)
    for c in candidates:
        if c.found or c.below is None:
            continue
        # Per token, an unlisted candidate may be several tokens: its mean is unbounded.
        bound = 0.0 if normalization == "token" else \
            normalize(c.below, 1, c.continuation, normalization)
        if bound >= top:
            return Choice(None, scores,
                          f"candidate {c.label!r} is not among the listed next tokens and "
                          f"could still score above {best.label!r}")
    return Choice(best.label, scores)


def common_prefix(texts: Sequence[str]) -> int:
    """Length of the longest common prefix of ``texts``."""
    first, last = min(texts), max(texts)  # the extremes bound every common prefix
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return n


def token_boundary(text: str, split: int) -> int:
    """``split`` moved back over trailing spaces: a tokenizer attaches a space to the
    word after it (``' A'`` is one token), so the context must not end in one."""
    while split > 0 and text[split - 1] == " ":
        split -= 1
    return split
