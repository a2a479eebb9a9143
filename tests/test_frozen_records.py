"""Per-sample records are immutable for the type checker and cheap to build at run time."""

from __future__ import annotations

import dataclasses

import pytest

from harness import records
from harness.frozen import record

PER_SAMPLE = [records.Sample, records.Completion, records.SampleResult, records.VerdictRecord,
              records.JudgeTask, records.JudgeRequest, records.OutcomeRow]


def test_the_decorator_declares_its_records_frozen_to_the_type_checker():
    """mypy (run by CI on harness/) reads this declaration: without it, a stage could
    change a record another stage still holds and nothing would say so."""
    transform = record.__dataclass_transform__
    # Python 3.11 keeps it among the extra keyword arguments, 3.12 names it.
    assert transform.get("frozen_default", transform.get("kwargs", {}).get("frozen_default"))


@pytest.mark.parametrize("cls", PER_SAMPLE, ids=lambda c: c.__name__)
def test_per_sample_records_are_slotted_dataclasses_hashed_by_value(cls):
    assert dataclasses.is_dataclass(cls) and "__slots__" in vars(cls)
    assert cls.__hash__ is not None  # hashed like a frozen dataclass, by its fields


def test_a_record_is_hashed_and_compared_by_value_and_replaced_by_copy():
    row = records.OutcomeRow("k", "[]", None)
    same = records.OutcomeRow("k", "[]", None)
    assert row == same and hash(row) == hash(same)
    changed = dataclasses.replace(row, verdict="v")
    assert changed.verdict == "v" and row.verdict is None
