"""Data files a lenient reader would misread: the run exits 2 naming file, line and field,
sends no request and loses nothing an earlier run stored."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness.config import load_config
from harness.errors import DatasetError
from harness.validate import Selection, validate_dataset

from .helpers import JUDGE_TEMPLATE, write_arith, write_config, write_judge_config
from .test_cli import cli, env

ARITH_CSV = "question,answer\n" + "".join(f"What is {i} + {i + 1}?,#### {2 * i + 1}\n"
                                          for i in range(5))


async def run_cli(cfg: Path, work: Path, base_url: str) -> anyio.abc.Process:
    return await anyio.run_process(
        cli("run", str(cfg), "-w", str(work), "-q", "--model-base-url", base_url,
            "--model", "fake-model"), env=env(), check=False)


def with_value(data: Path, line: int, column: str, value: Any) -> Path:
    """Set ``column`` of 1-based ``line`` to ``value``, written as ``json.dumps`` writes it
    (a float NaN as the bare token NaN, as pandas' missing values reach JSON)."""
    rows = [json.loads(text) for text in data.read_text().splitlines()]
    rows[line - 1][column] = value
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return data


def stored_predictions(work: Path) -> int:
    con = sqlite3.connect(work / "harness.db")
    try:
        return con.execute("SELECT count(*) FROM predictions").fetchone()[0]
    finally:
        con.close()


async def test_csv_stray_quote_exits_2_and_keeps_the_stored_run(server, tmp_path):
    # Read leniently, the quote opened on line 3 swallowed lines 4 and 5: five records
    # became three samples, exit 0.
    data = tmp_path / "a.csv"
    data.write_text(ARITH_CSV)
    cfg = write_config(tmp_path / "cfg.py", data)
    assert (await run_cli(cfg, tmp_path / "w", server.base_url)).returncode == 0
    before = server.stats.total
    lines = ARITH_CSV.splitlines(keepends=True)
    lines[2] = '"' + lines[2]
    lines[4] = '"' + lines[4].replace(",", '",', 1)
    data.write_text("".join(lines))
    result = await run_cli(cfg, tmp_path / "w", server.base_url)
    assert result.returncode == 2 and b"Traceback" not in result.stderr
    assert (b"a.csv:3 field 'question': malformed CSV: the quote that opens this field "
            b"closes on line 5") in result.stderr
    assert server.stats.total == before
    assert stored_predictions(tmp_path / "w") == 5


async def test_csv_field_over_csv_default_limit_runs(server, tmp_path):
    # It was refused: "malformed CSV: field larger than field limit (131072)", exit 2.
    data = tmp_path / "a.csv"
    long = "What is 1 + 2? " + "Think it over. " * 10_000
    data.write_text(ARITH_CSV + f'"{long}",#### 3\n')
    result = await run_cli(write_config(tmp_path / "cfg.py", data), tmp_path / "w",
                           server.base_url)
    assert result.returncode == 0, result.stderr.decode()
    assert stored_predictions(tmp_path / "w") == 6


@pytest.mark.parametrize("value, shown", [
    (float("nan"), b"NaN"), (float("inf"), b"Infinity"), (float("-inf"), b"-Infinity")])
async def test_a_reference_that_is_not_a_number_exits_2_as_null_does(server, tmp_path, value,
                                                                      shown):
    # NaN was scored as an ordinary wrong answer (exit 0) while null is refused. (A
    # dataset_postprocessor such as gsm8k's finds no reference in it: this one has none.)
    data = with_value(write_arith(tmp_path / "a.jsonl", 4), 3, "answer", value)
    assert shown in data.read_bytes()
    result = await run_cli(write_config(tmp_path / "cfg.py", data, ref_pp=None),
                           tmp_path / "w", server.base_url)
    assert result.returncode == 2, result.stdout.decode()
    assert b"a.jsonl:3 field 'answer': the reference is " + shown + b", not a number" \
        in result.stderr
    assert server.stats.total == 0


def test_skip_missing_reference_leaves_a_nan_reference_out(tmp_path):
    data = with_value(write_arith(tmp_path / "a.jsonl", 4), 2, "answer", float("nan"))
    cfg = write_config(tmp_path / "cfg.py", data, ref_pp=None)
    cfg.write_text(cfg.read_text().replace("output_column='answer'",
                                           "output_column='answer', skip_missing_reference=True"))
    assert validate_dataset(load_config(cfg).datasets[0]) == Selection(rows=3, skipped=1)


async def test_nan_in_a_prompt_field_exits_2(server, tmp_path):
    # The prompt would have shown the model the text 'nan'.
    data = with_value(write_arith(tmp_path / "a.jsonl", 4), 2, "question", float("nan"))
    result = await run_cli(write_config(tmp_path / "cfg.py", data), tmp_path / "w",
                           server.base_url)
    assert result.returncode == 2, result.stdout.decode()
    assert b"a.jsonl:2 field 'question': NaN, not a number" in result.stderr
    assert server.stats.total == 0


def test_nan_in_a_column_only_the_judge_shows_is_refused(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 3)
    rows = [{**json.loads(text), "topic": "sums"} for text in data.read_text().splitlines()]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with_value(data, 3, "topic", float("nan"))
    cfg = write_judge_config(tmp_path / "cfg.py", data, "http://127.0.0.1:9/v1",
                             template="Topic: {topic}\n" + JUDGE_TEMPLATE)
    with pytest.raises(DatasetError, match=r"a\.jsonl:3 field 'topic': NaN, not a number"):
        validate_dataset(load_config(cfg).datasets[0])
