"""A PPL row's candidate labels, and its gold label that must be one of them, or no
choice can be right."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import DatasetError


def gold_label(spec: Any, row: Mapping[str, Any]) -> Any:
    """The row's reference as the evaluator sees it (after ``dataset_postprocessor``)."""
    reference = row.get(spec.output_column)
    if spec.dataset_postprocessor is not None:
        return spec.dataset_postprocessor(reference, row)
    return reference


def row_labels(ppl: Any, row: Mapping[str, Any]) -> tuple[str, ...]:
    """The candidate labels ``row`` offers: all of ``ppl``'s, or with ``listed_options``
    the option letters the row lists, in template order."""
    if not ppl.listed_options:
        return tuple(ppl.labels)
    # Imported here: only a dataset with listed options reads them.
    from ..postprocessors.options import question_options

    listed = question_options(row, "".join(ppl.labels))
    return tuple(label for label in ppl.labels if label in listed)


def check_label(spec: Any, row: Mapping[str, Any], line: int) -> None:
    """A ``DatasetError`` naming the file, line and column when the row offers fewer
    than two candidates, or its gold label is none of them (compared as text, as
    ``AccEvaluator`` does)."""
    labels = row_labels(spec.ppl, row)
    if len(labels) < 2:
        raise DatasetError(f"the row lists {len(labels)} of the candidate option letters "
                           f"({', '.join(spec.ppl.labels)}); listed_options needs at least two",
                           path=str(spec.reader.path), line=line)
    if spec.output_column not in row:
        return  # reported as a missing column
    gold = gold_label(spec, row)
    golds = gold if isinstance(gold, (list, tuple)) else [gold]
    if not any(str(g).strip() in labels for g in golds if g is not None):
        offered = (f"one of the options the row lists ({', '.join(labels)}; listed_options)"
                   if spec.ppl.listed_options else "a candidate label of the PPL template "
                   f"(infer_cfg.prompt_template labels: {', '.join(labels)})")
        raise DatasetError(f"the reference {row.get(spec.output_column)!r}"
                           + (f" (after dataset_postprocessor: {gold!r})"
                              if spec.dataset_postprocessor is not None else "")
                           + f" is not {offered}",
                           path=str(spec.reader.path), line=line, field=spec.output_column)
