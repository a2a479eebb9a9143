"""The read stage: dataset rows become ``Sample``s; stored predictions skip the model.

Rows come from ``validate.selected_rows`` (the selection the run was validated on),
each rendered once per replica with its prediction key. Samples are looked up in the
store in batches (one query per batch, on the event loop's thread: see
``harness.store``): a stored prediction goes straight to scoring, the rest to the model
callers (``--mode eval``: finished as ``missing``). A stored prediction whose final
outcome is stored too (``harness.outcomes``, one more query per batch) is not scored
again: its result is rebuilt from the outcome and finished.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import anyio.lowlevel
from anyio.streams.memory import MemoryObjectSendStream as ObjectSendStream

from ..config import DatasetSpec
from ..keys import prediction_keys
from ..outcomes import Outcomes, restore
from ..progress import Progress
from ..records import Completion, JudgeTask, ModelSpec, Sample, SampleResult, VerdictRecord
from ..store import Store, StoredPrediction
from ..validate import check_row, selected_rows
from .collect import Collector
from .generate import Likelihoods
from .score import ScoreOutlet, empty_reply
from .streams import send


def samples(model: ModelSpec, dataset: DatasetSpec, limit: int | None) -> Iterator[Sample]:
    """The samples of ``dataset`` for ``model``: each selected row, rendered, per replica."""
    gen_params = {**model.gen_params, **dataset.gen_params}
    api = endpoint_api(model, dataset)
    key_of = prediction_keys(model.identity(), gen_params, api)
    for index, line, row in selected_rows(dataset, limit):
        check_row(dataset, row, line)  # validated before the run; the file may change
        values = {column: row[column] for column in dataset.input_columns}
        messages = dataset.template.render(values)
        reference = row.get(dataset.output_column) if dataset.output_column else None
        for replica in range(dataset.n):
            key = key_of(messages, replica)
            yield Sample(dataset.abbr, model.abbr, index, replica, row, reference,
                         messages, key, gen_params, api)


def endpoint_api(model: ModelSpec, dataset: DatasetSpec) -> Literal["chat", "completions"]:
    """The endpoint ``model`` answers ``dataset`` on: its ``api``, where ``auto`` means
    completions for a text prompt and chat for messages."""
    if model.api == "completions" or (model.api == "auto" and dataset.template.kind == "text"):
        return "completions"
    return "chat"


async def read(pairs: Sequence[tuple[ModelSpec, DatasetSpec]], limit: int | None,
               store: Store, predict: bool, batch_size: int,
               model_send: ObjectSendStream[Sample], outlet: ScoreOutlet,
               collect: Collector, progress: Progress,
               likelihoods: Likelihoods | None = None,
               outcomes: Outcomes | None = None) -> None:
    """Samples of every (model, dataset) in ``pairs``, in order: stored predictions to
    ``outlet`` (scoring) or, with a stored outcome, finished at once; the rest to
    ``model_send`` when ``predict``, else finished as ``missing``. A PPL sample's
    likelihoods are stored per request, not under its key: it goes to the model
    callers, or in ``--mode eval`` is completed from the store.
    """
    async with model_send, outlet:
        for model, dataset in pairs:
            if likelihoods is not None and dataset.abbr in likelihoods.datasets:
                for sample in samples(model, dataset, limit):
                    await _likelihoods(sample, model, likelihoods, predict, model_send,
                                       outlet, collect, progress)
                continue
            for batch in _batches(samples(model, dataset, limit), batch_size):
                lookup = await _look_up(batch, store, outcomes)
                await _route(lookup, predict, model_send, outlet, collect, progress, outcomes)


def _batches(items: Iterator[Sample], size: int) -> Iterator[list[Sample]]:
    """``items`` in lists of ``size`` (the last one shorter)."""
    while batch := list(itertools.islice(items, size)):
        yield batch


async def _likelihoods(sample: Sample, model: ModelSpec, likelihoods: Likelihoods,
                       predict: bool, model_send: ObjectSendStream[Sample],
                       outlet: ScoreOutlet, collect: Collector, progress: Progress) -> None:
    """Route one PPL sample: to the model callers, or completed from the store."""
    if predict:
        await send(model_send, sample)
        return
    completion = await likelihoods.stored(sample, model)
    if completion is None:
        await collect.add(_missing(sample))
    else:
        progress.cached += 1
        await outlet.put(completion)


def _missing(sample: Sample) -> SampleResult:
    """A ``--mode eval`` sample with nothing stored: finished, not scored."""
    return SampleResult(
        sample.dataset, sample.model, sample.index, sample.replica, "missing",
        sample.messages, None, None, sample.reference, None,
        "no stored prediction (run without --mode eval to predict it)",
        cause="no stored prediction")


@dataclass(frozen=True)
class _Lookup:
    """What the store holds for one batch of samples: their stored predictions, and the
    outcomes stored for those."""

    batch: list[Sample]
    #: Each sample's stored prediction (``None``: none stored).
    stored: list[StoredPrediction | None]
    #: Each sample's outcome key (``None``: no stored prediction, or not cacheable).
    keys: list[str | None]
    #: Outcome key → the stored outcome and, for a judged sample, its verdict.
    found: dict[str, tuple[str, VerdictRecord | None]]


async def _look_up(batch: list[Sample], store: Store, outcomes: Outcomes | None) -> _Lookup:
    """``batch``'s stored predictions, then the outcomes stored for those (two queries)."""
    hits = await store.lookup_predictions([s.key for s in batch])
    stored = [hits.get(s.key) for s in batch]
    keys = [None if hit is None or outcomes is None else
            outcomes.key(s, hit.text, hit.finish_reason, hit.reasoning)
            for s, hit in zip(batch, stored, strict=True)]
    wanted = [key for key in keys if key is not None]
    found = await store.lookup_outcomes(wanted) if wanted else {}
    return _Lookup(batch, stored, keys, found)


#: Samples finished or sent to scoring between two checkpoints: routing stored outcomes
#: never waits, and the other stages (scoring, the judge) need the event loop too.
ROUTE_SLICE = 64


async def _route(lookup: _Lookup, predict: bool, model_send: ObjectSendStream[Sample],
                 outlet: ScoreOutlet, collect: Collector, progress: Progress,
                 outcomes: Outcomes | None) -> None:
    """Finish the samples of a looked-up batch that have a stored outcome, send the
    other stored predictions to scoring and the rest to the model."""
    unyielded = 0
    for sample, hit, key in zip(lookup.batch, lookup.stored, lookup.keys, strict=True):
        if hit is None and predict:
            # No checkpoint of its own: a full stream waits here, and while it has room
            # the whole batch goes at once. One slice per turn round the event loop fed
            # the callers less than they finish per turn at a high concurrency, and
            # every caller that found the stream empty paid for waiting on it.
            await send(model_send, sample)
            continue
        unyielded += 1
        if unyielded == ROUTE_SLICE:
            unyielded = 0
            await anyio.lowlevel.checkpoint()
        if hit is None:
            await collect.add(_missing(sample))
            continue
        progress.cached += 1
        found = lookup.found.get(key) if key is not None else None
        result = None if found is None or outcomes is None else _restored(
            sample, hit.text, *found, outcomes, progress)
        if result is not None:
            await collect.add(result)
        else:
            await outlet.put(Completion(sample, "ok", hit[0], hit[1], None, hit[2], hit[3],
                                        0, True, hit[4]))


def _restored(sample: Sample, prediction: str, text: str, verdict: VerdictRecord | None,
              outcomes: Outcomes, progress: Progress) -> SampleResult | None:
    """One stored outcome as the result scoring would give, counted as scoring counts
    it: a rule check for every reply that is not empty, and for a judged sample a
    verdict handed to the judge stage and reused from the store (its runner counts the
    cache hit and combines the verdict, as a verdict lookup does)."""
    result, judged = restore(sample, prediction, text)
    if judged is not None and (verdict is None
                               or not outcomes.runners[sample.dataset].serves(verdict)):
        return None  # the store serves a judged outcome only with a verdict it may reuse
    if not empty_reply(prediction):
        progress.rules.done += 1
    if judged is None or verdict is None:
        return result
    has_rule, messages = judged
    counts = progress.judge
    counts.submitted += 1
    counts.done += 1
    counts.reused += 1
    task = JudgeTask(result, sample.row, None, None, has_rule)
    return outcomes.runners[sample.dataset].cached(task, verdict, messages)
