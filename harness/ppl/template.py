"""A prompt template with one prompt per candidate label, as OpenCompass PPL configs
write it::

    prompt_template=dict(type=PromptTemplate, template={
        'A': 'Question: {question}\\nAnswer: A',
        'B': 'Question: {question}\\nAnswer: B',
    })

Each value is what ``PromptTemplate`` takes (a string, or ``dict(round=[...])``), so
``{label: dict(round=[HUMAN question, BOT answer])}`` works too. ``PromptTemplate``
builds this class itself when its template is such a dict.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..prompt import Messages, PromptTemplate, as_text

#: Keys that make a template dict one prompt (rounds), not one prompt per label.
_PROMPT_KEYS = frozenset({"begin", "round", "end"})


def is_candidate_dict(template: Any) -> bool:
    """Whether ``template`` maps labels to prompts rather than describing one prompt."""
    return isinstance(template, Mapping) and bool(template) \
        and not _PROMPT_KEYS & set(template)


class CandidatePromptTemplate(PromptTemplate):
    """One ``PromptTemplate`` per candidate label; ``labels`` keep the template's order.

    Labels are compared as text (``0`` and ``'0'`` are one label, so a config may not
    give both). ``messages`` holds every candidate's messages (for the placeholder
    checks); ``render`` gives what all candidates share (the prompt shown in details).
    """

    def __init__(self, template: Mapping[Any, Any], ice_token: str | None = None,
                 sep_token: str | None = None) -> None:
        if len(template) < 2:
            raise ValueError(f"PPL needs at least two candidate prompts, one per label; "
                             f"the template has {len(template)}")
        self.candidates: dict[str, PromptTemplate] = {}
        for label, prompt in template.items():
            if not isinstance(label, (str, int)) or isinstance(label, bool):
                raise ValueError(f"a candidate label must be text or an integer, not {label!r}")
            if str(label) in self.candidates:
                raise ValueError(f"two candidates have the label {str(label)!r}")
            if not isinstance(prompt, (str, Mapping)) or is_candidate_dict(prompt):
                raise ValueError(f"the prompt of candidate {label!r} must be a string or "
                                 f"dict(round=[...]), not {prompt!r}")
            self.candidates[str(label)] = PromptTemplate(prompt, ice_token, sep_token)
        kinds = {t.kind for t in self.candidates.values()}
        if len(kinds) > 1:
            raise ValueError("the candidate prompts mix plain strings and rounds; write "
                             "them all one way")
        self.kind = kinds.pop()
        self.messages = tuple(m for t in self.candidates.values() for m in t.messages)

    @property
    def labels(self) -> tuple[str, ...]:
        """The candidate labels, in template order."""
        return tuple(self.candidates)

    def render_candidates(self, values: Mapping[str, Any]) -> dict[str, Messages]:
        """Each candidate's messages, placeholders filled from ``values``."""
        return {label: t.render(values) for label, t in self.candidates.items()}

    def render(self, values: Mapping[str, Any]) -> Messages:
        """What every candidate's prompt shares: the common leading messages, or for a
        text prompt its common beginning (one user message)."""
        # Imported here: every config is checked against this class, few are PPL ones.
        from .choice import common_prefix

        rendered = list(self.render_candidates(values).values())
        if self.kind == "text":
            texts = [as_text(m) for m in rendered]
            return ({"role": "user", "content": texts[0][:common_prefix(texts)]},)
        shared = []
        # Candidates may differ in length: the shared prefix ends at the shortest.
        for messages in zip(*rendered, strict=False):
            if any(m != messages[0] for m in messages):
                break
            shared.append(messages[0])
        return tuple(shared) or ({"role": "user", "content": ""},)
