"""``record``: the dataclass decorator of the records built for every sample.

Records that flow between stages are immutable: no stage may change a record another
stage holds. The type checker enforces it (``dataclass_transform(frozen_default=True)``
makes assigning to a field an error for mypy, which CI runs on ``harness/``). At run
time they are plain slotted dataclasses, hashed like frozen ones, because a frozen
dataclass sets each field through ``object.__setattr__``: building one costs several
times as much, and every sample builds several (``bench/README.md``, "Records").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar, dataclass_transform

T = TypeVar("T")


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def record(cls: type[T]) -> type[T]:
    """A slotted dataclass that the type checker holds frozen (see the module docstring)."""
    return dataclass(slots=True, unsafe_hash=True)(cls)
