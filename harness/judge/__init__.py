"""The LLM judge: evaluators, verdict parsing, pacing, and the judge pipeline stage."""
