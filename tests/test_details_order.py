"""The details file is written in (index, replica) order, whatever order rows arrive in."""

from __future__ import annotations

import json

from harness.records import SampleResult
from harness.results import Accumulator


def _result(index: int, replica: int = 0) -> SampleResult:
    return SampleResult("d", "m", index, replica, "ok", ({"role": "user", "content": "q"},),
                        f"reply {index}", str(index), str(index), True)


def _write(tmp_path, order):
    acc = Accumulator("m", "d", "all", details_path=tmp_path / "details" / "d.jsonl")
    acc.open()
    for index, replica in order:
        acc.add(_result(index, replica))
    acc.close()
    lines = (tmp_path / "details" / "d.jsonl").read_text().splitlines()
    return [(row["index"], row["replica"]) for row in map(json.loads, lines)]


def test_rows_that_arrive_out_of_order_are_sorted(tmp_path):
    order = [(2, 0), (0, 1), (1, 0), (0, 0)]
    assert _write(tmp_path, order) == sorted(order)
    assert sorted(p.name for p in (tmp_path / "details").iterdir()) == ["d.jsonl"]


def test_rows_that_arrive_in_order_are_kept_as_written(tmp_path):
    order = [(0, 0), (0, 1), (1, 0), (3, 0)]
    assert _write(tmp_path, order) == order
    assert sorted(p.name for p in (tmp_path / "details").iterdir()) == ["d.jsonl"]


def test_a_repeated_sample_is_kept_twice_in_order(tmp_path):
    order = [(0, 0), (1, 0), (1, 0), (2, 0)]
    assert _write(tmp_path, order) == order
