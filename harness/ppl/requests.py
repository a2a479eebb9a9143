"""Likelihood requests and how their replies are read.

Two ways to get log-probabilities from an OpenAI-compatible server:

- **echo** (vLLM, SGLang, OpenAI's legacy completions): ``POST /completions`` with
  ``echo=True``, ``logprobs=1``, ``max_tokens=1``; the reply's
  ``choices[0].logprobs`` holds ``tokens``, ``token_logprobs`` and ``text_offset`` for
  the prompt itself (then for the one generated token, which is ignored).
- **next token** (llama.cpp's server, OpenAI chat models): the shared context with
  ``max_tokens=1`` and the next token's top list: ``logprobs=K`` on ``/completions``
  or ``logprobs=true, top_logprobs=K`` on ``/chat/completions``. The list comes either
  as OpenAI's chat form (``logprobs.content[0].top_logprobs``: ``[{token, logprob}]``,
  which llama.cpp also uses on ``/completions``) or the legacy form
  (``logprobs.top_logprobs[0]``: ``{token: logprob}``).

What a reply says is kept as a small JSON-able dict (``EchoScores``, ``TopTokens``):
that is what the store holds, so a changed normalization re-ranks without a request.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..retry import BadResponse

#: The likelihood parameters of each method, in prediction keys (not the request body:
#: that depends on the endpoint).
ECHO_PARAMS = {"ppl": "echo", "echo": True, "logprobs": 1, "max_tokens": 1}


def next_token_params(top: int) -> dict[str, Any]:
    """The key parameters of a next-token request asking for ``top`` tokens."""
    return {"ppl": "next_token", "top_logprobs": top, "max_tokens": 1}


def echo_body(model: str, prompt: str) -> dict[str, Any]:
    """The ``/completions`` body that scores ``prompt``'s own tokens."""
    return {"model": model, "prompt": prompt, "echo": True, "logprobs": 1, "max_tokens": 1}


def next_token_body(model: str, context: str | Sequence[Mapping[str, str]], top: int,
                    api: str) -> dict[str, Any]:
    """The body asking for the ``top`` most likely tokens after ``context`` (a prompt
    for ``/completions``, messages for ``/chat/completions``)."""
    if api == "completions":
        return {"model": model, "prompt": context, "max_tokens": 1, "logprobs": top}
    return {"model": model, "messages": list(context), "max_tokens": 1, "logprobs": True,
            "top_logprobs": top}


def _logprobs(data: Any) -> Any:
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise BadResponse("the response has no choices")
    return choices[0].get("logprobs")


def read_echo(data: Any, prompt: str) -> dict[str, list[Any]] | None:
    """The prompt's tokens as ``{'tokens', 'logprobs', 'offsets'}`` (the first token's
    log-probability is ``None``: nothing precedes it); ``None`` when the reply has no
    prompt log-probabilities (the server ignored ``echo``)."""
    lp = _logprobs(data)
    if not isinstance(lp, dict):
        return None
    tokens, values, offsets = lp.get("tokens"), lp.get("token_logprobs"), lp.get("text_offset")
    if not (isinstance(tokens, list) and isinstance(values, list)
            and isinstance(offsets, list) and len(tokens) == len(values) == len(offsets)):
        return None
    keep = [i for i, offset in enumerate(offsets)
            if isinstance(offset, int) and offset < len(prompt)]
    if not keep or keep != list(range(len(keep))):
        return None  # no prompt tokens: echo was ignored
    try:
        logprobs = [None if values[i] is None else float(values[i]) for i in keep]
    except (TypeError, ValueError) as exc:
        raise BadResponse(f"malformed token_logprobs: {exc}") from exc
    if any(v is not None and not math.isfinite(v) for v in logprobs[1:]):
        raise BadResponse("a prompt token's logprob is not a finite number")
    return {"tokens": [str(tokens[i]) for i in keep], "logprobs": logprobs,
            "offsets": [offsets[i] for i in keep]}


def read_top(data: Any) -> dict[str, list[list[Any]]] | None:
    """The next token's top list as ``{'top': [[token, logprob], ...]}``; ``None`` when
    the reply lists none."""
    lp = _logprobs(data)
    if not isinstance(lp, dict):
        return None
    pairs: list[list[Any]] = []
    content = lp.get("content")
    legacy = lp.get("top_logprobs")
    try:
        if isinstance(content, list) and content and isinstance(content[0], dict):
            pairs = [[str(t["token"]), float(t["logprob"])]
                     for t in content[0].get("top_logprobs") or []]
        elif isinstance(legacy, list) and legacy and isinstance(legacy[0], dict):
            pairs = [[str(token), float(value)] for token, value in legacy[0].items()]
    except (KeyError, TypeError, ValueError) as exc:
        raise BadResponse(f"malformed top_logprobs: {exc!r}") from exc
    pairs = [p for p in pairs if math.isfinite(p[1])]
    return {"top": pairs} if pairs else None


def usage(data: Any) -> tuple[int, int]:
    """``(prompt_tokens, completion_tokens)`` of a reply (zeros when it reports none)."""
    used = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(used, dict):
        return 0, 0
    try:
        return int(used.get("prompt_tokens") or 0), int(used.get("completion_tokens") or 0)
    except (TypeError, ValueError):
        return 0, 0
