"""The hand-labelled extraction corpus, scored by the shipped benchmark configs.

``tests/extraction_corpus/*.jsonl`` holds model replies labelled by hand (correct or
not, under the grading policy in that folder's README). :func:`score_corpus` runs each
row through a config's rule stage exactly as a run does (the pipeline's ``Scorer``:
postprocessors, then the evaluator, math-verify in worker processes), so the agreement
it reports is the agreement a run would have. ``bench/bench_extraction.py`` prints it;
``tests/test_extraction_corpus.py`` holds the configs to their targets.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from harness.config import DatasetSpec, load_config
from harness.postprocessors import (
    bbh_freeform_postprocess,
    bbh_mcq_postprocess,
    gsm8k_dataset_postprocess,
    gsm8k_postprocess,
    math_postprocess_v2,
)
from harness.postprocessors.build import BoundPostprocessor
from harness.progress import Progress
from harness.records import Completion, Sample

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "extraction_corpus"
DATASETS = ROOT / "datasets"

TASKS = ("gsm8k", "math", "mcq", "bbh_freeform")
CATEGORIES = ("well_formed", "explanatory_text", "multiple_candidates", "self_correction",
              "hedge", "empty", "truncated", "think", "unicode_width", "injection",
              "adversarial_format", "chat_shape", "words_units", "multilingual")
#: Categories where no wrong reply may ever be credited.
STRICT_CATEGORIES = ("injection", "hedge", "truncated")
_FIELDS = {"id": str, "category": str, "kind": str, "question": str, "reference": str,
           "reply": str, "correct": bool, "why": str}


class CorpusError(ValueError):
    """A corpus row that breaks the format; the message names file, line and field."""


@dataclass(frozen=True, slots=True)
class CorpusRow:
    """One labelled reply: the question, the gold as the dataset writes it, the label."""

    id: str
    task: str
    category: str
    kind: str
    question: str
    reference: str
    reply: str
    correct: bool
    why: str


@dataclass(frozen=True, slots=True)
class ConfigUnderTest:
    """One shipped dataset config that scores one corpus task."""

    name: str  # "gsm8k.py" or "bbh.py:mcq"
    task: str
    spec: DatasetSpec


@dataclass(frozen=True, slots=True)
class RowVerdict:
    """What one config made of one row."""

    config: str
    row: CorpusRow
    status: str
    extracted: Any
    credited: bool

    @property
    def agrees(self) -> bool:
        """Whether the config's verdict matches the hand label."""
        return self.credited == self.row.correct


def load_corpus(folder: Path = CORPUS) -> list[CorpusRow]:
    """Every row of every task file in ``folder``, checked field by field."""
    rows: list[CorpusRow] = []
    seen: dict[str, str] = {}
    for task in TASKS:
        path = folder / f"{task}.jsonl"
        if not path.exists():
            continue
        with path.open(encoding="utf-8") as fh:
            for number, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                where = f"{path}:{number}"
                try:
                    data = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise CorpusError(f"{where}: not JSON ({exc.msg})") from None
                for name, kind in _FIELDS.items():
                    if not isinstance(data.get(name), kind):
                        raise CorpusError(f"{where}: field {name!r} must be a {kind.__name__}")
                if data["category"] not in CATEGORIES:
                    raise CorpusError(f"{where}: field 'category' is {data['category']!r}, "
                                      f"not one of {', '.join(CATEGORIES)}")
                if data["id"] in seen:
                    raise CorpusError(f"{where}: id {data['id']!r} repeats {seen[data['id']]}")
                seen[data["id"]] = where
                rows.append(CorpusRow(task=task, **{k: data[k] for k in _FIELDS}))
    return rows


def _func(postprocessor: Any) -> Any:
    return postprocessor.func if isinstance(postprocessor, BoundPostprocessor) else postprocessor


def task_of(spec: DatasetSpec) -> str | None:
    """Which corpus task a dataset config scores, from the extraction it uses."""
    evaluator = spec.evaluator
    if evaluator is None:
        return None
    pred = _func(spec.pred_postprocessor)
    rule = getattr(evaluator, "rule_evaluator", None)
    if pred is None and rule is not None:
        pred = _func(rule.pred_postprocessor)
    if pred is None:
        pred = _func(evaluator.pred_postprocessor)
    gold = _func(spec.dataset_postprocessor)
    if pred is gsm8k_postprocess and gold is gsm8k_dataset_postprocess:
        return "gsm8k"
    if pred is math_postprocess_v2:
        return "math"
    if pred is bbh_mcq_postprocess:
        return "mcq"
    if pred is bbh_freeform_postprocess:
        return "bbh_freeform"
    return None


def shipped_configs(folder: Path = DATASETS) -> list[ConfigUnderTest]:
    """One entry per shipped config file and task it scores (BBH's tasks of one kind
    share their extraction, so the first stands for all)."""
    found: list[ConfigUnderTest] = []
    for path in sorted(folder.glob("*.py")):
        tasks: dict[str, DatasetSpec] = {}
        for spec in load_config(path).datasets:
            task = task_of(spec)
            if task is not None:
                tasks.setdefault(task, spec)
        for task, spec in tasks.items():
            name = path.name if len(tasks) == 1 else f"{path.name}:{task}"
            found.append(ConfigUnderTest(name, task, spec))
    return found


def _sample(spec: DatasetSpec, row: CorpusRow, index: int) -> Sample:
    data: dict[str, Any] = {spec.input_columns[0]: row.question}
    if spec.output_column is not None:
        data[spec.output_column] = row.reference
    return Sample(spec.abbr, "corpus", index, 0, data, row.reference, (), key=row.id)


async def score_corpus(configs: Sequence[ConfigUnderTest], rows: Iterable[CorpusRow],
                       workers: int | None = None) -> list[RowVerdict]:
    """Score every row of each config's task through the pipeline's rule stage; a
    cascade's verdict is its rule layer's (the judge is not asked)."""
    from harness.records import JudgeTask
    from harness.stages.score import Scorer

    rows = list(rows)
    verdicts: list[RowVerdict] = []
    for config in configs:
        mine = [r for r in rows if r.task == config.task]
        if not mine:
            continue
        scorer = Scorer({config.spec.abbr: config.spec}, "eval", workers, Progress())
        async with anyio.create_task_group() as tg:
            scorer.start(tg)
            try:
                for index, row in enumerate(mine):
                    sample = _sample(config.spec, row, index)
                    outcome = await scorer.score(Completion(sample, "ok", row.reply))
                    result = outcome.result if isinstance(outcome, JudgeTask) else outcome
                    credited = bool(result.rule_correct if isinstance(outcome, JudgeTask)
                                    else result.correct)
                    verdicts.append(RowVerdict(config.name, row, result.status,
                                               result.extracted, credited))
            finally:
                await scorer.aclose()
    return verdicts


@dataclass(frozen=True, slots=True)
class Agreement:
    """Counts of one group of verdicts."""

    rows: int
    agree: int
    false_positives: int
    false_negatives: int

    @property
    def rate(self) -> float:
        """Share of rows where the config agrees with the label."""
        return self.agree / self.rows if self.rows else 1.0


def agreement(verdicts: Iterable[RowVerdict]) -> Agreement:
    """Agreement, false positives (credited, labelled wrong) and false negatives."""
    verdicts = list(verdicts)
    return Agreement(len(verdicts), sum(v.agrees for v in verdicts),
                     sum(v.credited and not v.row.correct for v in verdicts),
                     sum(not v.credited and v.row.correct for v in verdicts))


def grouped(verdicts: Iterable[RowVerdict], *keys: str) -> Mapping[tuple[str, ...], Agreement]:
    """Agreement per group; keys name ``RowVerdict`` or ``CorpusRow`` attributes."""
    groups: dict[tuple[str, ...], list[RowVerdict]] = {}
    for verdict in verdicts:
        key = tuple(str(getattr(verdict, k) if hasattr(verdict, k) else getattr(verdict.row, k))
                    for k in keys)
        groups.setdefault(key, []).append(verdict)
    return {key: agreement(group) for key, group in sorted(groups.items())}
