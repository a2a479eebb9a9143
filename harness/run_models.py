"""The models of a run, settled once its work directory is open.

``harness.models`` reads what the config and the command line ask for. This module
settles the rest against the work directory:

- ``--mode eval`` re-scores the models whose predictions the work directory holds
  (recorded by the runs that made them), so it needs no endpoint flags and never starts
  a model server; a model asked for by name must have stored predictions;
- a model without a name gets the first one its endpoint's ``/v1/models`` lists;
- every model a run may call is recorded in the store for a later ``--mode eval``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .errors import ConfigError, ModelCallError, PermanentModelError
from .records import ModelSpec
from .store import Store
from .urls import redact_url

if TYPE_CHECKING:
    from .config import DatasetSpec

_log = logging.getLogger(__name__)

# What the store keeps of a spec: everything a prediction key depends on, and the
# name. Never the API key.
_RECORDED = ("abbr", "model", "base_url", "endpoint_id", "gen_params", "api")


def spec_record(spec: ModelSpec) -> dict[str, Any]:
    """The part of ``spec`` the work directory records (no API key, and no secret of its
    URL: see ``harness.urls``)."""
    record = {name: getattr(spec, name) for name in _RECORDED}
    record["base_url"] = redact_url(spec.base_url)
    return record


def spec_from_record(record: Mapping[str, Any]) -> ModelSpec:
    """A spec that computes the same prediction keys as the recorded one (for
    re-scoring only: it holds no API key and is never called)."""
    return ModelSpec(**{name: record[name] for name in _RECORDED if name in record})


@dataclass(frozen=True)
class EvalSelection:
    """What ``--mode eval`` re-scores: the models, and the ``(model, dataset)`` pairs
    that ran in the work directory (see ``models_for_eval``); ``left_out`` the pairs of
    those models and the datasets given that it does not (nothing of them stored)."""

    models: list[ModelSpec]
    pairs: frozenset[tuple[str, str]]
    left_out: tuple[tuple[str, str], ...] = ()


async def models_for_eval(specs: list[ModelSpec] | None, store: Store,
                          datasets: Sequence[DatasetSpec], limit: int | None) -> EvalSelection:
    """The models ``--mode eval`` re-scores: those asked for, else every recorded one
    with stored predictions for ``datasets``, and the (model, dataset) pairs to run.

    A pair runs when the store holds a prediction of its samples, found by prompt: the
    store names a prediction after the first (model, dataset) that asked for it, and a
    dataset or model whose calls another of the run shared has its predictions under
    that one's name. A pair with a result on disk runs too, for a model with stored
    predictions: it was run here, and its prompts may have changed since (its samples
    are then ``missing``) or its calls all failed.

    A model asked for must have stored predictions in this work directory, matched by
    endpoint and name (and by ``abbr`` where two stored models share both); only an
    endpoint matches every model stored for it. The stored spec is what is re-scored, so
    its keys are the ones its predictions were stored under. A work directory written
    before models were recorded re-scores the models it is given. ``limit`` is the
    run's ``--limit``: the samples looked for are those the run would read. A dataset
    given that a re-scored model does not run is named in a warning (``left_out``).
    """
    named = frozenset(await store.stored_pairs([d.abbr for d in datasets]))
    where = str(store.work_dir)
    recorded = [spec_from_record(r) for r in await store.recorded_models()]
    if not recorded:  # written before models were recorded: the models given
        given = bool(specs) and all(s.model for s in specs or ())
        pairs = await _pairs_run(specs or [], datasets, limit, store, named) if given else set()
        if pairs:
            return _selection(specs or [], datasets, pairs, limit, where)
        hint = ("; it was written by an earlier harness that did not record its models: "
                "name the model with --model-base-url and --model" if named and not given
                else "; run without --mode eval first")
        raise ConfigError(f"{where} holds no recorded predictions of these datasets to "
                          f"re-score{hint}", field="--mode")
    chosen = recorded
    if specs is not None:  # only the models asked for, each matched to its record
        asked: dict[str, ModelSpec] = {}
        for spec in specs:
            for r in _matches(spec, recorded):
                asked.setdefault(r.abbr, r)
        chosen = list(asked.values())
    pairs = await _pairs_run(chosen, datasets, limit, store, named)
    with_pairs = {m for m, _ in pairs}
    stored = [r for r in chosen if r.abbr in with_pairs]
    for spec in specs or ():
        if not any(r in stored for r in _matches(spec, chosen)):
            named_models = {m for m, _ in named}
            raise _not_stored(spec, [r for r in recorded if r.abbr in named_models], where)
    if not stored:
        raise ConfigError(f"{where} holds no recorded predictions of these datasets to "
                          "re-score; run without --mode eval first", field="--mode")
    return _selection(stored, datasets, pairs, limit, where)


def _selection(models: list[ModelSpec], datasets: Sequence[DatasetSpec],
               pairs: set[tuple[str, str]], limit: int | None, where: str) -> EvalSelection:
    """The selection of ``models`` and ``pairs``, with a warning per model that leaves
    out a dataset given: re-scoring nothing of a configured dataset must not look like
    a run that covered it (no result, no table row, exit 0)."""
    left_out = [(m.abbr, d.abbr) for m in models for d in datasets
                if (m.abbr, d.abbr) not in pairs]
    within = f" within --limit {limit}" if limit is not None else ""
    for model in models:
        names = [d for m, d in left_out if m == model.abbr]
        if names:
            what, it = ("dataset", "it") if len(names) == 1 else ("datasets", "them")
            _log.warning("--mode eval leaves out %s %s for model %s: nothing of %s%s is "
                         "stored in %s (run without --mode eval to predict %s)", what,
                         ", ".join(names), model.abbr, it, within, where, it)
    return EvalSelection(list(models), frozenset(pairs), tuple(left_out))


def _matches(spec: ModelSpec, recorded: list[ModelSpec]) -> list[ModelSpec]:
    """The recorded models ``spec`` names: same endpoint and model (any model for an
    endpoint alone), the one of its ``abbr`` first where two share both."""
    found = [r for r in recorded if _same_endpoint(r, spec)
             and (not spec.model or r.model == spec.model)]
    return [r for r in found if r.abbr == spec.abbr] or found


def _not_stored(spec: ModelSpec, stored: list[ModelSpec], where: str) -> ConfigError:
    names = ", ".join(f"{r.abbr} ({r.model} at {r.identity()['endpoint']})" for r in stored)
    return ConfigError(f"{where} holds no predictions of these datasets by model "
                       f"{spec.abbr} ({spec.model or 'any model'} at "
                       f"{redact_url(spec.base_url)}); --mode eval re-scores stored "
                       f"predictions (models with some: {names or 'none'})", field="--mode")


async def _pairs_run(models: Sequence[ModelSpec], datasets: Sequence[DatasetSpec],
                     limit: int | None, store: Store,
                     named: frozenset[tuple[str, str]]) -> set[tuple[str, str]]:
    """The (model, dataset) pairs of ``models`` that ran here: the store names them,
    or holds a prediction of one of their samples; and, for a model that has any, the
    pairs with a result on disk."""
    from .paths import result_path

    pairs: set[tuple[str, str]] = set()
    for model in models:
        found = {d.abbr for d in datasets if (model.abbr, d.abbr) in named
                 or await _stored(model, d, limit, store)}
        if found:
            found |= {d.abbr for d in datasets
                      if result_path(store.work_dir, model.abbr, d.abbr).exists()}
        pairs |= {(model.abbr, d) for d in found}
    return pairs


async def _stored(model: ModelSpec, dataset: DatasetSpec, limit: int | None,
                  store: Store) -> bool:
    """Whether the store holds a prediction of one of the pair's samples (under
    another pair's name): a reply, or one likelihood of a PPL sample."""
    batch: list[str] = []
    for key in _request_keys(model, dataset, limit):
        batch.append(key)
        if len(batch) == _LOOKUP_BATCH:
            if await store.any_prediction(batch):
                return True
            batch = []
    return await store.any_prediction(batch)


def _request_keys(model: ModelSpec, dataset: DatasetSpec, limit: int | None) -> Iterator[str]:
    """The store keys of the pair's requests: each sample's, or for a PPL sample those
    of its likelihood requests (both methods)."""
    from .stages.read import samples

    if dataset.ppl is None:
        yield from (sample.key for sample in samples(model, dataset, limit))
        return
    from .ppl.runner import Plan

    identity = model.identity()
    for sample in samples(model, dataset, limit):
        yield from Plan(sample, dataset, identity).keys


#: Keys looked up per query while looking for a dataset's stored predictions.
_LOOKUP_BATCH = 500


def _same_endpoint(recorded: ModelSpec, asked: ModelSpec) -> bool:
    return recorded.identity()["endpoint"] == replace(asked, model="").identity()["endpoint"]


def unique_abbrs(specs: list[ModelSpec]) -> list[ModelSpec]:
    """``specs`` with each ``abbr`` made unique: a repeated one gets the first free
    ``-2``, ``-3`` … suffix that no other model uses (``m, m, m-2`` → ``m, m-3, m-2``),
    with a warning, since the abbr names its results and its records in the store."""
    taken = {spec.abbr for spec in specs}
    seen: set[str] = set()
    out = []
    for spec in specs:
        if spec.abbr in seen:
            n = 2
            while f"{spec.abbr}-{n}" in taken:
                n += 1
            renamed = f"{spec.abbr}-{n}"
            _log.warning("two models share the abbr %r: the one at %s is named %r in "
                         "results/ and details/ (give each model its own abbr)",
                         spec.abbr, redact_url(spec.base_url), renamed)
            taken.add(renamed)
            spec = replace(spec, abbr=renamed)
        seen.add(spec.abbr)
        out.append(spec)
    return out


async def discover_name(spec: ModelSpec) -> ModelSpec:
    """Fill a missing model name from ``/v1/models``; also catches a bad key or URL early.

    An endpoint that cannot be reached (refused, timed out, 5xx) is down: its breaker's
    ``EndpointDownError``, as a run would end with once it gave up on the endpoint.
    """
    if spec.model:
        return spec
    from .breaker import DOWN_KINDS
    from .client import ModelClient

    client = ModelClient(replace(spec, max_attempts=min(spec.max_attempts, 3)),
                         concurrency=1, limit_slots=False)
    try:
        names = await client.list_models()
    except ModelCallError as exc:
        if isinstance(exc, PermanentModelError):
            raise
        if exc.kind in DOWN_KINDS:
            raise client.redacted(client.breaker.error()) from None
        raise PermanentModelError(f"{exc}; give the model name with --model",
                                  kind=exc.kind, status=exc.status) from None
    finally:
        await client.aclose()
    if not names:
        raise PermanentModelError(f"{redact_url(spec.base_url)} serves no models; give --model",
                                  kind="not_found")
    return replace(spec, model=names[0], abbr=spec.abbr if spec.abbr != "model" else names[0])
