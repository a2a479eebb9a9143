"""Check datasets before any request is sent, so bad input costs nothing.

Every selected row is read once (a parse pass is far cheaper than a model call): a
malformed line, a bad byte, a missing column or an empty selection is reported with the
file, line and field, and the run never starts. The prompt template is checked against
the data too: a ``{placeholder}`` that names no input column would reach the model as
literal text.
"""

from __future__ import annotations

import re
from typing import Any, Iterator, Mapping

from .config import DatasetSpec
from .errors import ConfigError, DatasetError
from .prompt import PLACEHOLDER

# A placeholder right after a LaTeX command, ``^`` or ``_`` is math (\frac{a}{b}, x^{n}).
_MATH_BEFORE = re.compile(r"(\\[A-Za-z]+|[\^_])$")


def selected_rows(spec: DatasetSpec,
                  limit: int | None = None) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """``(index, line, row)`` of the rows in ``test_range`` (and the first ``limit``)."""
    start, stop = spec.test_range.start or 0, spec.test_range.stop
    if limit is not None:
        stop = start + limit if stop is None else min(stop, start + limit)
    for index, (line, row) in enumerate(spec.reader.rows()):
        if index < start:
            continue
        if stop is not None and index >= stop:
            break
        yield index, line, row


def validate_dataset(spec: DatasetSpec, limit: int | None = None) -> int:
    """Read the rows the run will use and check them; return how many there are."""
    count = 0
    for _, line, row in selected_rows(spec, limit):
        if count == 0:
            check_placeholders(spec, row)
        check_row(spec, row, line)
        count += 1
    if count == 0:
        raise DatasetError("the dataset has no rows in the selected range",
                           path=str(spec.reader.path))
    return count


def check_row(spec: DatasetSpec, row: Mapping[str, Any], line: int) -> None:
    """Every input column and the output column must be present in ``row``."""
    for column in (*spec.input_columns, *([spec.output_column] if spec.output_column else [])):
        if column not in row:
            raise DatasetError(f"missing column (the row has: {', '.join(row) or 'nothing'})",
                               path=str(spec.reader.path), line=line, field=column)


def check_placeholders(spec: DatasetSpec, row: Mapping[str, Any]) -> None:
    """Each ``{name}`` in the prompt must be an input column (math braces excepted)."""
    for message in spec.template.messages:
        content = message["content"]
        for match in PLACEHOLDER.finditer(content):
            name = match.group(1)
            latex = _MATH_BEFORE.search(content[:match.start()])
            if latex or len(name) < 2 or name in spec.input_columns:
                continue
            where = f"datasets[{spec.abbr}].infer_cfg.prompt_template"
            if name in row:
                raise ConfigError(f"the prompt uses {{{name}}}, a column that is not in "
                                  "reader_cfg.input_columns; add it there", field=where)
            raise ConfigError(f"the prompt uses {{{name}}}, which names no column of "
                              f"{spec.reader.path} (input columns: "
                              f"{', '.join(spec.input_columns)})", field=where)
