"""The one key function: sha256 of a canonical JSON of what determines a result.

Keys include everything that can change a prediction or a verdict and nothing that
cannot (concurrency, timeouts, retry counts, API keys), so a rerun finds its stored
results and a changed template or model re-runs exactly the affected samples.

``KeyTemplate`` computes the same keys for many samples that share most of their parts
(one model, one dataset): the shared parts are encoded once, and each key encodes only
what varies. Its text is ``content_key``'s byte for byte, by construction.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .json_encode import encoder

# One encoder for every key (see ``harness.json_encode``).
_canonical = encoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)

# Stands for a varying part while the shared ones are encoded: a string no part
# contains, so it marks exactly where each varying part's encoding goes.
_SLOT = "\x00harness-key-slot\x00"


def canonical_json(obj: Any) -> str:
    """Deterministic JSON: sorted keys, no whitespace, UTF-8 kept as is."""
    return _canonical(obj)


def content_key(kind: str, **parts: Any) -> str:
    """sha256 hex of ``kind`` and ``parts``; the single place keys are computed."""
    return hashlib.sha256(_canonical({"kind": kind, **parts}).encode()).hexdigest()


class KeyTemplate:
    """``content_key(kind, **shared, **varying)``, the varying parts given per call.

    The canonical JSON of the shared parts is made once, with a slot where each varying
    part goes (keys are sorted, so the slots fall where ``content_key`` encodes those
    parts); a call encodes the varying parts alone and joins the pieces.
    """

    def __init__(self, kind: str, varying: Sequence[str], **shared: Any) -> None:
        # content_key would refuse a part given twice; the dicts below would keep one.
        if twice := set(varying) & {"kind", *shared}:
            raise ValueError(f"key parts both shared and varying: {sorted(twice)}")
        text = _canonical({"kind": kind, **shared, **{name: _SLOT for name in varying}})
        pieces = text.split(_canonical(_SLOT))
        if len(pieces) != len(varying) + 1:
            raise ValueError("a shared part of a key contains the slot marker")
        self._first = pieces[0]
        # (position of the value in a call, the text after its slot), in text order.
        by_name = sorted(range(len(varying)), key=lambda i: varying[i])
        self._slots = tuple(zip(by_name, pieces[1:], strict=True))

    def __call__(self, *values: Any) -> str:
        """The key for these values of the varying parts, in the order they were named."""
        text = self._first + "".join([_canonical(values[i]) + after
                                      for i, after in self._slots])
        return hashlib.sha256(text.encode()).hexdigest()


def request_keys(kind: str, api: str = "chat",
                 **shared: Any) -> Callable[[Sequence[Mapping[str, str]], int], str]:
    """Keys of the requests one endpoint answers (``kind`` ``prediction`` or ``verdict``),
    ``shared`` being who answers and with which generation parameters: a function of the
    messages and the replica. A key holds what the request sends: the chat messages, or
    for the completions endpoint the prompt text itself (so a change in how messages
    become a prompt changes keys); chat keys stay what they always were."""
    if api == "chat":
        chat = KeyTemplate(kind, ("messages", "replica"), **shared)
        return lambda messages, replica: chat(list(messages), replica)
    from .prompt import as_text

    text = KeyTemplate(kind, ("prompt", "replica"), api=api, **shared)
    return lambda messages, replica: text(as_text(messages), replica)


def prediction_keys(identity: Mapping[str, Any], gen_params: Mapping[str, Any],
                    api: str = "chat") -> Callable[[Sequence[Mapping[str, str]], int], str]:
    """``prediction_key`` for one model and its generation parameters, for the many
    samples of a dataset (see ``request_keys``)."""
    return request_keys("prediction", api, model=identity, gen=gen_params)


def prediction_key(identity: Mapping[str, Any], messages: Sequence[Mapping[str, str]],
                   gen_params: Mapping[str, Any], replica: int, api: str = "chat") -> str:
    """Key of one model prediction: model identity, generation params, what the request
    sends (the messages, or the completions prompt), replica."""
    return prediction_keys(identity, gen_params, api)(messages, replica)
