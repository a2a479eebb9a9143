"""``PPLInferencer``: choose among candidate prompts by their likelihood (config side)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..config_keys import switch
from ..errors import ConfigError

#: How likelihoods are obtained: ``echo`` (the completions endpoint scores the whole
#: prompt: ``echo=True`` with ``logprobs``), ``next_token`` (one request for the shared
#: context, reading each single-token candidate from the next token's ``top_logprobs``)
#: or ``auto`` (echo where the endpoint offers it, else the next token).
METHODS = ("auto", "echo", "next_token")

#: OpenCompass ``PPLInferencer`` settings accepted without effect (its own batching and
#: sequence truncation; harness streams every request and never truncates a prompt).
INERT_KEYS = ("batch_size", "max_seq_len", "save_every")


class PPLInferencer:
    """Likelihood evaluation: one prompt per candidate label, the most likely one wins.

    Each candidate is scored by the log-likelihood of its continuation (its prompt after
    the part all candidates share), ``normalization`` ``'sum'`` (default), ``'token'``
    (per token) or ``'byte'`` (per UTF-8 byte). ``labels`` restricts the candidates to
    some of the template's labels, as in OpenCompass. ``top_logprobs`` is how many next
    tokens the ``next_token`` method asks for.

    ``listed_options=True`` (labels that are option letters) makes each row's candidates
    only the letters it lists, read as the multiple-choice postprocessors read them
    (columns named ``A``, ``B`` … with a value, else the "(A) …" lines of its text): a
    question with options (A)–(E) is not scored over a template's (F).

    OpenCompass's ``normalizing_str`` (a calibration: the candidate's PPL after a
    neutral context is subtracted) is not supported and is a ``ConfigError``.
    """

    def __init__(self, normalization: str = "sum", method: str = "auto",
                 labels: Sequence[Any] | None = None, top_logprobs: int = 20,
                 listed_options: bool = False, **inert: Any) -> None:
        if "normalizing_str" in inert:
            raise ConfigError("normalizing_str (OpenCompass's calibration by a neutral "
                              "prompt) is not supported; use normalization='sum', "
                              "'token' or 'byte'", field="normalizing_str")
        unknown = sorted(set(inert) - set(INERT_KEYS))
        if unknown:
            raise ConfigError("unknown key for PPLInferencer (it takes normalization, "
                              "method, labels, top_logprobs, listed_options)", field=unknown[0])
        # Imported here: every config is checked against this class, few are PPL ones.
        from .choice import NORMALIZATIONS

        if normalization not in NORMALIZATIONS:
            raise ConfigError(f"must be one of {', '.join(NORMALIZATIONS)}, not "
                              f"{normalization!r}", field="normalization")
        if method not in METHODS:
            raise ConfigError(f"must be one of {', '.join(METHODS)}, not {method!r}",
                              field="method")
        if isinstance(top_logprobs, bool) or not isinstance(top_logprobs, int) \
                or not 1 <= top_logprobs <= 20:
            raise ConfigError(f"must be an integer from 1 to 20, not {top_logprobs!r}",
                              field="top_logprobs")
        if labels is not None and (isinstance(labels, (str, Mapping))
                                   or not isinstance(labels, Sequence) or len(labels) < 2):
            raise ConfigError(f"must be a list of at least two labels, not {labels!r}",
                              field="labels")
        self.normalization = normalization
        self.method = method
        self.labels = None if labels is None else tuple(str(label) for label in labels)
        self.top_logprobs = top_logprobs
        self.listed_options = switch(listed_options, "listed_options")

    def gen_params(self) -> dict[str, Any]:
        """What keys the dataset's samples (never sent: likelihood requests carry their
        own parameters, see ``harness.ppl.requests``)."""
        params = {"method": self.method, "normalization": self.normalization,
                  "labels": self.labels, "top_logprobs": self.top_logprobs}
        if self.listed_options:  # only when set: other PPL datasets keep their keys
            params["listed_options"] = True
        return {"ppl": params}

    def check_template(self, template: Any) -> tuple[str, ...]:
        """The candidate labels of ``template`` (a ``ConfigError`` at ``prompt_template``
        when it has no prompt per label, or ``labels`` names one it lacks)."""
        from .template import CandidatePromptTemplate

        if not isinstance(template, CandidatePromptTemplate):
            raise ConfigError("PPLInferencer needs one prompt per candidate label: "
                              "template={'A': '...Answer: A', 'B': '...Answer: B'}",
                              field="prompt_template.template")
        labels = template.labels if self.labels is None else self.labels
        missing = [label for label in labels if label not in template.candidates]
        if missing:
            raise ConfigError(f"labels {missing} have no prompt in the template (its "
                              f"labels: {', '.join(template.labels)})", field="inferencer.labels")
        other = [label for label in labels if len(label) != 1 or not "A" <= label <= "Z"]
        if self.listed_options and other:
            raise ConfigError(f"needs option letters A-Z as labels, not {other}",
                              field="inferencer.listed_options")
        return labels
