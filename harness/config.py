"""Config files in the seed documents' vocabulary, turned into typed specs.

A config is a Python file defining ``datasets = [dict(...)]`` (or any ``*_datasets``
lists, as OpenCompass configs do) and optionally ``models = [dict(...)]`` and
``work_dir``. The names it uses (``CustomDataset``, ``RawPromptTemplate``,
``ZeroRetriever``, ``GenInferencer``, evaluators, postprocessors) are imported from
``harness``. Every mistake is reported as ``ConfigError`` naming the file and the field
(``datasets[0].eval_cfg.evaluator``) before any request is sent.
"""

from __future__ import annotations

import runpy
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from .dataset import CustomDataset, parse_range
from .errors import ConfigError
from .evaluators import BaseEvaluator, build_evaluator
from .prompt import RawPromptTemplate


class ZeroRetriever:
    """No in-context examples: each sample's prompt is its own template (the default)."""

    def __init__(self, **_ignored: Any) -> None:
        pass


class GenInferencer:
    """Generation: one chat completion per sample; ``max_out_len`` caps its tokens.

    Other keyword arguments (``temperature``, ``stop``…) are sent as generation params.
    """

    def __init__(self, max_out_len: int | None = None, **gen_kwargs: Any) -> None:
        self.max_out_len = max_out_len
        self.gen_kwargs = {k: v for k, v in gen_kwargs.items()
                           if k not in ("batch_size", "save_every", "stopping_criteria")}


class OpenAISDK:
    """Model ``type`` marker for configs ported from OpenCompass (any OpenAI-compatible API)."""


OpenAI = OpenAISDK


@dataclass(frozen=True)
class DatasetSpec:
    """One dataset of a run, validated and ready to stream."""

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
    except Exception as exc:
        line = _config_line(exc, path)
        raise ConfigError(f"{type(exc).__name__}: {exc}", path=str(path), line=line) from exc
    finally:
        sys.path.remove(folder)
    return config_from_namespace(namespace, path)


def config_from_namespace(namespace: Mapping[str, Any], path: Path | None = None) -> RunConfig:
    """Build a ``RunConfig`` from a config's variables (also used for in-code configs)."""
    raw = namespace.get("datasets")
    if raw is None:
        raw = [d for name, value in namespace.items()
               if name.endswith("_datasets") and isinstance(value, list) for d in value]
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
    return RunConfig(datasets, list(models), namespace.get("work_dir"), path)


def build_dataset(cfg: Mapping[str, Any], where: str, base: Path,
                  config_path: Path | None = None) -> DatasetSpec:
    """Validate one dataset dict and resolve its reader, template and evaluator."""
    src = _s(config_path)

    def need(mapping: Mapping[str, Any], key: str, at: str) -> Any:
        if not isinstance(mapping, Mapping) or key not in mapping:
            raise ConfigError("missing", path=src, field=f"{at}.{key}")
        return mapping[key]

    reader_cfg = need(cfg, "reader_cfg", where)
    infer_cfg = need(cfg, "infer_cfg", where)
    eval_cfg = cfg.get("eval_cfg") or {}
    input_columns = tuple(need(reader_cfg, "input_columns", f"{where}.reader_cfg"))
    output_column = reader_cfg.get("output_column")
    abbr = str(cfg.get("abbr") or Path(str(need(cfg, "path", where))).stem)

    reader = _build_reader(cfg, where, base, src)
    template = _build(need(infer_cfg, "prompt_template", f"{where}.infer_cfg"),
                      f"{where}.infer_cfg.prompt_template", src, RawPromptTemplate)
    if not isinstance(template, RawPromptTemplate):
        raise ConfigError("must be a RawPromptTemplate or PromptTemplate", path=src,
                          field=f"{where}.infer_cfg.prompt_template")
    inferencer = _build(infer_cfg.get("inferencer") or {"type": GenInferencer},
                        f"{where}.infer_cfg.inferencer", src, GenInferencer)
    gen_params: dict[str, Any] = dict(getattr(inferencer, "gen_kwargs", {}))
    if getattr(inferencer, "max_out_len", None):
        gen_params["max_tokens"] = int(inferencer.max_out_len)

    pred_pp = _postprocessor(eval_cfg.get("pred_postprocessor"),
                             f"{where}.eval_cfg.pred_postprocessor", src)
    ref_pp = _postprocessor(eval_cfg.get("dataset_postprocessor"),
                            f"{where}.eval_cfg.dataset_postprocessor", src)
    evaluator = None
    if eval_cfg.get("evaluator") is not None:
        try:
            evaluator = build_evaluator(eval_cfg["evaluator"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(str(exc).strip("'\""), path=src,
                              field=f"{where}.eval_cfg.evaluator") from exc
    try:
        test_range = parse_range(reader_cfg.get("test_range"))
    except ValueError as exc:
        raise ConfigError(str(exc), path=src, field=f"{where}.reader_cfg.test_range") from exc
    n = cfg.get("n", 1)
    if not isinstance(n, int) or n < 1:
        raise ConfigError("must be a positive integer", path=src, field=f"{where}.n")
    return DatasetSpec(abbr, reader, input_columns, output_column, template, gen_params,
                       pred_pp, ref_pp, evaluator, n, test_range)


def _build_reader(cfg: Mapping[str, Any], where: str, base: Path, src: str | None) -> CustomDataset:
    kind = cfg.get("type", CustomDataset)
    if not (isinstance(kind, type) and issubclass(kind, CustomDataset)):
        raise ConfigError(f"unsupported dataset type {kind!r}; use CustomDataset",
                          path=src, field=f"{where}.type")
    path = Path(str(cfg["path"]))
    if cfg.get("file_name"):
        path = path / str(cfg["file_name"])
    if not path.is_absolute():
        # Relative to the config file first, so configs run from any directory.
        path = base / path if _data_file(base / path) else Path.cwd() / path
    path = _data_file(path) or path
    if not path.is_file():
        raise ConfigError(f"data file {str(path)!r} not found", path=src, field=f"{where}.path")
    return kind(path=path, reader_cfg=cfg.get("reader_cfg"))


def _data_file(path: Path) -> Path | None:
    """``path`` itself, ``path.jsonl``/``path.csv``, or the one data file in folder
    ``path`` (``test.jsonl`` preferred), as OpenCompass paths like ``'opencompass/aime'``
    name a dataset rather than a file."""
    if path.is_file():
        return path
    for suffix in (".jsonl", ".csv"):
        if path.with_name(path.name + suffix).is_file():
            return path.with_name(path.name + suffix)
    if path.is_dir():
        if (path / "test.jsonl").is_file():
            return path / "test.jsonl"
        files = [p for p in path.iterdir() if p.suffix in (".jsonl", ".csv")]
        if len(files) == 1:
            return files[0]
    return None


def _build(cfg: Any, where: str, src: str | None, default: type) -> Any:
    if not isinstance(cfg, Mapping):
        return cfg
    kind = cfg.get("type", default)
    kwargs = {k: v for k, v in cfg.items() if k != "type"}
    try:
        return kind(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ConfigError(str(exc), path=src, field=where) from exc


def _postprocessor(cfg: Any, where: str, src: str | None) -> Callable[[Any], Any] | None:
    from .postprocessors import build_postprocessor

    if cfg is None:
        return None
    try:
        return build_postprocessor(cfg)
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(str(exc).strip("'\""), path=src, field=where) from exc


def _config_line(exc: BaseException, path: Path) -> int | None:
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if Path(frame.filename).resolve() == path.resolve():
            return frame.lineno
    return None


def _s(path: Path | None) -> str | None:
    return str(path) if path is not None else None
