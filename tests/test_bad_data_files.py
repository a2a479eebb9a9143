"""Data files a lenient reader would misread: the run exits 2 naming file, line and field,
sends no request and loses nothing an earlier run stored."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio

from .helpers import write_config
from .test_cli import cli, env

ARITH_CSV = "question,answer\n" + "".join(f"What is {i} + {i + 1}?,#### {2 * i + 1}\n"
                                          for i in range(5))


async def run_cli(cfg: Path, work: Path, base_url: str) -> anyio.abc.Process:
    return await anyio.run_process(
        cli("run", str(cfg), "-w", str(work), "-q", "--model-base-url", base_url,
            "--model", "fake-model"), env=env(), check=False)


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
