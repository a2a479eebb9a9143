"""The one key function: sha256 of a canonical JSON of what determines a result.

Keys include everything that can change a prediction or a verdict and nothing that
cannot (concurrency, timeouts, retry counts, API keys), so a rerun finds its stored
results and a changed template or model re-runs exactly the affected samples.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from json.encoder import encode_basestring
from typing import Any


def json_encoder(*, sort_keys: bool,
                 separators: tuple[str, str] = (",", ":")) -> Callable[[Any], str]:
    """A reusable JSON encoder (UTF-8 kept as is, anything else as ``str``): the C
    encoder ``JSONEncoder.encode`` builds on every call, built once, with the arguments
    ``JSONEncoder.iterencode`` passes it (so the same text), without a new encoder
    object and a cycle check per call: about a quarter of the cost of a small key. What
    it encodes is JSON-like data, where a cycle fails either way."""
    item_separator, key_separator = separators
    c_make_encoder = getattr(json.encoder, "c_make_encoder", None)  # not in typeshed
    if c_make_encoder is None:  # a Python without the _json accelerator
        return json.JSONEncoder(sort_keys=sort_keys, separators=separators,
                                ensure_ascii=False, default=str).encode
    encode = c_make_encoder(None, str, encode_basestring, None, key_separator,
                            item_separator, sort_keys, False, True)
    return lambda obj: "".join(encode(obj, 0))


_ENCODE = json_encoder(sort_keys=True)


def canonical_json(obj: Any) -> str:
    """Deterministic JSON: sorted keys, no whitespace, UTF-8 kept as is."""
    return _ENCODE(obj)


def content_key(kind: str, **parts: Any) -> str:
    """sha256 hex of ``kind`` and ``parts``; the single place keys are computed."""
    return hashlib.sha256(canonical_json({"kind": kind, **parts}).encode()).hexdigest()


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
