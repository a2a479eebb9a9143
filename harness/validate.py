"""Check datasets before any request is sent, so bad input costs nothing.

Every selected row is read once (a parse pass is far cheaper than a model call): a
malformed line, a bad byte, a missing column, a null, NaN or empty reference (as
written, or after the ``dataset_postprocessor``), a NaN or ±Infinity a prompt would show
as text, a row whose prompt fields are all empty or an empty selection is reported with
the file, line and field, and the run never starts. Rows without a reference are left
out instead where ``reader_cfg`` says ``skip_missing_reference=True``;
:class:`Selection` counts them. The prompt template is
checked against the data too: a ``{placeholder}`` that names no input column would
reach the model as literal text.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .config import DatasetSpec
from .config_keys import MAX_CONCURRENCY, directory, positive
from .dataset import shown
from .errors import ConfigError, DatasetError
from .postprocessors import is_extraction_failure
from .prompt import PLACEHOLDER
from .stages.extract import apply

# A placeholder right after a LaTeX command, ``^`` or ``_`` is math (\frac{a}{b}, x^{n}).
_MATH_BEFORE = re.compile(r"(\\[A-Za-z]+|[\^_])$")


@dataclass(frozen=True)
class Selection:
    """What a dataset contributes to a run: ``rows`` it will evaluate and ``skipped``
    rows left out for a missing reference (``reader_cfg`` ``skip_missing_reference``)."""

    rows: int
    skipped: int = 0


def selected_rows(spec: DatasetSpec,
                  limit: int | None = None) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """``(index, line, row)`` of the rows the run evaluates: those in ``test_range`` (and
    the first ``limit`` of them), without the skipped ones. Indexes are positions in the
    file, so a skipped row leaves a gap rather than renumbering the rest."""
    for index, line, row in _in_range(spec, limit):
        if not _skipped(spec, row):
            yield index, line, row


def cut_by_limit(spec: DatasetSpec, limit: int | None) -> bool:
    """Whether ``limit`` leaves out rows of the dataset's range (a row follows the first
    ``limit``); a row there that cannot be read counts as one."""
    if limit is None:
        return False
    try:
        return sum(1 for _ in _in_range(spec, limit + 1)) > limit
    except DatasetError:
        return True


def _in_range(spec: DatasetSpec,
              limit: int | None) -> Iterator[tuple[int, int, dict[str, Any]]]:
    start, stop = spec.test_range.start or 0, spec.test_range.stop
    if limit is not None:
        stop = start + limit if stop is None else min(stop, start + limit)
    for index, (line, row) in enumerate(spec.reader.rows()):
        if index < start:
            continue
        if stop is not None and index >= stop:
            break
        yield index, line, row


def check_run_options(concurrency: Any, limit: Any, work_dir: Any = None) -> None:
    """The numbers a run is given beside its config: ``concurrency`` must be an integer
    from 1 to ``MAX_CONCURRENCY``, ``limit`` a positive one or ``None`` and ``work_dir``
    a path or ``None``; a ``ConfigError`` names the one that is not.

    The CLI checks its flags already; ``evaluate``/``open_run`` callers pass values
    straight in, and a concurrency of 0 would otherwise end in a broken stream.
    """
    positive(concurrency, "concurrency", int, MAX_CONCURRENCY)
    positive(limit, "limit", int)
    directory(work_dir, "work_dir")


def validate_dataset(spec: DatasetSpec, limit: int | None = None) -> Selection:
    """Read the rows the run will use and check them; say how many there are and how
    many were skipped."""
    count = skipped = 0
    prompt_columns = _prompt_columns(spec)
    text_columns = _text_columns(spec, prompt_columns)
    reference_of = _reference_postprocessor(spec)
    for _, line, row in _in_range(spec, limit):
        if count + skipped == 0:
            check_placeholders(spec, row)
            check_judge_placeholders(spec, row)
        if _skipped(spec, row):
            skipped += 1
            continue
        check_row(spec, row, line)
        _check_numbers(spec, row, line, text_columns)
        _check_prompt_fields(spec, row, line, prompt_columns)
        if reference_of is not None:
            _check_postprocessed_reference(spec, row, line, reference_of)
        count += 1
    if count == 0 and skipped:
        raise DatasetError(f"all {skipped} selected rows lack a reference in "
                           f"{spec.output_column!r} (skip_missing_reference=True)",
                           path=str(spec.reader.path), field=spec.output_column)
    if count == 0:
        raise DatasetError("the dataset has no rows in the selected range",
                           path=str(spec.reader.path))
    return Selection(count, skipped)


def check_row(spec: DatasetSpec, row: Mapping[str, Any], line: int) -> None:
    """Every input column and the output column must be present in ``row``, and the
    reference must not be null, NaN or empty (a row without an answer cannot be scored)."""
    for column in (*spec.input_columns, *([spec.output_column] if spec.output_column else [])):
        if column not in row:
            raise DatasetError(f"missing column (the row has: {', '.join(row) or 'nothing'})",
                               path=str(spec.reader.path), line=line, field=column)
    if spec.ppl is not None:
        from .ppl.labels import check_label

        check_label(spec, row, line)
    if spec.output_column and missing_reference(reference := row[spec.output_column]):
        what = (f"{json.dumps(reference)}, not a number" if _not_a_number(reference)
                else f"empty ({reference!r})")
        raise DatasetError(f"the reference is {what}; fix the data, or set "
                           "skip_missing_reference=True in reader_cfg to leave such rows out",
                           path=str(spec.reader.path), line=line, field=spec.output_column)


def _prompt_columns(spec: DatasetSpec) -> tuple[str, ...]:
    """The input columns the prompt template fills in."""
    used = set(_placeholders(spec.template.messages))
    return tuple(c for c in spec.input_columns if c in used)


def _text_columns(spec: DatasetSpec,
                  prompt_columns: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """``(column, reader)`` for each column a template writes into text: the prompt's
    (read by the model) and those only the judge's template names (read by the judge)."""
    judge = tuple(c for c in _judge_columns(spec) if c not in prompt_columns)
    return (*((c, "the model") for c in prompt_columns), *((c, "the judge") for c in judge))


def _check_numbers(spec: DatasetSpec, row: Mapping[str, Any], line: int,
                   columns: tuple[tuple[str, str], ...]) -> None:
    """A NaN or ±Infinity in a field a template writes out is a missing or broken value,
    as in the reference: its reader would see the text 'nan' or 'inf' in its prompt."""
    for column, reader in columns:
        if _not_a_number(value := row.get(column)):
            raise DatasetError(f"{json.dumps(value)}, not a number: {reader} would read "
                               f"{str(value)!r} in its prompt; write null for a missing value",
                               path=str(spec.reader.path), line=line, field=column)


def _check_prompt_fields(spec: DatasetSpec, row: Mapping[str, Any], line: int,
                         columns: tuple[str, ...]) -> None:
    """A row whose every field the prompt uses is null or blank would send the model a
    prompt without its question, and score its reply."""
    for column in columns:
        value = row[column]
        if value is not None and (not isinstance(value, str) or value.strip()):
            return
    if columns:
        raise DatasetError(f"every field the prompt uses is empty "
                           f"({', '.join(f'{c}={row[c]!r}' for c in columns)})",
                           path=str(spec.reader.path), line=line, field=columns[0])


def _reference_postprocessor(spec: DatasetSpec) -> Callable[[Mapping[str, Any]], Any] | None:
    """A row → its reference after the ``dataset_postprocessor``, as scoring sees it;
    None without one, or for a likelihood dataset (``check_label`` checks its labels)."""
    column, postprocessor = spec.output_column, spec.dataset_postprocessor
    if not column or postprocessor is None or spec.ppl is not None:
        return None
    return lambda row: apply(postprocessor, row[column], row)


def _check_postprocessed_reference(spec: DatasetSpec, row: Mapping[str, Any], line: int,
                                   reference_of: Callable[[Mapping[str, Any]], Any]) -> None:
    """The reference after the ``dataset_postprocessor`` (``reference_of``) must still be
    one: one the postprocessor cannot read would score every reply to it as wrong."""
    column = spec.output_column
    assert column is not None  # reference_of exists only for a dataset with references
    try:
        reference = reference_of(row)
    except Exception as exc:  # noqa: BLE001 - any failure is this row's
        raise DatasetError(f"the dataset_postprocessor raised {type(exc).__name__} on the "
                           f"reference {shown(row[column])}: {exc}",
                           path=str(spec.reader.path), line=line, field=column) from exc
    if missing_reference(reference):
        raise DatasetError(f"the dataset_postprocessor finds no reference in "
                           f"{shown(row[column])} (it gives {reference!r}); fix the data "
                           "or the postprocessor, or set skip_missing_reference=True in "
                           "reader_cfg to leave such rows out", path=str(spec.reader.path),
                           line=line, field=column)


def missing_reference(value: Any) -> bool:
    """A reference that cannot be scored against: null, NaN or ±Infinity, empty or blank
    text, an empty list, or a list of only such values (the rule that makes a prediction
    an extraction failure, and a number that is none)."""
    if isinstance(value, (list, tuple)) and value:
        return all(missing_reference(item) for item in value)
    return is_extraction_failure(value) or _not_a_number(value)


def _not_a_number(value: Any) -> bool:
    """NaN or ±Infinity: what JSON writers put for a missing value (``json.dumps`` writes
    pandas' NaN as ``NaN``) or an overflow, never an answer nor text for a prompt."""
    return isinstance(value, float) and not math.isfinite(value)


def _skipped(spec: DatasetSpec, row: Mapping[str, Any]) -> bool:
    # A row without the column at all is missing its reference too (JSONL writers
    # often leave out null fields).
    column = spec.output_column
    if not (spec.skip_missing_reference and column):
        return False
    if column not in row or missing_reference(row[column]):
        return True
    reference_of = _reference_postprocessor(spec)
    try:
        return reference_of is not None and missing_reference(reference_of(row))
    except Exception:  # noqa: BLE001 - not a missing reference: validation reports it
        return False


def check_judge_placeholders(spec: DatasetSpec, row: Mapping[str, Any]) -> None:
    """Each ``{name}`` in a judge's template must be a column of the data, or what the
    judge fills in itself (math braces excepted): a preset's ``{problem}`` on a dataset
    whose question is ``question`` would reach the judge as literal text, and the judge
    would grade without the question."""
    for name in _judge_columns(spec):
        if name not in row:
            raise ConfigError(
                f"the judge's template uses {{{name}}}, which names no column of "
                f"{spec.reader.path} (columns: {', '.join(row)}); name the columns to show, "
                "e.g. judge_template('grader', question='question', answer='answer')",
                field=f"datasets[{spec.abbr}].eval_cfg.evaluator.prompt_template")


def _judge_columns(spec: DatasetSpec) -> tuple[str, ...]:
    """The names of the ``{name}`` placeholders in the judge's template that name a
    column of the data rather than what the judge fills in itself; none without a judge."""
    from .evaluators.llm import JUDGE_VALUES, judge_plan

    judge = judge_plan(spec.evaluator)[1]
    if judge is None:
        return ()
    return tuple(dict.fromkeys(n for n in _placeholders(judge.template.messages)
                               if n not in JUDGE_VALUES))


def _placeholders(messages: Iterable[Mapping[str, str]]) -> Iterator[str]:
    """The names of the ``{name}`` placeholders in ``messages``, but for math braces
    (``\\frac{a}{b}``) and one-letter names."""
    for message in messages:
        content = message["content"]
        for match in PLACEHOLDER.finditer(content):
            name = match.group(1)
            if len(name) >= 2 and not _MATH_BEFORE.search(content[:match.start()]):
                yield name


def check_placeholders(spec: DatasetSpec, row: Mapping[str, Any]) -> None:
    """Each ``{name}`` in the prompt must be an input column (math braces excepted)."""
    for name in _placeholders(spec.template.messages):
        if name not in spec.input_columns:
            where = f"datasets[{spec.abbr}].infer_cfg.prompt_template"
            if name in row:
                raise ConfigError(f"the prompt uses {{{name}}}, a column that is not in "
                                  "reader_cfg.input_columns; add it there", field=where)
            raise ConfigError(f"the prompt uses {{{name}}}, which names no column of "
                              f"{spec.reader.path} (input columns: "
                              f"{', '.join(spec.input_columns)})", field=where)
