"""Config files in the seed documents' vocabulary, turned into typed specs.

A config is a Python file defining ``datasets = [dict(...)]`` (or any ``*_datasets``
lists, as OpenCompass configs do) and optionally ``models = [dict(...)]`` and
``work_dir``. The names it uses (``CustomDataset``, ``RawPromptTemplate``,
``ZeroRetriever``, ``GenInferencer``, evaluators, postprocessors) are imported from
``harness``. Every mistake is reported as ``ConfigError`` naming the file and the field
(``datasets[0].eval_cfg.evaluator``) before any request is sent.
"""

from __future__ import annotations

import logging
import runpy
import sys
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path, PurePath
from typing import Any

from .config_keys import (
    check_keys,
    construct,
    did_you_mean,
    directory,
    positive,
    switch,
    within,
)
from .dataset import CustomDataset, find_data_file, parse_range
from .errors import ConfigError
from .evaluators import BaseEvaluator, build_evaluator
from .gen_params import check_gen_params
from .models import GEN_KEYS, TOKEN_LIMIT_KEYS, model_settings
from .postprocessors import build_postprocessor
from .postprocessors.build import reference_form
from .ppl.inferencer import PPLInferencer
from .prompt import RawPromptTemplate

_log = logging.getLogger(__name__)

#: Keys of a dataset dict.
DATASET_KEYS = ("abbr", "type", "path", "file_name", "reader_cfg", "infer_cfg", "eval_cfg", "n")
#: ``reader_cfg`` keys harness reads.
READER_KEYS = ("input_columns", "output_column", "test_range", "skip_missing_reference")
#: OpenCompass ``reader_cfg`` keys accepted without effect: the train split only feeds
#: in-context examples to a retriever, and ZeroRetriever uses none; a data file is one
#: split, so ``test_split`` may only name the default, ``'test'``.
INERT_READER_KEYS = ("train_split", "train_range", "test_split")
#: ``infer_cfg`` keys.
INFER_KEYS = ("prompt_template", "retriever", "inferencer")
#: ``eval_cfg`` keys; ``pred_role`` is accepted without effect (a reply has one role).
EVAL_KEYS = ("evaluator", "pred_postprocessor", "dataset_postprocessor", "pred_role")
#: OpenCompass ``GenInferencer`` settings accepted without effect: batching and
#: checkpointing of its own runner (harness streams and stores every reply).
INERT_INFERENCER_KEYS = ("batch_size", "save_every")


class ZeroRetriever:
    """No in-context examples: each sample's prompt is its own template (the default).

    It takes no arguments (OpenCompass hands a retriever its dataset, not config keys).
    """


class GenInferencer:
    """Generation: one completion per sample; ``max_out_len`` caps its tokens.

    The generation keys of a model dict (``temperature``, ``top_p``, ``stop``, ``seed``
    …) and ``max_tokens``/``max_completion_tokens`` are sent as generation params;
    OpenCompass's ``stopping_criteria`` (stop strings) is sent as ``stop``. Any other
    keyword is a ``ConfigError``.
    """

    def __init__(self, max_out_len: int | None = None,
                 stopping_criteria: list[str] | None = None, **gen_kwargs: Any) -> None:
        known = ("max_out_len", "stopping_criteria", *INERT_INFERENCER_KEYS, *GEN_KEYS,
                 *TOKEN_LIMIT_KEYS)
        check_keys(gen_kwargs, known, "GenInferencer")
        self.gen_kwargs = {k: v for k, v in gen_kwargs.items() if k not in INERT_INFERENCER_KEYS}
        if positive(max_out_len, "max_out_len", int) is not None:
            _only_one(self.gen_kwargs, "max_out_len", *TOKEN_LIMIT_KEYS)
        if stopping_criteria:
            _only_one(self.gen_kwargs, "stopping_criteria", "stop")
            self.gen_kwargs["stop"] = _strings(stopping_criteria, "stopping_criteria")
        check_gen_params(self.gen_kwargs,
                         given_as={"stop": "stopping_criteria"} if stopping_criteria else None)
        self.max_out_len = max_out_len

    def gen_params(self) -> dict[str, Any]:
        """The generation params every request of the dataset is sent with."""
        params = dict(self.gen_kwargs)
        if self.max_out_len:
            params[TOKEN_LIMIT_KEYS[0]] = self.max_out_len
        return params


def _strings(value: Any, name: str) -> list[str]:
    """A list of strings, or one string as a list of one (as OpenCompass accepts)."""
    value = [value] if isinstance(value, str) else value
    if not (isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)):
        raise ConfigError(f"must be a list of strings, not {value!r}", field=name)
    return list(value)


def _only_one(given: Mapping[str, Any], name: str, *same: str) -> None:
    for other in same:
        if other in given:
            raise ConfigError(f"{name} and {other} say the same thing; give one", field=other)


class OpenAISDK:
    """Model ``type`` marker for configs ported from OpenCompass (any OpenAI-compatible API)."""


OpenAI = OpenAISDK


@dataclass(frozen=True)
class DatasetSpec:
    """One dataset of a run, validated and ready to stream.

    ``skip_missing_reference`` (``reader_cfg``) leaves rows whose reference is null, NaN
    or empty out of the run; otherwise such a row is a ``DatasetError``.
    """

    abbr: str
    reader: CustomDataset
    input_columns: tuple[str, ...]
    output_column: str | None
    template: RawPromptTemplate
    gen_params: Mapping[str, Any]
    pred_postprocessor: Callable[[Any], Any] | None
    dataset_postprocessor: Callable[[Any], Any] | None
    evaluator: BaseEvaluator | None
    n: int = 1
    test_range: slice = field(default_factory=lambda: slice(None))
    skip_missing_reference: bool = False
    #: Set for likelihood evaluation (``PPLInferencer``): ``template`` is then a
    #: ``harness.ppl.template.CandidatePromptTemplate`` and the model stage asks for
    #: likelihoods (``harness.ppl``) instead of a generation.
    ppl: PPLInferencer | None = None
    #: The ``eval_cfg`` as the config wrote it: what the outcome store fingerprints
    #: (``harness.outcomes``). ``None``: the dataset's outcomes are never stored.
    eval_cfg: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class RunConfig:
    """A loaded config file: datasets, raw model dicts and the work directory."""

    datasets: list[DatasetSpec]
    models: list[Mapping[str, Any]]
    work_dir: str | None = None
    path: Path | None = None


def load_config(path: str | Path) -> RunConfig:
    """Execute a config file and build its datasets; ``ConfigError`` on any mistake."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError("config file not found", path=str(path))
    # Configs import sibling modules (a models file, shared templates), as OpenCompass
    # configs do, so the config's folder is importable while it runs.
    folder = str(path.resolve().parent)
    sys.path.insert(0, folder)
    try:
        namespace = runpy.run_path(str(path))
    except SyntaxError as exc:
        raise ConfigError(f"syntax error: {exc.msg}", path=str(path), line=exc.lineno) from exc
    except (Exception, SystemExit) as exc:  # sys.exit() in a config is its error too
        line = _config_line(exc, path)
        raise ConfigError(f"{type(exc).__name__}: {exc}", path=str(path), line=line) from exc
    finally:
        sys.path.remove(folder)
    return config_from_namespace(namespace, path)


def config_from_namespace(namespace: Mapping[str, Any], path: Path | None = None) -> RunConfig:
    """Build a ``RunConfig`` from a config's variables (also used for in-code configs)."""
    _check_names(namespace, path)
    raw = namespace.get("datasets")
    lists = {name: value for name, value in namespace.items()
             if name.endswith("_datasets") and isinstance(value, list)}
    if raw is None:
        raw = [d for value in lists.values() for d in value]
    else:
        _warn_left_out(raw, lists)
    if not raw:
        raise ConfigError("the config defines no datasets (a list named `datasets` or "
                          "ending in `_datasets`)", path=_s(path))
    base = path.parent if path else Path.cwd()
    datasets = [build_dataset(d, f"datasets[{i}]", base, path) for i, d in enumerate(raw)]
    seen: set[str] = set()
    for spec in datasets:
        if spec.abbr in seen:
            raise ConfigError(f"two datasets share the abbr {spec.abbr!r}", path=_s(path))
        seen.add(spec.abbr)
    models = namespace.get("models") or []
    if isinstance(models, Mapping):
        models = [models]
    for i, model in enumerate(models):
        # Checked now, with the file to name, though the endpoint is resolved later.
        with within(f"models[{i}]", _s(path)):
            model_settings(model)
    with within("work_dir", _s(path)):
        work_dir = directory(namespace.get("work_dir"), None)
    return RunConfig(datasets, list(models), work_dir, path)


#: The names a config's top level is read for, and what each holds.
_TOP_LEVEL: dict[str, tuple[type, ...]] = {
    "datasets": (list, tuple), "models": (list, tuple, Mapping), "work_dir": (str, PurePath)}


def _check_names(namespace: Mapping[str, Any], path: Path | None) -> None:
    """A top-level name one slip from a name harness reads, holding what that name
    holds, while the name itself is absent (``model = [...]``, ``work_dri = '…'``), is
    a ``ConfigError``: the run would otherwise go on without it (another model, another
    directory) and exit 0. Other names are the config's own and are left alone."""
    for name, value in namespace.items():
        if name in _TOP_LEVEL or name.endswith("_datasets"):  # read: collected or named
            continue
        missing = [known for known, kinds in _TOP_LEVEL.items()
                   if known not in namespace and isinstance(value, kinds)]
        if hint := did_you_mean(name, missing, cutoff=0.8):
            raise ConfigError(f"the config defines {name!r}, which harness does not "
                              f"read{hint}", path=_s(path))


def _warn_left_out(datasets: Any, lists: Mapping[str, list[Any]]) -> None:
    """Name each ``xxx_datasets`` list whose datasets ``datasets`` leaves out: with a
    ``datasets`` list, that list is the run (the OpenCompass convention), and the others
    are not run."""
    if not isinstance(datasets, (list, tuple)):
        return  # not a list: build_dataset says what is wrong with it
    for name, value in lists.items():
        if left := [d for d in value if d not in datasets]:
            _log.warning("the config's %s (%d dataset%s) is not in its `datasets` list, "
                         "so it is not run; add it to `datasets` to run it", name, len(left),
                         "s" * (len(left) != 1))


def build_dataset(cfg: Mapping[str, Any], where: str, base: Path,
                  config_path: Path | None = None) -> DatasetSpec:
    """Validate one dataset dict and resolve its reader, template and evaluator.

    Every key of the dict and of its sections must be known: a ``ConfigError`` names
    the file and the field (``datasets[0].eval_cfg.pred_postprocesor``) otherwise.
    """
    with within(where, _s(config_path)):
        return _dataset(cfg, base)


def _dataset(cfg: Any, base: Path) -> DatasetSpec:
    if not isinstance(cfg, Mapping):
        raise ConfigError(f"a dataset must be a dict, not {cfg!r}")
    check_keys(cfg, DATASET_KEYS, "the dataset")
    reader_cfg = _section(cfg, "reader_cfg", (*READER_KEYS, *INERT_READER_KEYS))
    infer_cfg = _section(cfg, "infer_cfg", INFER_KEYS)
    eval_cfg = _section(cfg, "eval_cfg", EVAL_KEYS, required=False)
    with within("reader_cfg"):
        columns, output_column, test_range, skip = _reader_settings(reader_cfg)
    reader = _build_reader(cfg, base)
    with within("infer_cfg"):
        template = _component(infer_cfg, "prompt_template", RawPromptTemplate, required=True)
        _component(infer_cfg, "retriever", ZeroRetriever)
        inferencer = _component(infer_cfg, "inferencer", _inferencer_kind(infer_cfg))
        ppl = _check_ppl(inferencer, template)
    with within("eval_cfg"):
        pred_pp = _guarded("pred_postprocessor", build_postprocessor, eval_cfg)
        ref_pp = _guarded("dataset_postprocessor", build_postprocessor, eval_cfg) \
            or reference_form(pred_pp)
        evaluator = _guarded("evaluator", build_evaluator, eval_cfg)
    n = positive(cfg.get("n", 1), "n", int)
    abbr = str(cfg.get("abbr") or Path(str(cfg["path"])).stem)
    _check_reference(evaluator, output_column, abbr)
    if ppl is not None:
        _check_ppl_evaluator(evaluator)
    return DatasetSpec(abbr, reader, columns, output_column, template, inferencer.gen_params(),
                       pred_pp, ref_pp, evaluator, n, test_range, skip, ppl, eval_cfg)


def _inferencer_kind(infer_cfg: Mapping[str, Any]) -> type:
    """``PPLInferencer`` where the config names it, else ``GenInferencer``."""
    cfg = infer_cfg.get("inferencer")
    given = cfg.get("type") if isinstance(cfg, Mapping) else cfg
    ppl = isinstance(given, PPLInferencer) or (isinstance(given, type)
                                               and issubclass(given, PPLInferencer))
    return PPLInferencer if ppl else GenInferencer


def _check_ppl(inferencer: Any, template: RawPromptTemplate) -> PPLInferencer | None:
    """The PPL settings of a dataset; a template with one prompt per label needs
    ``PPLInferencer`` and ``PPLInferencer`` needs such a template."""
    from .ppl.template import CandidatePromptTemplate

    if isinstance(inferencer, PPLInferencer):
        inferencer.labels = inferencer.check_template(template)
        return inferencer
    if isinstance(template, CandidatePromptTemplate):
        raise ConfigError("a template with one prompt per label "
                          f"({', '.join(template.labels)}) is scored by likelihood: use "
                          "inferencer=dict(type=PPLInferencer)", field="inferencer")
    return None


def _check_ppl_evaluator(evaluator: BaseEvaluator | None) -> None:
    """A PPL prediction is a label: it is compared with the gold label by a rule
    evaluator (``AccEvaluator``); a judge has no reply to read."""
    from .judge.evaluators import CascadeEvaluator, GenericLLMEvaluator

    if isinstance(evaluator, (GenericLLMEvaluator, CascadeEvaluator)):
        raise ConfigError(f"{type(evaluator).__name__} grades a written reply; a PPL "
                          "dataset predicts a label: use AccEvaluator",
                          field="eval_cfg.evaluator")


def _section(cfg: Mapping[str, Any], name: str, known: tuple[str, ...],
             required: bool = True) -> Mapping[str, Any]:
    """``cfg[name]``, a dict of known keys (``{}`` when optional and absent)."""
    value = cfg.get(name)
    if value is None and not required:
        return {}
    if value is None:
        raise ConfigError("missing", field=name)
    if not isinstance(value, Mapping):
        raise ConfigError(f"must be a dict, not {value!r}", field=name)
    with within(name):
        check_keys(value, known, name)
    return value


def _reader_settings(reader_cfg: Mapping[str, Any]) -> tuple[tuple[str, ...], str | None,
                                                            slice, bool]:
    """``(input_columns, output_column, test_range, skip_missing_reference)``."""
    if reader_cfg.get("input_columns") is None:
        raise ConfigError("missing", field="input_columns")
    columns = _strings(reader_cfg["input_columns"], "input_columns")
    output = reader_cfg.get("output_column")
    if output is not None and not (isinstance(output, str) and output):
        raise ConfigError(f"must be a column name, not {output!r}", field="output_column")
    if reader_cfg.get("test_split", "test") != "test":
        raise ConfigError("a data file is one split: point the dataset's path at the file "
                          "of the split to evaluate", field="test_split")
    skip = switch(reader_cfg.get("skip_missing_reference", False), "skip_missing_reference")
    try:
        test_range = parse_range(reader_cfg.get("test_range"))
    except ValueError as exc:
        raise ConfigError(str(exc), field="test_range") from exc
    return tuple(columns), output, test_range, skip


def _check_reference(evaluator: BaseEvaluator | None, output_column: str | None,
                     abbr: str) -> None:
    """An evaluator compares each prediction with a reference: without ``output_column``
    every reference would be empty and every sample wrong. Only a judge whose template
    asks for no reference (``{reference}``, ``{obj_gold}``) grades without one."""
    from .evaluators.llm import GenericLLMEvaluator
    from .prompt import PLACEHOLDER

    if evaluator is None or output_column is not None:
        return
    if isinstance(evaluator, GenericLLMEvaluator):
        used = {name for m in evaluator.template.messages
                for name in PLACEHOLDER.findall(m["content"])}
        if not used & {"reference", "obj_gold"}:
            return
    raise ConfigError(f"missing: dataset {abbr!r} is scored by {type(evaluator).__name__}, "
                      "which compares each prediction with a reference; name the column "
                      "that holds it", field="reader_cfg.output_column")


def _build_reader(cfg: Mapping[str, Any], base: Path) -> CustomDataset:
    kind = cfg.get("type", CustomDataset)
    if not (isinstance(kind, type) and issubclass(kind, CustomDataset)):
        raise ConfigError(f"unsupported dataset type {kind!r}; use CustomDataset", field="type")
    if not cfg.get("path"):
        raise ConfigError("missing", field="path")
    given = Path(str(cfg["path"]))
    if cfg.get("file_name"):
        given = given / str(cfg["file_name"])
    # Relative to the config file first, so configs run from any directory.
    tried = [given] if given.is_absolute() else [base / given, Path.cwd() / given]
    found = next((p for p in map(find_data_file, tried) if p is not None), None)
    if found is None:
        where = " nor ".join(repr(str(p)) for p in dict.fromkeys(tried))
        raise ConfigError(f"data file {str(given)!r} not found: neither {where} exists"
                          if len(set(tried)) > 1 else f"data file {where} not found",
                          field="path")
    return kind(path=found, reader_cfg=cfg.get("reader_cfg"))


def _component(infer_cfg: Mapping[str, Any], name: str, kind: type,
               required: bool = False) -> Any:
    """``infer_cfg[name]``: a ``kind`` built from ``dict(type=...)``, or one the config
    built itself."""
    cfg = infer_cfg.get(name)
    if cfg is None and required:
        raise ConfigError("missing", field=name)
    cfg = {"type": kind} if cfg is None else cfg
    if isinstance(cfg, kind):
        return cfg
    given = cfg.get("type", kind) if isinstance(cfg, Mapping) else cfg
    if not (isinstance(given, type) and issubclass(given, kind)):
        where = f"{name}.type" if isinstance(cfg, Mapping) else name
        raise ConfigError(f"{given!r} is not supported here: {_ONLY[kind]}", field=where)
    return _guarded(name, partial(construct, default=kind), {name: cfg})


#: What ``infer_cfg`` supports, said when a config names something else.
_ONLY = {
    RawPromptTemplate: "use RawPromptTemplate or PromptTemplate",
    ZeroRetriever: "only ZeroRetriever is supported (write in-context examples into the "
                   "prompt template, as datasets/bbh.py does)",
    GenInferencer: "use GenInferencer or PPLInferencer",
    PPLInferencer: "use GenInferencer or PPLInferencer",
}


def _guarded(name: str, build: Callable[[Any], Any], section: Mapping[str, Any]) -> Any:
    """``build(section[name])`` (``None`` when absent); any mistake it finds is a
    ``ConfigError`` at field ``name``."""
    if section.get(name) is None:
        return None
    try:
        with within(name):
            return build(section[name])
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(str(exc).strip("'\""), field=name) from exc


def _config_line(exc: BaseException, path: Path) -> int | None:
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if Path(frame.filename).resolve() == path.resolve():
            return frame.lineno
    return None


def _s(path: Path | None) -> str | None:
    return str(path) if path is not None else None
