"""A null or empty reference is bad data: exit 2 before any request, naming file, line
and field; ``reader_cfg`` ``skip_missing_reference=True`` leaves such rows out instead."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness.config import load_config
from harness.validate import Selection, validate_dataset

from .helpers import expected_correct, model_cfg, write_arith, write_config
from .test_cli import cli, env

SKIP = "output_column='answer', skip_missing_reference=True"


def with_reference(data: Path, line: int, value: Any, *, drop: bool = False) -> Path:
    """Set the reference of 1-based ``line`` to ``value`` (or remove the key)."""
    rows = [json.loads(text) for text in data.read_text().splitlines()]
    if drop:
        del rows[line - 1]["answer"]
    else:
        rows[line - 1]["answer"] = value
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return data


def config(tmp_path: Path, data: Path, base_url: str, *, skip: bool = False) -> Path:
    cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(base_url)])
    if skip:
        cfg.write_text(cfg.read_text().replace("output_column='answer'", SKIP))
    return cfg


async def run(cfg: Path, work: Path) -> Any:
    return await anyio.run_process(cli("run", str(cfg), "-w", str(work), "-q"), env=env(),
                                   check=False)


@pytest.mark.parametrize("value", [None, "", "   ", []], ids=["null", "empty", "blank", "[]"])
async def test_missing_reference_exits_2_naming_file_line_and_field(server, tmp_path, value):
    data = with_reference(write_arith(tmp_path / "a.jsonl", 6), 3, value)
    result = await run(config(tmp_path, data, server.base_url), tmp_path / "w")
    assert result.returncode == 2, result.stdout.decode()
    assert b"a.jsonl:3 field 'answer': the reference is empty" in result.stderr
    assert server.stats.total == 0


async def test_skip_missing_reference_leaves_the_rows_out(server, tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 8)
    with_reference(with_reference(data, 2, None), 5, "")
    result = await run(config(tmp_path, data, server.base_url, skip=True), tmp_path / "w")
    assert result.returncode == 0, result.stderr.decode()
    assert server.stats.total == 6
    saved = json.loads((tmp_path / "w" / "results" / "fake" / "arith.json").read_text())
    kept = [a for a in range(8) if a not in (1, 4)]
    assert saved["total"] == 6
    assert saved["correct"] == sum(expected_correct(1, start=a) for a in kept)


async def test_skipped_rows_keep_the_others_original_index(server, tmp_path):
    data = with_reference(write_arith(tmp_path / "a.jsonl", 5), 2, None)
    result = await run(config(tmp_path, data, server.base_url, skip=True), tmp_path / "w")
    assert result.returncode == 0, result.stderr.decode()
    details = (tmp_path / "w" / "details" / "fake" / "arith.jsonl").read_text().splitlines()
    assert [json.loads(line)["index"] for line in details] == [0, 2, 3, 4]


async def test_skip_also_covers_a_row_without_the_column(server, tmp_path):
    data = with_reference(write_arith(tmp_path / "a.jsonl", 4), 4, None, drop=True)
    result = await run(config(tmp_path, data, server.base_url, skip=True), tmp_path / "w")
    assert result.returncode == 0, result.stderr.decode()
    assert server.stats.total == 3


async def test_every_row_skipped_exits_2(server, tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 2)
    with_reference(with_reference(data, 1, None), 2, [])
    result = await run(config(tmp_path, data, server.base_url, skip=True), tmp_path / "w")
    assert result.returncode == 2
    assert b"all 2 selected rows lack a reference in 'answer'" in result.stderr
    assert server.stats.total == 0


def test_validation_counts_the_skipped_rows_and_a_zero_is_a_reference(tmp_path):
    data = with_reference(with_reference(write_arith(tmp_path / "a.jsonl", 5), 4, "  "), 1, 0)
    cfg = config(tmp_path, data, "http://127.0.0.1:9/v1", skip=True)
    assert validate_dataset(load_config(cfg).datasets[0]) == Selection(rows=4, skipped=1)


async def test_a_reference_the_postprocessor_cannot_read_is_missing_too(server, tmp_path):
    # gsm8k_dataset_postprocess finds no number in "N/A": scored against '', every reply
    # to it would count as wrong.
    data = with_reference(write_arith(tmp_path / "a.jsonl", 4), 2, "N/A")
    result = await run(config(tmp_path, data, server.base_url), tmp_path / "w")
    assert result.returncode == 2
    assert b"a.jsonl:2 field 'answer': the dataset_postprocessor finds no reference" \
        in result.stderr
    assert server.stats.total == 0
    result = await run(config(tmp_path, data, server.base_url, skip=True), tmp_path / "w")
    assert result.returncode == 0, result.stderr.decode()
    assert server.stats.total == 3
