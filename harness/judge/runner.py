"""The judge stage: one verdict per sample, cached, paced and retried.

A verdict is keyed by the judge's identity (endpoint, model), its generation
parameters, the rendered judge messages and the replica index; a stored verdict is
served with zero requests, so a rerun costs nothing and a changed template, judge or
prediction re-judges exactly the samples it affects. An unreadable reply is re-asked a
bounded number of times with a format reminder; if it stays unreadable it is recorded as
``unparsed`` (its own count), never as "incorrect", with the re-asks it was given.
``max_reasks`` is not part of the key, so a readable verdict serves every judge; an
unparsed one serves only a judge allowed no more re-asks (``JudgeRunner.serves``), and
any other asks again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..breaker import BreakerPolicy
from ..client import ModelClient
from ..errors import ModelCallError, PermanentModelError
from ..evaluators.llm import GenericLLMEvaluator
from ..keys import request_keys
from ..records import JudgeStatus, JudgeTask, SampleResult, SampleStatus, VerdictRecord
from ..store import Store
from ..transport import Transport
from .spec import JudgeSpec
from .verdict import (
    FORMAT_REMINDER,
    JSON_FORMAT_REMINDER,
    parse_verdict,
    verdict_from_json,
    verdict_probability,
)


@dataclass
class JudgeCounters:
    """Per-judge counts for the report."""

    verdicts: int = 0
    cache_hits: int = 0
    reasks: int = 0
    unparsed: int = 0
    errors: int = 0


class JudgeEndpoint:
    """A judge endpoint shared by every dataset that uses it: one client, one pacer.

    ``transport`` sends its requests (by default the one its ``transport`` setting names),
    as for a model's ``ModelClient``. ``limit_slots=False`` skips holding one of its
    ``spec.concurrency`` slots per attempt, for callers that never outnumber them.
    """

    def __init__(self, spec: JudgeSpec, breaker: BreakerPolicy = BreakerPolicy(),
                 transport: Transport | None = None, limit_slots: bool = True) -> None:
        self.spec = spec
        self.client = ModelClient(spec.model, concurrency=spec.concurrency, role="judge",
                                  breaker=breaker, transport=transport,
                                  limit_slots=limit_slots)
        self.limiter = self.client.limiter
        self.counters = JudgeCounters()
        self.name = f"{spec.model.model}@{spec.model.identity()['endpoint']}"

    async def aclose(self) -> None:
        """Close the HTTP session."""
        await self.client.aclose()

    def stats(self) -> dict[str, Any]:
        """Requests, retries, 429s, tokens, cache hits and verdict counts."""
        calls = self.client.stats
        return {"judge": self.name, "requests": calls.requests, "retries": calls.retries,
                "rate_limited": calls.rate_limited, "failures": calls.failures,
                "prompt_tokens": calls.prompt_tokens,
                "completion_tokens": calls.completion_tokens, **vars(self.counters),
                "rpm": self.spec.rpm, "tpm": self.spec.tpm}


class JudgeRunner:
    """Judges the samples of one dataset with one ``GenericLLMEvaluator``."""

    def __init__(self, evaluator: GenericLLMEvaluator, endpoint: JudgeEndpoint,
                 store: Store, spec: JudgeSpec | None = None) -> None:
        self.evaluator = evaluator
        self.endpoint = endpoint
        self.store = store
        self.spec = spec or endpoint.spec
        self.gen_params = self.spec.gen_params()
        # Part of every verdict key: computed once, not per sample.
        self.identity = self.spec.model.identity()
        # Judge prompts are chat messages: only an explicit api='completions' sends them
        # (joined) to /completions, for a judge served as a base model.
        self.api = "completions" if self.spec.model.api == "completions" else "chat"
        self._key = request_keys("verdict", self.api, judge=self.identity, gen=self.gen_params)

    def prepare(self, task: JudgeTask) -> tuple[tuple[dict[str, str], ...], str]:
        """The judge messages for ``task`` and the verdict key they make."""
        messages = self.evaluator.render(task.row, task.prediction, task.reference)
        key = self._key(messages, task.result.replica)
        return messages, key

    def serves(self, verdict: VerdictRecord) -> bool:
        """Whether a verdict already paid for (stored, or shared in this run) answers
        this judge: a readable one does; an unparsed one only if it was given at least
        the re-asks this judge allows, or a raised ``max_reasks`` would change nothing."""
        return verdict.status != "unparsed" or verdict.reasks >= self.spec.max_reasks

    def cached(self, task: JudgeTask, verdict: VerdictRecord,
               messages: tuple[dict[str, str], ...]) -> SampleResult:
        """The result for a verdict served from the store (zero requests)."""
        self.endpoint.counters.cache_hits += 1
        return self._count(task, verdict, messages)

    async def ask(self, task: JudgeTask, messages: tuple[dict[str, str], ...],
                  key: str) -> tuple[SampleResult, VerdictRecord]:
        """Ask the judge; the combined result and the fresh verdict to store."""
        verdict = await self._ask(messages, key, task.result)
        return self._count(task, verdict, messages), verdict

    def _count(self, task: JudgeTask, verdict: VerdictRecord,
               messages: tuple[dict[str, str], ...]) -> SampleResult:
        counters = self.endpoint.counters
        counters.verdicts += verdict.status != "error"
        counters.unparsed += verdict.status == "unparsed"
        counters.errors += verdict.status == "error"
        return combine(task, verdict, messages)

    async def _ask(self, messages: tuple[dict[str, str], ...], key: str,
                   base: SampleResult) -> VerdictRecord:
        spec = self.spec
        client = self.endpoint.client
        json_mode = spec.constrain == "json_schema"
        parse = verdict_from_json if json_mode else parse_verdict
        reminder = JSON_FORMAT_REMINDER if json_mode else FORMAT_REMINDER
        conversation = list(messages)
        requests = prompt_tokens = completion_tokens = ask = 0

        def record(status: str, **fields: Any) -> VerdictRecord:
            return VerdictRecord(key, self.endpoint.name, base.model, base.dataset, base.index,
                                 base.replica, status, requests=requests,  # type: ignore[arg-type]
                                 prompt_tokens=prompt_tokens,
                                 completion_tokens=completion_tokens, reasks=ask, **fields)

        try:
            for ask in range(1 + spec.max_reasks):
                if ask:
                    self.endpoint.counters.reasks += 1
                reply = await client.complete(conversation, self.gen_params, self.api)
                requests += reply.attempts
                prompt_tokens += reply.prompt_tokens
                completion_tokens += reply.completion_tokens
                # A reply cut at max_tokens may be the start of a sentence ("A comparison
                # shows … so B"): not a verdict, unless the server could write nothing else.
                cut = reply.finish_reason == "length" and not spec.constrain
                verdict = None if cut else parse(reply.text)
                if verdict is not None:
                    probability = verdict_probability(reply.logprobs, verdict) \
                        if reply.logprobs else None
                    return record("ok", verdict=verdict, reply=reply.text,
                                  probability=probability)
                conversation = [*messages, {"role": "assistant", "content": reply.text},
                                {"role": "user", "content": reminder}]
        except PermanentModelError:
            raise  # stops the run; the message names the judge endpoint
        except ModelCallError as exc:
            requests += exc.attempts
            return record("error", verdict=None, reply=None, error=str(exc), cause=exc.outcome)
        return record("unparsed", verdict=None, reply=reply.text)


#: A judge-only sample's status, by its verdict's.
_JUDGE_ONLY_STATUS: dict[JudgeStatus, SampleStatus] = {
    "ok": "ok", "unparsed": "judge_unparsed", "error": "judge_error"}


def combine(task: JudgeTask, verdict: VerdictRecord,
            messages: tuple[dict[str, str], ...]) -> SampleResult:
    """Merge a verdict into the sample's result, by the seed's decision rules.

    With a rule layer: correct = rule correct or judge says A, and an unparsed verdict
    keeps the rule verdict. Judge only: the verdict decides, and an unparsed one is its
    own status, not scored. A failed judge call leaves a sample the rules got wrong
    pending (``judge_error``, not scored, asked again by the next run): keeping the rule
    verdict would score exactly the samples the judge might rescue as wrong. One the
    rules got right (parallel mode) is correct whatever the judge says: it is scored,
    with the failed call in its judge status, and not stored as an outcome, so the next
    run asks the judge again for the judge's own figures.
    """
    judge_correct = verdict.verdict == "A" if verdict.status == "ok" else None
    evaluation: dict[str, Any] = {"prediction": verdict.reply, "verdict": verdict.verdict,
                  "llm_correct": bool(judge_correct), "status": verdict.status,
                  "cached": verdict.cached, "requests": verdict.requests,
                  "origin_prompt": list(messages)}
    if verdict.probability is not None:
        evaluation["probability"] = verdict.probability
    if verdict.error:
        evaluation["error"] = verdict.error
    base = task.result
    common: dict[str, Any] = dict(judge_status=verdict.status, judge_correct=judge_correct,
                                  judge_cached=verdict.cached)
    if task.has_rule:
        if verdict.status == "error" and not base.rule_correct:
            details = {**base.details, "llm_evaluation": evaluation, "cascade_correct": None}
            return replace(base, status="judge_error", correct=None, error=verdict.error,
                           details=details, cause=verdict.cause, **common)
        final = bool(base.rule_correct) or judge_correct is True
        details = {**base.details, "llm_evaluation": evaluation, "cascade_correct": final}
        # Built directly, not with dataclasses.replace (twice the cost): every judged
        # sample of a cascade, in every run, takes this path.
        return SampleResult(base.dataset, base.model, base.index, base.replica, base.status,
                            base.prompt, base.prediction, base.extracted, base.reference,
                            final, base.error, details, base.cached,
                            rule_correct=base.rule_correct, cause=base.cause, **common)
    status = _JUDGE_ONLY_STATUS[verdict.status]
    cause = verdict.cause if verdict.status == "error" else (
        "verdict unreadable after the re-asks" if verdict.status == "unparsed" else None)
    return replace(base, status=status, correct=judge_correct, error=verdict.error,
                   details={"llm_evaluation": evaluation}, cause=cause, **common)
