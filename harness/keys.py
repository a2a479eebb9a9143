"""The one key function: sha256 of a canonical JSON of what determines a result.

Keys include everything that can change a prediction or a verdict and nothing that
cannot (concurrency, timeouts, retry counts, API keys), so a rerun finds its stored
results and a changed template or model re-runs exactly the affected samples.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from .json_encode import encoder

# One encoder for every key (see ``harness.json_encode``).
_canonical = encoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def canonical_json(obj: Any) -> str:
    """Deterministic JSON: sorted keys, no whitespace, UTF-8 kept as is."""
    return _canonical(obj)


def content_key(kind: str, **parts: Any) -> str:
    """sha256 hex of ``kind`` and ``parts``; the single place keys are computed."""
    return hashlib.sha256(_canonical({"kind": kind, **parts}).encode()).hexdigest()


def request_content(messages: Sequence[Mapping[str, str]], api: str = "chat") -> dict[str, Any]:
    """What a request sends, for a key: the chat messages, or for the completions endpoint
    the prompt text itself (so a change in how messages become a prompt changes keys)."""
    if api == "chat":
        return {"messages": list(messages)}  # chat keys stay what they always were
    from .prompt import as_text

    return {"prompt": as_text(messages), "api": api}


def prediction_key(identity: Mapping[str, Any], messages: Sequence[Mapping[str, str]],
                   gen_params: Mapping[str, Any], replica: int, api: str = "chat") -> str:
    """Key of one model prediction: model identity, generation params, what the request
    sends (``request_content``), replica."""
    return content_key("prediction", model=identity, gen=gen_params, replica=replica,
                       **request_content(messages, api))
