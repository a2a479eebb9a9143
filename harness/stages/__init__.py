"""The pipeline's stages, one module each, in the order a sample meets them.

``read`` (rows → samples; stored predictions skip the model) → ``generate`` (model
calls) → ``score`` (extraction and rules) → ``judge`` (stored verdicts, then asking) →
``collect`` (counts, details, results files); ``write`` commits fresh predictions and
verdicts. ``harness.pipeline`` wires them together; ``streams`` holds the send and
receive helpers they share.
"""
