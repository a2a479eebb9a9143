"""Which rows of two runs' details files are the same sample (for ``compare``).

A sample is what was asked: the prompt its details rows hold (the messages sent) and
its reference. Two runs pair their samples by these, never by row position: a row
inserted, deleted or moved in the data file between the runs moves its sample's index,
not its pairing, and two models or two postprocessors on one dataset send the same
prompts, so every sample pairs. Samples are paired by prompt and reference first, then
what is left by prompt alone (a fixed gold answer or a new ``dataset_postprocessor``
changes the reference of the same question: counted as ``reference_changed``). A
prompt asked by several rows (duplicate rows) pairs in order of index. Within a paired
sample, replicas pair by their number.

A changed prompt template (a prompt A/B test) leaves no prompt in both runs. The rows
are then paired by index, but only when every index both runs hold has the same
reference in both (the same dataset rows in the same order); otherwise nothing is
paired and ``not_paired`` says why, since a difference over rows that may hold other
questions would measure nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .workdir import iter_details

#: A details row's ``(index, replica)``, as the file holds them.
RowKey = tuple[Any, Any]

#: Indices listed per side of the samples in one run only (the rest are counted).
SHOWN_INDICES = 10


@dataclass(frozen=True)
class _Sample:
    """One index of a details file: digests of its prompt (``None``: no prompt in the
    row) and reference, and the replicas it has rows for."""

    prompt: bytes | None
    reference: bytes
    replicas: list[Any] = field(default_factory=list)


@dataclass(frozen=True)
class Pairing:
    """The samples two runs have in common: ``rows`` maps each row of A (``(index,
    replica)``) to the row of B that is the same sample and replica; ``by`` says how
    they were found (``None``: not paired, ``not_paired`` says why)."""

    by: Literal["prompt", "index"] | None
    rows: dict[RowKey, RowKey]
    samples: int
    only_in_a: list[Any]
    only_in_b: list[Any]
    moved: int
    reference_changed: int
    not_paired: str | None = None

    def to_json(self) -> dict[str, Any]:
        """What was paired and what was left out (the first indices of each side's
        unpaired samples, with their counts)."""
        return {"by": self.by, "samples_paired": self.samples,
                "samples_only_in_a": len(self.only_in_a),
                "samples_only_in_b": len(self.only_in_b),
                "indices_only_in_a": self.only_in_a[:SHOWN_INDICES],
                "indices_only_in_b": self.only_in_b[:SHOWN_INDICES],
                "moved": self.moved, "reference_changed": self.reference_changed,
                "not_paired": self.not_paired}


def pair_details(path_a: Path, path_b: Path) -> Pairing:
    """The pairing of the samples of two details files (see the module's docstring)."""
    a, b = _samples(path_a), _samples(path_b)
    why = _empty(a, "A") or _empty(b, "B")
    matched = {} if why else _by_content(a, b)
    by: Literal["prompt", "index"] | None = "prompt" if matched else None
    if why is None and not matched:
        why = _index_mismatch(a, b)
        if why is None:
            matched, by = {i: i for i in a if i in b}, "index"
    rows = {(i, r): (j, r) for i, j in matched.items()
            for r in set(a[i].replicas).intersection(b[j].replicas)}
    paired_b = set(matched.values())
    return Pairing(by, rows, len(matched), [i for i in a if i not in matched],
                   [j for j in b if j not in paired_b],
                   sum(i != j for i, j in matched.items()),
                   sum(a[i].reference != b[j].reference for i, j in matched.items()), why)


def pairing_header(pairing: dict[str, Any]) -> str:
    """How the samples were paired, or why they were not (of ``Pairing.to_json()``)."""
    if pairing["by"] is None:
        return f"NOT COMPARED: {pairing['not_paired']}"
    if pairing["by"] == "index":
        return (f"{pairing['samples_paired']} samples paired by index: no prompt is the "
                "same in both runs (a changed prompt template?), and every index both "
                "hold has the same reference in both")
    return f"{pairing['samples_paired']} samples paired by prompt"


def pairing_notes(pairing: dict[str, Any]) -> list[str]:
    """Lines on the samples in one run only, and the paired ones that moved or changed
    (of ``Pairing.to_json()``)."""
    lines = []
    only = {side: pairing[f"samples_only_in_{side}"] for side in ("a", "b")}
    if any(only.values()):
        lines.append("  samples in one run only (left out): " + "; ".join(
            f"{n} in {side.upper()}" + _indices(pairing[f"indices_only_in_{side}"], n)
            for side, n in only.items()))
    if pairing["moved"]:
        lines.append(f"  paired samples at another index in B: {pairing['moved']} (rows "
                     "added or removed before them)")
    if pairing["reference_changed"]:
        lines.append(f"  paired samples with another reference in B: "
                     f"{pairing['reference_changed']} (same prompt)")
    return lines


def _indices(shown: list[Any], n: int) -> str:
    """`` (index 0, 3 …)``: the first indices of ``n`` samples."""
    if not n:
        return ""
    return f" (index {', '.join(map(str, shown))}{' …' if n > len(shown) else ''})"


def _samples(path: Path) -> dict[Any, _Sample]:
    """Index → sample, in file order, of a details file (empty when it is absent)."""
    out: dict[Any, _Sample] = {}
    if not path.is_file():
        return out
    for _, row in iter_details(path):
        index = row.get("index")
        if isinstance(index, (list, dict)):
            continue  # a hand-edited row that no index can name
        sample = out.get(index)
        if sample is None:
            prompt = _digest(row["prompt"]) if "prompt" in row else None
            out[index] = sample = _Sample(prompt, _digest(row.get("reference")))
        sample.replicas.append(row.get("replica"))
    return out


def _by_content(a: dict[Any, _Sample], b: dict[Any, _Sample]) -> dict[Any, Any]:
    """A's index → B's for the samples asked alike: same prompt and reference first,
    then the rest by prompt alone; a repeated key pairs in order of index."""
    matched: dict[Any, Any] = {}
    keys: list[Callable[[_Sample], Any]] = [lambda s: (s.prompt, s.reference),
                                            lambda s: s.prompt]
    for key in keys:
        taken = set(matched.values())
        left_b: dict[Any, deque[Any]] = {}
        for j, sample in b.items():
            if j not in taken and sample.prompt is not None:
                left_b.setdefault(key(sample), deque()).append(j)
        for i, sample in a.items():
            if i not in matched and sample.prompt is not None and left_b.get(key(sample)):
                matched[i] = left_b[key(sample)].popleft()
    return matched


def _index_mismatch(a: dict[Any, _Sample], b: dict[Any, _Sample]) -> str | None:
    """Why rows with no prompt in common cannot be paired by index (``None``: they
    can: every index both hold has the same reference in both)."""
    common = [i for i in a if i in b]
    if not common:
        return "no prompt and no index is in both runs"
    for i in common:
        if a[i].reference != b[i].reference:
            return (f"no prompt is the same in both runs, and the references differ at "
                    f"index {i}: the rows by position are not the same samples")
    if all(a[i].reference == _NO_REFERENCE for i in common):
        return ("no prompt is the same in both runs, and without references nothing "
                "tells whether the rows by position are the same samples")
    return None


def _empty(samples: dict[Any, _Sample], side: str) -> str | None:
    return None if samples else f"{side} has no details rows (run with details dumped)"


def _digest(value: Any) -> bytes:
    """A short fingerprint of a JSON value (keys sorted), so a large dataset's prompts
    are not all held in memory."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


_NO_REFERENCE = _digest(None)
