"""The gold label of a PPL row must be one of the candidates, or no choice can be right."""

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


def check_label(spec: Any, row: Mapping[str, Any], line: int) -> None:
    """A ``DatasetError`` naming the file, line and column when the row's gold label is
    none of the candidate labels (compared as text, as ``AccEvaluator`` does)."""
    if spec.output_column not in row:
        return  # reported as a missing column
    gold = gold_label(spec, row)
    golds = gold if isinstance(gold, (list, tuple)) else [gold]
    labels = spec.ppl.labels
    if not any(str(g).strip() in labels for g in golds if g is not None):
        raise DatasetError(f"the reference {row.get(spec.output_column)!r}"
                           + (f" (after dataset_postprocessor: {gold!r})"
                              if spec.dataset_postprocessor is not None else "")
                           + f" is not a candidate label of the PPL template "
                           f"(infer_cfg.prompt_template labels: {', '.join(labels)})",
                           path=str(spec.reader.path), line=line, field=spec.output_column)
