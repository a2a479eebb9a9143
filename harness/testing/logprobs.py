"""Deterministic token log-probabilities for the fake server's ``/completions`` route.

Text is split into word tokens that carry their leading whitespace (``'Answer:'``,
``' A'``), as BPE and SentencePiece tokenizers attach a space to the word after it.
A token's log-probability after a context comes from ``Scorer.logprob``: by default a
hash of both (in ``[-8, -0.05]``, the same in every run), and a test overrides it to
make a known candidate the most likely one::

    scorer = Scorer(lambda context, token: -0.1 if token == " B" else -5.0)
    FakeOpenAI(scorer=scorer)

With ``logprobs`` in the request, a reply carries OpenAI's legacy ``logprobs`` object
(``tokens``, ``token_logprobs``, ``top_logprobs``, ``text_offset``); with ``echo=True``
the prompt comes first in ``text`` and in those lists (its first token's logprob is
``None``), as vLLM answers. The generated token's ``top_logprobs`` rank ``vocabulary``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

_TOKEN = re.compile(r"\s*\S+|\s+")

#: The next tokens the fake lists by default: option letters and a few words.
VOCABULARY = (" A", " B", " C", " D", " E", " Yes", " No", " The", "\n", " 1", " 2")


def tokenize(text: str) -> list[tuple[str, int]]:
    """``(token, offset)`` pairs: words with their leading whitespace."""
    return [(m.group(0), m.start()) for m in _TOKEN.finditer(text)]


def hashed_logprob(context: str, token: str) -> float:
    """A log-probability in ``[-8, -0.05]`` fixed by ``context`` and ``token``."""
    digest = hashlib.sha256(f"{context}\x00{token}".encode()).digest()
    return -0.05 - 7.95 * int.from_bytes(digest[:4], "big") / 2**32


@dataclass
class Scorer:
    """How the fake scores tokens: ``logprob(context, token)``, the ``vocabulary`` its
    next-token lists rank and how it splits text into tokens (``tokenize``)."""

    logprob: Callable[[str, str], float] = hashed_logprob
    vocabulary: Sequence[str] = field(default=VOCABULARY)
    #: How text splits into ``(token, offset)`` pairs (a test may split words into
    #: pieces, as a subword tokenizer does).
    tokenize: Callable[[str], list[tuple[str, int]]] = tokenize

    def top(self, context: str, k: int) -> dict[str, float]:
        """The ``k`` most likely vocabulary tokens after ``context``."""
        ranked = sorted(((self.logprob(context, t), t) for t in self.vocabulary), reverse=True)
        return {token: value for value, token in ranked[:max(k, 1)]}

    def attach(self, body: dict, choice: dict[str, Any]) -> None:
        """Give a ``/completions`` choice the ``logprobs`` (and, with ``echo``, the
        prompt) the request asked for."""
        prompt, text = body["prompt"], choice.get("text") or ""
        k = int(body.get("logprobs") or 0)
        echo = bool(body.get("echo"))
        # With echo the prompt is part of the returned text, offsets included.
        shown, hidden = (prompt + text, "") if echo else (text, prompt)
        lp: dict[str, list[Any]] = {"tokens": [], "token_logprobs": [], "top_logprobs": [],
                                    "text_offset": []}
        # The prompt is tokenized on its own: generated text never merges into it.
        tokens = self.tokenize(text) if not echo else \
            self.tokenize(prompt) + [(t, o + len(prompt)) for t, o in self.tokenize(text)]
        for token, offset in tokens:
            context = hidden + shown[:offset]
            value = None if not context else self.logprob(context, token)
            generated = offset >= len(prompt) if echo else True
            listed = self.top(context, k) if generated else {}
            if value is not None:
                listed.setdefault(token, value)
            lp["tokens"].append(token)
            lp["token_logprobs"].append(value)
            lp["top_logprobs"].append(listed or None)
            lp["text_offset"].append(offset)
        choice["text"] = shown
        choice["logprobs"] = lp
