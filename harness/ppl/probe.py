"""What an endpoint offers for likelihoods, asked once before its first PPL request.

One small request per method: echo (``/completions`` with ``echo=True`` and
``logprobs``: does the reply score the prompt's own tokens?) and the next token's top
list (``logprobs``/``top_logprobs`` with ``max_tokens=1``). An endpoint that offers
neither, or not the method the config names, stops the run with an error that says
what is missing, before any candidate is sent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..client import ModelClient
from ..errors import ModelCallError, PermanentModelError
from ..urls import redact_url
from .requests import echo_body, next_token_body, read_echo, read_top

#: The probe's prompt: any short text a model scores in a few tokens.
PROBE_TEXT = "The capital of France is Paris"


class UnsupportedLikelihoodError(PermanentModelError):
    """The endpoint offers no token log-probabilities the PPL config can use."""

    def __init__(self, message: str) -> None:
        super().__init__(message, kind="no_logprobs", cause="no token log-probabilities")


async def probe(client: ModelClient, api: str, top: int, wanted: str) -> frozenset[str]:
    """The methods (``echo``, ``next_token``) ``client``'s endpoint offers on ``api``,
    asking only what ``wanted`` (a ``PPLInferencer`` method) could use; raises
    ``UnsupportedLikelihoodError`` naming what is missing when none of them works."""
    offered: set[str] = set()
    missing: list[str] = []
    model = client.spec.model
    if wanted in ("auto", "echo"):
        if api != "completions":
            missing.append("echo needs the completions endpoint (this model is called on "
                           "chat: set its api='completions' or 'auto', or --model-api completions)")
        else:
            found = await _ask(client, echo_body(model, PROBE_TEXT), "/completions",
                               lambda data: read_echo(data, PROBE_TEXT))
            if isinstance(found, dict) and len(found["tokens"]) > 1:
                offered.add("echo")
            else:
                missing.append("/completions with echo=True and logprobs=1 returned no "
                               f"log-probabilities of the prompt's tokens{_why(found)}")
    if wanted == "next_token" or (wanted == "auto" and not offered):
        path = "/completions" if api == "completions" else "/chat/completions"
        asked = "logprobs" if api == "completions" else "logprobs=true, top_logprobs"
        context = PROBE_TEXT.rsplit(" ", 1)[0]
        request = context if api == "completions" else [{"role": "user", "content": context}]
        found = await _ask(client, next_token_body(model, request, top, api), path, read_top)
        if isinstance(found, dict):
            offered.add("next_token")
        else:
            missing.append(f"{path} with {asked}={top} and max_tokens=1 listed no "
                           f"top log-probabilities for the next token{_why(found)}")
    if not offered:
        raise UnsupportedLikelihoodError(
            f"PPL needs token log-probabilities, and model {model!r} at "
            f"{redact_url(client.spec.base_url)} offers none: " + "; ".join(missing)
            + ". Servers that offer them: vLLM and SGLang (echo), llama.cpp's server and "
            "OpenAI chat models (the next token's, for single-token candidates such as "
            "option letters).")
    return frozenset(offered)


async def _ask(client: ModelClient, body: dict, path: str,
               read: Callable[[Any], Any]) -> object:
    """``read`` of the reply, or the ``ModelCallError`` that refused the request (a 400
    for an unknown field is an answer here); an auth or unknown-model error ends the
    run as it would for any request. A call that failed in passing (a timeout, a lost
    connection, a 429, 502, 503 or 504, after the retries) says nothing of what the
    endpoint offers: it is raised, so nothing is concluded from it. Any other status
    is an answer: some servers refuse an ``echo`` request with a 500."""
    try:
        found, _ = await client.post_json(body, path, read)
    except PermanentModelError:
        raise
    except ModelCallError as exc:
        if exc.status is not None and exc.status not in _TRANSIENT:
            return exc
        raise
    return found


#: Statuses of a server busy or briefly away, not of one refusing the request.
_TRANSIENT = frozenset({408, 429, 502, 503, 504})


def _why(found: object) -> str:
    return f" (the request failed: {found})" if isinstance(found, ModelCallError) else ""
