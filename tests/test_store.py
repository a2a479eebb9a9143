"""The SQLite store: upserts, version check, work-directory lock, WAL durability."""

from __future__ import annotations

import json
import sqlite3

import pytest

from harness.errors import SchemaVersionError, WorkDirLockedError
from harness.records import Completion, Sample
from harness.store import Store


def sample(key: str = "k1") -> Sample:
    return Sample("ds", "m", 0, 0, {"q": 1}, "ref", ({"role": "user", "content": "q"},), key)


async def test_written_prediction_is_found_by_key(tmp_path):
    async with Store(tmp_path) as store:
        await store.write_completions([Completion(sample(), "ok", "reply", "stop")])
        found = await store.lookup_predictions(["k1", "absent"])
    assert list(found) == ["k1"] and found["k1"].text == "reply"


async def test_failed_prediction_is_not_served_as_stored(tmp_path):
    async with Store(tmp_path) as store:
        await store.write_completions([Completion(sample(), "error", error="HTTP 500")])
        assert await store.lookup_predictions(["k1"]) == {}


async def test_an_error_never_overwrites_a_stored_success(tmp_path):
    async with Store(tmp_path) as store:
        await store.write_completions([Completion(sample(), "ok", "reply")])
        await store.write_completions([Completion(sample(), "error", error="late failure")])
        assert (await store.lookup_predictions(["k1"]))["k1"].text == "reply"


async def test_success_replaces_an_earlier_error(tmp_path):
    async with Store(tmp_path) as store:
        await store.write_completions([Completion(sample(), "error", error="x", attempts=3)])
        await store.write_completions([Completion(sample(), "ok", "reply", attempts=1)])
        assert (await store.lookup_predictions(["k1"]))["k1"].text == "reply"
    con = sqlite3.connect(tmp_path / "harness.db")
    assert con.execute("SELECT attempts FROM predictions").fetchone() == (4,)
    con.close()


async def test_store_uses_wal_and_passes_integrity_check(tmp_path):
    async with Store(tmp_path) as store:
        await store.write_completions([Completion(sample(f"k{i}"), "ok", "r") for i in range(50)])
    con = sqlite3.connect(tmp_path / "harness.db")
    assert con.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    con.close()


async def test_incompatible_schema_version_is_refused(tmp_path):
    async with Store(tmp_path):
        pass
    con = sqlite3.connect(tmp_path / "harness.db")
    con.execute("UPDATE meta SET value='999' WHERE name='schema_version'")
    con.commit()
    con.close()
    with pytest.raises(SchemaVersionError, match="999"):
        async with Store(tmp_path):
            pass


async def test_second_store_on_same_work_dir_is_refused(tmp_path):
    async with Store(tmp_path):
        with pytest.raises(WorkDirLockedError, match="another harness process"):
            async with Store(tmp_path):
                pass
    async with Store(tmp_path):  # released on exit
        pass


def test_a_details_line_is_one_line_whatever_the_model_wrote():
    from harness.results import details_line

    text = "a\u2028b\u2029c\r\nd\x00e"
    line = details_line({"prediction": text})
    # Readers split details files with str.splitlines(), which breaks at U+2028/U+2029.
    assert len(line.splitlines()) == 1
    assert json.loads(line)["prediction"] == text
