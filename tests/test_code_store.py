"""The executions table: stored by key, sandbox errors never stored, and a store of the
previous schema gains the table when it opens."""

from __future__ import annotations

import sqlite3

from harness.sandbox import Execution
from harness.store import SCHEMA_VERSION, Store


async def test_an_execution_is_stored_and_read_back_by_key(tmp_path):
    run = Execution("failed", 1, "out", "Traceback …\nAssertionError", "exit status 1", 0.2)
    async with Store(tmp_path) as store:
        await store.write_execution("k1", run)
        assert await store.lookup_execution("k1") == run
        assert await store.lookup_execution("other") is None


async def test_a_sandbox_error_is_not_stored_so_the_next_run_retries_it(tmp_path):
    async with Store(tmp_path) as store:
        await store.write_execution("k", Execution("sandbox_error", 1, "", "bwrap: …"))
        assert await store.lookup_execution("k") is None


async def test_a_schema_2_store_gains_the_executions_table(tmp_path):
    async with Store(tmp_path):
        pass
    con = sqlite3.connect(tmp_path / "harness.db")
    con.execute("DROP TABLE executions")
    con.execute("ALTER TABLE verdicts DROP COLUMN reasks")  # added by schema 6
    con.execute("UPDATE meta SET value = '2' WHERE name = 'schema_version'")
    con.commit()
    con.close()
    async with Store(tmp_path) as store:
        await store.write_execution("k", Execution("passed", 0, "", ""))
        assert (await store.lookup_execution("k")).outcome == "passed"
    con = sqlite3.connect(tmp_path / "harness.db")
    assert con.execute("SELECT value FROM meta WHERE name='schema_version'").fetchone() == (
        str(SCHEMA_VERSION),)
    con.close()
