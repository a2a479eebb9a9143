"""``quick_init``: a record's cheaper ``__init__`` builds the same frozen record."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from harness.records import SampleResult, quick_init


@dataclasses.dataclass(frozen=True, slots=True)
class Plain:
    a: int
    b: str = "b"
    c: dict[str, Any] = dataclasses.field(default_factory=dict)


@quick_init
@dataclasses.dataclass(frozen=True, slots=True)
class Quick:
    a: int
    b: str = "b"
    c: dict[str, Any] = dataclasses.field(default_factory=dict)


def test_quick_init_takes_the_same_arguments():
    assert str(inspect.signature(Quick)) == str(inspect.signature(Plain))


@pytest.mark.parametrize("args, kwargs", [((1,), {}), ((1, "x"), {}), ((1,), {"c": {"k": 1}}),
                                          ((), {"a": 2, "b": "y", "c": {}})])
def test_quick_init_sets_the_same_fields(args, kwargs):
    assert dataclasses.astuple(Quick(*args, **kwargs)) == dataclasses.astuple(Plain(*args, **kwargs))


def test_quick_init_default_factory_gives_each_record_its_own():
    assert Quick(1).c is not Quick(1).c


def test_quick_init_record_stays_frozen():
    record = Quick(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.a = 2  # type: ignore[misc]
    assert dataclasses.replace(record, a=3) == Quick(3)


def test_quick_init_refuses_a_missing_argument():
    with pytest.raises(TypeError):
        Quick()  # type: ignore[call-arg]


def test_sample_result_is_built_by_quick_init():
    result = SampleResult("d", "m", 0, 0, "ok", (), "text", "1", "1", True)
    assert result.details == {} and result.cause is None and not result.cached
