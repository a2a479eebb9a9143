"""Typed records that flow between pipeline stages.

Every stage receives one small frozen record and emits the next (the per-sample ones are
``harness.frozen.record``s: frozen for the type checker, cheap to build); a per-sample
failure is a ``status`` on the record, never an exception that ends the run::

    Sample ─▶ Completion ─▶ SampleResult ──────────────────────────▶ (collected)
    (row +     (model reply    (extracted answer, rule verdict, status)
     prompt)    or error)       └▶ JudgeTask ─▶ JudgeRequest ─▶ SampleResult
                                  (rules done)  (judge messages,  (with the verdict)
                                                 verdict key)

``StoreWrite`` is what the store writer commits: fresh completions and verdicts, and the
``OutcomeRow`` of each final result (``harness.outcomes``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from . import defaults
from .frozen import record

#: Which endpoint a model is called on: ``chat`` (``/chat/completions``, messages),
#: ``completions`` (``/completions``, a text prompt) or ``auto`` (completions for a
#: dataset whose prompt is a text template, chat otherwise).
ModelAPI = Literal["chat", "completions", "auto"]

#: Outcome of one model call. ``error`` calls are retried on the next run.
CompletionStatus = Literal["ok", "error"]

#: Final status of one (sample, replica) for one model.
#: ``ok``             scored by the evaluator (correct or not);
#: ``extract_failed`` the postprocessor found no answer: scored as wrong, counted in extract_rate;
#: ``empty_reply``    the model's answer was empty after its retries: scored as wrong, an
#:                    extraction failure with its own count;
#: ``timeout``        the rule check exceeded its time limit: scored as wrong, counted apart;
#: ``model_error``    the model call failed for good: not scored, retried on the next run;
#: ``eval_error``     the evaluator raised on this sample: not scored;
#: ``missing``        ``--mode eval`` and no stored prediction: not scored.
#: ``judge_unparsed`` a judge-only evaluation whose verdict could not be read: not scored;
#: ``judge_error``    the judge call failed (judge-only or cascade): not scored, retried.
#: ``sandbox_error``  the sandbox running generated code failed (not the code): not
#:                    scored, retried on the next run.
SampleStatus = Literal["ok", "extract_failed", "empty_reply", "timeout", "model_error",
                       "eval_error", "missing", "judge_unparsed", "judge_error",
                       "sandbox_error"]

#: Outcome of judging one sample: a readable verdict, an unreadable one after the
#: re-asks, or a call that failed for good (retried on the next run).
JudgeStatus = Literal["ok", "unparsed", "error"]

#: Statuses that count in the accuracy denominator.
SCORED_STATUSES: frozenset[str] = frozenset({"ok", "extract_failed", "empty_reply", "timeout"})

#: Scored statuses in which no answer was found (they lower ``extract_rate``).
NO_ANSWER_STATUSES: frozenset[str] = frozenset({"extract_failed", "empty_reply"})

#: Rule outcomes a cascade's judge layer builds on (an evaluator error or a failed model
#: call has no rule verdict to combine with).
RULE_DECIDED_STATUSES: frozenset[str] = frozenset({"ok", "extract_failed", "timeout"})

#: Statuses of samples that were never predicted (a failed call, or ``--mode eval``
#: without a stored prediction): they lower how far a run got (``results.reach``).
UNPREDICTED_STATUSES: frozenset[str] = frozenset({"model_error", "missing"})

#: What is pending in ``--mode infer``, where nothing is scored: only a failed call.
INFER_PENDING_STATUSES: frozenset[str] = frozenset({"model_error"})

@dataclass(frozen=True, slots=True)
class ModelSpec:
    """One OpenAI-compatible endpoint and the generation parameters sent to it.

    ``api_key`` is held in memory only: it is excluded from ``identity()`` (so it never
    reaches the store or a key) and from ``repr``. ``rpm``/``tpm`` pace the calls
    (requests and tokens per minute) and ``concurrency`` caps the calls in flight, for a
    model under evaluation as for a judge. ``timeout`` bounds one attempt,
    ``connect_timeout`` the opening of a connection, ``max_attempts`` the attempts that
    fail other than by a 429, and ``rate_limit_timeout`` how long a call retries 429s.
    """

    abbr: str
    model: str
    base_url: str
    api_key: str = field(default="", repr=False)
    gen_params: Mapping[str, Any] = field(default_factory=dict)
    timeout: float = defaults.TIMEOUT
    max_attempts: int = defaults.MAX_ATTEMPTS
    connect_timeout: float = defaults.CONNECT_TIMEOUT
    rate_limit_timeout: float = defaults.RATE_LIMIT_TIMEOUT
    concurrency: int | None = None
    endpoint_id: str | None = None
    transport: str = "aiohttp"
    api: ModelAPI = "chat"
    rpm: float | None = None
    tpm: float | None = None

    def identity(self) -> dict[str, Any]:
        """What identifies this model's outputs: the endpoint and the model name.

        ``endpoint_id`` replaces the base URL where the URL is not stable across runs
        (the embedded model listens on a new free port each time). A secret in the URL
        (``?api-key=…``) is masked: it decides no output, and this identity is stored.
        """
        from .urls import redact_url

        endpoint = self.endpoint_id or redact_url(self.base_url.rstrip("/"))
        return {"endpoint": endpoint, "model": self.model}


@record
class Sample:
    """One dataset row, rendered for one model and one replica.

    ``key`` is the prediction key (see ``harness.keys``): identical keys share one stored
    prediction, which is what makes resume and re-scoring free. ``api`` is the endpoint
    the prompt goes to: ``chat`` (the messages) or ``completions`` (``as_text`` of them).
    """

    dataset: str
    model: str
    index: int
    replica: int
    row: Mapping[str, Any]
    reference: Any
    messages: tuple[Mapping[str, str], ...]
    key: str
    gen_params: Mapping[str, Any] = field(default_factory=dict)
    api: Literal["chat", "completions"] = "chat"


@record
class Completion:
    """The outcome of one model call (or its stored copy) for one sample.

    ``reasoning`` is what the server sent beside the answer (``reasoning_content``):
    stored and shown, never scored. ``cause`` says in a few words why a call failed
    (``ModelCallError.outcome``), the same for every call that failed the same way.
    """

    sample: Sample
    status: CompletionStatus
    text: str | None = None
    finish_reason: str | None = None
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    attempts: int = 0
    cached: bool = False
    reasoning: str | None = None
    cause: str | None = None
    #: Shown in the sample's details row (a PPL sample's candidate scores, ``ppl``).
    details: Mapping[str, Any] | None = None


@record
class VerdictRecord:
    """One judge verdict as stored: keyed by everything that can change it."""

    key: str
    judge: str
    model: str
    dataset: str
    index: int
    replica: int
    status: JudgeStatus
    verdict: str | None
    reply: str | None
    probability: float | None = None
    error: str | None = None
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    cause: str | None = None
    #: Re-asks the verdict took; for an ``unparsed`` one, all its judge allowed.
    reasks: int = 0


@record
class SampleResult:
    """Everything known about one scored (or failed) sample; one details row.

    ``cause`` is why a pending sample is not scored, in a few words shared by every
    sample that failed the same way (the run's failures are counted by it).
    """

    dataset: str
    model: str
    index: int
    replica: int
    status: SampleStatus
    prompt: tuple[Mapping[str, str], ...]
    prediction: str | None
    extracted: Any
    reference: Any
    correct: bool | None
    error: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    cached: bool = False
    rule_correct: bool | None = None
    judge_status: JudgeStatus | None = None
    judge_correct: bool | None = None
    judge_cached: bool = False
    cause: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The details-JSONL row for this sample."""
        row = {
            "index": self.index, "replica": self.replica, "status": self.status,
            "correct": self.correct, "prompt": list(self.prompt),
            "prediction": self.prediction, "pred": self.extracted,
            "reference": self.reference, "error": self.error,
        }
        row.update(self.details)
        return row


@record
class JudgeTask:
    """A sample on its way to the judge, with the rule layer's result (if any)."""

    result: SampleResult
    row: Mapping[str, Any]
    prediction: Any
    reference: Any
    has_rule: bool
    #: Where the sample's final result is stored once judged (``harness.outcomes``);
    #: ``None``: it is not (a dataset that is not cacheable, a result not reproducible).
    outcome_key: str | None = None


@record
class JudgeRequest:
    """A judge task no stored verdict answers: its rendered judge messages and the
    verdict key they make, sent from the verdict lookup to the judge callers."""

    task: JudgeTask
    messages: tuple[dict[str, str], ...]
    key: str


@record
class OutcomeRow:
    """One final sample outcome to store (``harness.outcomes``): its key, the encoded
    result and, for a judged sample, the key of the verdict it combines with."""

    key: str
    outcome: str
    verdict: str | None


#: What the store writer commits: fresh predictions, fresh verdicts, final outcomes.
StoreWrite = Completion | VerdictRecord | OutcomeRow
