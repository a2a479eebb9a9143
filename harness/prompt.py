"""Prompt templates: ``RawPromptTemplate`` (chat messages) and ``PromptTemplate`` (a text
prompt, or rounds).

A template renders chat messages. Its ``kind`` says what it was written as: ``chat``
(messages, rounds) or ``text`` (a plain string, the completion-style prompt that base
models are evaluated with). A model with ``api='auto'`` sends a ``text`` prompt to the
completions endpoint; :func:`as_text` flattens messages into such a prompt.

Placeholders are ``{name}`` and are filled in ONE pass: a value that itself contains
``{answer}`` is pasted as data and never expanded again (OpenCompass fills templates by
repeated ``str.replace``, which pastes the gold answer into such a prediction). A
placeholder with no value, LaTeX such as ``\\boxed{}`` or ``\\frac{a}{b}`` included,
stays exactly as written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

#: The one placeholder syntax: ``{name}``.
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")

Messages = tuple[dict[str, str], ...]

#: What a template was written as: chat messages or one plain text prompt.
PromptKind = Literal["chat", "text"]

#: OpenCompass round roles → OpenAI chat roles.
_ROLE_MAP = {"HUMAN": "user", "BOT": "assistant", "SYSTEM": "system",
             "user": "user", "assistant": "assistant", "system": "system"}


def fill(template: str, values: Mapping[str, Any]) -> str:
    """Replace each ``{name}`` that has a value in ``values``; leave the rest as written."""
    return _fill(PLACEHOLDER.split(template), values)


def _fill(pieces: Sequence[str], values: Mapping[str, Any]) -> str:
    """``fill`` of a template split by ``PLACEHOLDER`` (text, name, text, …, text): split
    once per template, filled once per sample."""
    if len(pieces) == 1:
        return pieces[0]  # no placeholder
    out = [pieces[0]]
    for i in range(1, len(pieces), 2):
        name = pieces[i]
        if name in values:
            value = values[name]
            out.append("" if value is None else str(value))
        else:
            out.append("{" + name + "}")
        out.append(pieces[i + 1])
    return "".join(out)


def as_text(messages: Sequence[Mapping[str, str]]) -> str:
    """The completion prompt for ``messages``: their non-empty contents joined by newlines,
    as OpenCompass joins a dialogue for a model without a meta template."""
    return "\n".join(m["content"] for m in messages if m["content"])


class RawPromptTemplate:
    """A list of chat messages (``{'role': ..., 'content': ...}``) with placeholders."""

    kind: PromptKind = "chat"

    def __init__(self, messages: Iterable[Mapping[str, str]]) -> None:
        self.messages: Messages = tuple(_normalize(m) for m in messages)
        if not self.messages:
            raise ValueError("RawPromptTemplate needs at least one message")
        if not any(m["content"].strip() for m in self.messages):
            raise ValueError("the prompt is empty: every message's content is blank")

    @property
    def messages(self) -> Messages:
        """The chat messages as written, placeholders and all."""
        return self._messages

    @messages.setter
    def messages(self, messages: Messages) -> None:
        self._messages = messages
        # Split once here, not per sample: rendering only joins the pieces.
        self._pieces = tuple((m["role"], PLACEHOLDER.split(m["content"])) for m in messages)

    def render(self, values: Mapping[str, Any]) -> Messages:
        """The messages with placeholders filled from ``values`` (one pass)."""
        return tuple([{"role": role, "content": _fill(pieces, values)}
                      for role, pieces in self._pieces])  # a list builds faster than a generator


class PromptTemplate(RawPromptTemplate):
    """OpenCompass's ``PromptTemplate``: a plain string, or ``dict(begin=..., round=[...])``.

    A string is a ``text`` prompt: sent as is to a completions endpoint, or as one user
    message to a chat endpoint. Rounds map ``HUMAN``/``BOT``/``SYSTEM`` roles to
    ``user``/``assistant``/``system`` and take their text from ``prompt``.

    ``ice_token`` marks where OpenCompass pastes in-context examples; with
    ``ZeroRetriever`` there are none, so the marker is removed, as OpenCompass does.
    ``sep_token`` only matters to OpenCompass's likelihood inferencers: accepted, unused.
    A dict with one prompt per label (``{'A': ..., 'B': ...}``) builds a
    ``harness.ppl.template.CandidatePromptTemplate``, for ``PPLInferencer``.
    """

    def __new__(cls, template: Any = None, *args: Any, **kwargs: Any) -> PromptTemplate:
        # One prompt per label (``{'A': ..., 'B': ...}``) is a PPL template.
        from .ppl.template import CandidatePromptTemplate, is_candidate_dict

        if cls is PromptTemplate and is_candidate_dict(template):
            return super().__new__(CandidatePromptTemplate)
        return super().__new__(cls)

    def __init__(self, template: str | Mapping[str, Any], ice_token: str | None = None,
                 sep_token: str | None = None) -> None:
        if isinstance(template, str):
            self.kind = "text"
            messages: list[Mapping[str, str]] = [{"role": "user", "content": template}]
        else:
            messages = [*template.get("begin", []), *template.get("round", [])]
            messages = [m for m in messages if isinstance(m, Mapping)]
        super().__init__(messages)
        if ice_token:
            self.messages = tuple({**m, "content": m["content"].replace(ice_token, "")}
                                  for m in self.messages)


def _normalize(message: Mapping[str, str]) -> dict[str, str]:
    role = str(message.get("role", "user"))
    content = message.get("content", message.get("prompt"))
    if content is None:
        raise ValueError(f"prompt message {dict(message)!r} has no 'content'")
    if not isinstance(content, str):
        raise ValueError(f"a prompt message's content must be text, not {content!r}")
    return {"role": _ROLE_MAP.get(role, role.lower()), "content": content}
