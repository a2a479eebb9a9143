"""Likelihood (PPL) evaluation: one prompt per candidate label, the most likely wins.

- ``inferencer``: ``PPLInferencer``, the config side;
- ``template``: ``CandidatePromptTemplate``, one prompt per label;
- ``choice``: continuations, length normalizations (sum, token, byte), the choice;
- ``requests``: echo and next-token request bodies and how replies are read;
- ``probe``: what an endpoint offers, asked once;
- ``runner``: ``PPLRunner.complete``, the model stage's hook for a PPL sample;
- ``labels``: the candidates a row offers; its gold label must be one of them.

Names are loaded on first use (PEP 562): every config is checked against
``PPLInferencer``, and only a PPL run needs the runner (and the model client).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .inferencer import PPLInferencer
    from .runner import PPLRunner

_EXPORTS = {"PPLInferencer": "inferencer", "PPLRunner": "runner"}

__all__ = ["PPLInferencer", "PPLRunner"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
