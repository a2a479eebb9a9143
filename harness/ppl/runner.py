"""The model-stage hook of a PPL dataset: likelihoods from the store or the endpoint,
then the chosen label as the sample's completion.

``PPLRunner.complete`` takes one sample and returns its ``Completion`` (``text`` is the
chosen label, ``details['ppl']`` every candidate's log-likelihood and score); it stores
a row per request as each reply arrives (an echo request per candidate, or one
next-token request per sample), keyed by ``harness.keys.prediction_key`` over what was
sent and the likelihood parameters. Rows hold the log-probabilities themselves, so a
rerun, or one with another ``normalization``, sends no request.

Each endpoint is probed once, on the first sample that needs a request, for what it
offers (``harness.ppl.probe``); a rerun served from the store probes nothing. A probe
that fails in passing (a timeout, a 503) concludes nothing: that sample fails (and is
retried on the next run), and the next one probes again.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import anyio

from ..client import ModelClient
from ..errors import ModelCallError, PermanentModelError
from ..keys import prediction_key
from ..prompt import as_text
from ..records import Completion, Sample
from ..retry import BadResponse
from ..stages.calls import Reply, Shared
from .choice import UNDECIDABLE_CAUSE, Likelihood, choose, common_prefix, token_boundary
from .labels import row_labels
from .probe import UnsupportedLikelihoodError, probe
from .requests import (
    ECHO_PARAMS,
    echo_body,
    next_token_body,
    next_token_params,
    read_echo,
    read_top,
    usage,
)

GetClient = Callable[[], Awaitable[ModelClient]]
#: Stores the row of one likelihood request (sends it to the run's store writer).
Keep = Callable[[Completion], Awaitable[None]]


class PPLRunner:
    """Likelihood evaluation of the PPL datasets of one run (shared by every worker)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        # id(client) → what it offers, or why it offers nothing
        self._methods: dict[int, frozenset[str] | UnsupportedLikelihoodError] = {}
        self._lock = anyio.Lock()

    async def complete(self, sample: Sample, dataset: Any, identity: Mapping[str, Any],
                       get_client: GetClient, keep: Keep,
                       calls: Shared[Reply] | None = None) -> Completion:
        """The sample's completion; ``keep`` stores each request's row (see the module
        docstring) as its reply arrives, so a run stopped mid-sample pays for none again.

        A request that fails for good makes the completion an ``error`` (retried on the
        next run); an endpoint without log-probabilities raises
        ``UnsupportedLikelihoodError`` (a ``PermanentModelError``: the run stops).
        ``calls``: the run's model calls, so a request another sample (a replica, or a
        dataset with the same prompts) is making or has made is not sent again.
        """
        ppl = dataset.ppl
        plan = Plan(sample, dataset, identity)
        stored, method = await self._lookup(plan, ppl.method)
        found = {key: json.loads(s.text) for key, s in stored.items()}
        rows: list[Completion] = []

        async def kept(row: Completion) -> None:
            rows.append(row)
            await keep(row)

        attempts = 0
        if method is None:
            client = await get_client()
            try:
                # A probe that failed is not cached: the next sample asks again.
                method = await self._method(client, plan, ppl.method, ppl.top_logprobs)
                attempts = await self._request(client, plan, method, found, kept, calls)
            except PermanentModelError:
                raise
            except ModelCallError as exc:
                return Completion(sample, "error", error=str(exc), attempts=exc.attempts,
                                  cause=exc.outcome)
        return plan.complete(method, found, ppl.normalization, attempts, rows)

    async def stored(self, sample: Sample, dataset: Any,
                     identity: Mapping[str, Any]) -> Completion | None:
        """The sample's completion from stored likelihoods alone (``--mode eval``), or
        ``None`` when a request would be needed."""
        plan = Plan(sample, dataset, identity)
        stored, method = await self._lookup(plan, dataset.ppl.method)
        if method is None:
            return None
        found = {key: json.loads(s.text) for key, s in stored.items()}
        return plan.complete(method, found, dataset.ppl.normalization, 0, [])

    async def _lookup(self, plan: Plan, wanted: str) -> tuple[Mapping[str, Any], str | None]:
        """The stored rows of ``plan``'s requests and the method they complete, if any."""
        stored = await self.store.lookup_predictions(plan.keys)
        return stored, _stored_method(plan, stored, wanted)

    async def _method(self, client: ModelClient, plan: Plan, wanted: str,
                      top: int) -> str:
        async with self._lock:  # one probe per endpoint, however many workers ask
            offered = self._methods.get(id(client))
            if offered is None:
                try:
                    offered = await probe(client, plan.api, top, wanted)
                except UnsupportedLikelihoodError as exc:
                    offered = exc  # every waiting worker gets the same answer
                self._methods[id(client)] = offered
        if isinstance(offered, UnsupportedLikelihoodError):
            raise offered
        for method in (("echo", "next_token") if wanted == "auto" else (wanted,)):
            if method in offered and (method != "echo" or plan.api == "completions"):
                return method
        raise UnsupportedLikelihoodError(  # only echo wanted, on the chat endpoint
            f"PPL method {wanted!r} needs the completions endpoint; model "
            f"{client.spec.model!r} is called on chat (set its api='completions', or "
            "--model-api completions)")

    async def _request(self, client: ModelClient, plan: Plan, method: str,
                       found: dict[str, Any], keep: Keep,
                       calls: Shared[Reply] | None) -> int:
        """Get what ``found`` (the stored replies, by key) lacks into it: a new reply
        also as a row to ``keep``; the attempts made."""
        model = client.spec.model
        attempts = 0
        if method == "echo":
            for label, key in plan.echo_keys.items():
                if key in found:
                    continue
                text = plan.texts[label]

                async def echo(label: str = label, key: str = key,
                               text: str = text) -> Completion:
                    def read(data: Any) -> tuple[Any, tuple[int, int]]:
                        return _required(read_echo(data, text), data, "echo")

                    (parsed, used), tries = await client.post_json(
                        echo_body(model, text), "/completions", read)
                    return plan.row(key, plan.candidates[label], ECHO_PARAMS,
                                    "completions", parsed, used, tries)

                attempts += await _asked(key, echo, found, keep, calls)
            return attempts

        async def next_token() -> Completion:
            body = next_token_body(model, plan.context_request, plan.top, plan.api)
            path = "/completions" if plan.api == "completions" else "/chat/completions"
            (parsed, used), tries = await client.post_json(
                body, path, lambda data: _required(read_top(data), data, "top_logprobs"))
            return plan.row(plan.next_key, plan.context_messages,
                            next_token_params(plan.top), plan.api, parsed, used, tries)

        return await _asked(plan.next_key, next_token, found, keep, calls)


async def _asked(key: str, ask: Callable[[], Awaitable[Completion]], found: dict[str, Any],
                 keep: Keep, calls: Shared[Reply] | None) -> int:
    """The reply for ``key`` into ``found``: another sample's, when the run has asked
    for it already (``calls``), else ``ask()``'s, whose row goes to ``keep``; the
    attempts this made."""
    if calls is not None and not calls.claim(key):
        shared = await calls.reuse(key)
        if shared is not None:
            found[key] = json.loads(shared[0] or "null")
            return 0
    row = None
    try:
        row = await ask()
    finally:
        if calls is not None:
            calls.finish(key, None if row is None else (row.text, None, None))
    found[key] = json.loads(row.text or "null")
    await keep(row)
    return row.attempts


def _required(parsed: Any, data: Any, what: str) -> tuple[Any, tuple[int, int]]:
    if parsed is None:  # the probe found it offered: a reply without it is a fault
        raise BadResponse(f"the reply has no {what} log-probabilities")
    return parsed, usage(data)


def _stored_method(plan: Plan, stored: Mapping[str, Any], wanted: str) -> str | None:
    """The method whose every row is stored already (echo first), if any."""
    if wanted != "next_token" and plan.api == "completions" \
            and all(k in stored for k in plan.echo_keys.values()):
        return "echo"
    if wanted != "echo" and plan.next_key in stored:
        return "next_token"
    return None


class Plan:
    """One sample's candidates split into the shared context and each continuation,
    with the store keys of both methods."""

    def __init__(self, sample: Sample, dataset: Any, identity: Mapping[str, Any]) -> None:
        ppl = dataset.ppl
        values = {c: sample.row.get(c) for c in dataset.input_columns}
        rendered = dataset.template.render_candidates(values)
        self.sample, self.api, self.top = sample, sample.api, ppl.top_logprobs
        self.candidates = {label: rendered[label] for label in row_labels(ppl, sample.row)}
        if self.api == "completions":
            self.texts = {label: as_text(m) for label, m in self.candidates.items()}
            texts = list(self.texts.values())
            self.split = token_boundary(texts[0], common_prefix(texts))
            self.continuations = {label: t[self.split:] for label, t in self.texts.items()}
            context = texts[0][:self.split]
            self.context_messages: tuple[Mapping[str, str], ...] = (
                {"role": "user", "content": context},)
            self.context_request: Any = context
        else:
            self.texts = {}
            self.context_messages = _chat_context(self.candidates, sample.dataset)
            self.continuations = {label: m[-1]["content"] for label, m in self.candidates.items()}
            self.context_request = self.context_messages
        self.echo_keys = {label: prediction_key(identity, m, ECHO_PARAMS, 0, "completions")
                          for label, m in self.candidates.items()}
        self.next_key = prediction_key(identity, self.context_messages,
                                       next_token_params(self.top), 0, self.api)

    @property
    def keys(self) -> list[str]:
        """The store keys of every request either method may make for the sample."""
        return [*self.echo_keys.values(), self.next_key]

    def row(self, key: str, messages: Any, params: Mapping[str, Any], api: Any,
            parsed: Any, used: tuple[int, int], attempts: int) -> Completion:
        """A stored likelihood: a prediction row whose text is the parsed reply."""
        s = self.sample
        request = Sample(s.dataset, s.model, s.index, s.replica, s.row, s.reference,
                         tuple(messages), key, dict(params), api)
        return Completion(request, "ok", json.dumps(parsed), None, None, used[0], used[1],
                          attempts)

    def likelihoods(self, method: str, found: Mapping[str, Any]) -> list[Likelihood]:
        """Each candidate's continuation log-likelihood from the stored replies."""
        if method == "echo":
            scored = {label: found[key] for label, key in self.echo_keys.items()}
            start = shared_token_start(self.split, [s["offsets"] for s in scored.values()])
            return [_from_echo(label, self.texts[label], start, scored[label])
                    for label in scored]
        top = found[self.next_key]["top"]
        return [_from_top(label, cont, top) for label, cont in self.continuations.items()]

    def complete(self, method: str, found: Mapping[str, Any], normalization: Any,
                 attempts: int, rows: list[Completion]) -> Completion:
        """The sample's completion: the chosen label, or an error saying why none is."""
        candidates = self.likelihoods(method, found)
        choice = choose(candidates, normalization)
        details = {"ppl": {
            "method": method, "normalization": normalization, "chosen": choice.label,
            "candidates": {c.label: _detail(c, choice.scores[c.label]) for c in candidates}}}
        prompt = sum(r.prompt_tokens for r in rows)
        done = sum(r.completion_tokens for r in rows)
        cached = not rows
        if choice.label is None:
            return Completion(self.sample, "error", error=choice.reason, prompt_tokens=prompt,
                              completion_tokens=done, attempts=attempts, cached=cached,
                              cause=UNDECIDABLE_CAUSE,
                              details=details)
        return Completion(self.sample, "ok", choice.label, "stop", None, prompt, done,
                          attempts, cached, details=details)


def _chat_context(candidates: Mapping[str, Any], dataset: str) -> tuple[Any, ...]:
    """The messages every candidate shares before its own final assistant message: the
    chat endpoint can score only a reply's first token, not text inside a message."""
    lists = list(candidates.values())
    context = lists[0][:-1]
    if not all(m[:-1] == context and m[-1]["role"] == "assistant" for m in lists):
        raise UnsupportedLikelihoodError(
            f"dataset {dataset!r}: on the chat endpoint PPL candidates must differ only in "
            "a final BOT message (dict(round=[HUMAN question, BOT answer])); for a text "
            "template use the completions endpoint (the model's api='completions' or "
            "'auto', or --model-api completions)")
    return tuple(context)


def shared_token_start(split: int, offsets: Sequence[Sequence[int]]) -> int:
    """The last character offset at or before ``split`` where a token starts in every
    candidate's tokenization: each candidate is scored from there on.

    The candidates' common text can end inside a token of one and between two tokens of
    another (``' Paris'`` against ``' Par' + 'ma'``); scoring each from its own token at
    ``split`` would leave part of one candidate's answer (``' Par'``) out of its score.
    """
    common = set.intersection(*({o for o in offs if o <= split} for offs in offsets))
    return max(common, default=0)


def _from_echo(label: str, text: str, start: int, scored: Mapping[str, Any]) -> Likelihood:
    offsets = scored["offsets"]
    # The first token at ``start`` (several byte tokens of one character share it).
    first = next((i for i, o in enumerate(offsets) if o >= start), len(offsets))
    values = [v for v in scored["logprobs"][first:] if v is not None]
    return Likelihood(label, text[start:], tuple(scored["tokens"][first:]), tuple(values))


def _from_top(label: str, continuation: str, top: list[list[Any]]) -> Likelihood:
    exact = [lp for token, lp in top if token == continuation]
    stripped = continuation.strip()
    loose = [lp for token, lp in top if stripped and token.strip() == stripped]
    if exact or loose:
        return Likelihood(label, continuation, (continuation,), (max(exact or loose),))
    # Not listed: below the lowest listed token, or below a listed token it starts with.
    starts = [lp for token, lp in top if token and continuation.startswith(token)]
    return Likelihood(label, continuation, below=max(starts or [min(lp for _, lp in top)]))


def _detail(c: Likelihood, score: float | None) -> dict[str, Any]:
    row: dict[str, Any] = {"continuation": c.continuation,
                           "logprob": c.total if c.found else None,
                           "tokens": len(c.logprobs), "score": score}
    if not c.found:
        row["not_listed_below"] = c.below
    return row
