"""The read stage: dataset rows become ``Sample``s; stored predictions skip the model.

Rows come from ``validate.selected_rows`` (the selection the run was validated on),
each rendered once per replica with its prediction key. Samples are looked up in the
store in batches (one query per batch): a stored prediction goes straight to scoring,
the rest to the model callers (``--mode eval``: finished as ``missing``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Literal

from anyio.streams.memory import MemoryObjectSendStream as ObjectSendStream

from ..config import DatasetSpec
from ..keys import prediction_key
from ..progress import Progress
from ..records import Completion, ModelSpec, Sample, SampleResult
from ..store import Store
from ..validate import check_row, selected_rows
from .collect import Collector
from .generate import Likelihoods
from .score import ScoreOutlet
from .streams import send


def samples(model: ModelSpec, dataset: DatasetSpec, limit: int | None) -> Iterator[Sample]:
    """The samples of ``dataset`` for ``model``: each selected row, rendered, per replica."""
    gen_params = {**model.gen_params, **dataset.gen_params}
    identity = model.identity()
    api = endpoint_api(model, dataset)
    for index, line, row in selected_rows(dataset, limit):
        check_row(dataset, row, line)  # validated before the run; the file may change
        values = {column: row[column] for column in dataset.input_columns}
        messages = dataset.template.render(values)
        reference = row.get(dataset.output_column) if dataset.output_column else None
        for replica in range(dataset.n):
            key = prediction_key(identity, messages, gen_params, replica, api)
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
               likelihoods: Likelihoods | None = None) -> None:
    """Samples of every (model, dataset) in ``pairs``, in order: stored predictions to
    ``outlet`` (scoring), the rest to ``model_send`` when ``predict``, else finished as
    ``missing``. A PPL sample's likelihoods are stored per request, not under its key:
    it goes to the model callers, or in ``--mode eval`` is completed from the store."""
    async with model_send, outlet:
        for model, dataset in pairs:
            if likelihoods is not None and dataset.abbr in likelihoods.datasets:
                for sample in samples(model, dataset, limit):
                    await _likelihoods(sample, model, likelihoods, predict, model_send,
                                       outlet, collect, progress)
                continue
            batch: list[Sample] = []
            for sample in samples(model, dataset, limit):
                batch.append(sample)
                if len(batch) >= batch_size:
                    await _route(batch, store, predict, model_send, outlet, collect, progress)
                    batch = []
            await _route(batch, store, predict, model_send, outlet, collect, progress)


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


async def _route(batch: list[Sample], store: Store, predict: bool,
                 model_send: ObjectSendStream[Sample], outlet: ScoreOutlet,
                 collect: Collector, progress: Progress) -> None:
    """Send stored predictions straight to scoring and the rest to the model."""
    if not batch:
        return
    stored = await store.lookup_predictions([s.key for s in batch])
    for sample in batch:
        hit = stored.get(sample.key)
        if hit is not None:
            progress.cached += 1
            await outlet.put(Completion(sample, "ok", hit[0], hit[1], None, hit[2], hit[3],
                                        0, True, hit[4]))
        elif not predict:
            await collect.add(_missing(sample))
        else:
            await send(model_send, sample)
