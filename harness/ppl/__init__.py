"""Likelihood (PPL) evaluation: one prompt per candidate label, the most likely wins.

- ``inferencer``: ``PPLInferencer``, the config side;
- ``template``: ``CandidatePromptTemplate``, one prompt per label;
- ``choice``: continuations, length normalizations (sum, token, byte), the choice;
- ``requests``: echo and next-token request bodies and how replies are read;
- ``probe``: what an endpoint offers, asked once;
- ``runner``: ``PPLRunner.complete``, the model stage's hook for a PPL sample;
- ``labels``: each gold label must be a candidate.
"""

from .inferencer import PPLInferencer
from .runner import PPLRunner

__all__ = ["PPLInferencer", "PPLRunner"]
