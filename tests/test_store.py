"""The SQLite store: upserts, version check, work-directory lock, WAL durability."""

from __future__ import annotations

import json
import sqlite3

import pytest

import harness
from harness.errors import SchemaVersionError, StoreError, WorkDirLockedError
from harness.records import Completion, Sample
from harness.store import Store

from .helpers import model_cfg, write_arith


def sample(key: str = "k1") -> Sample:
    return Sample("ds", "m", 0, 0, {"q": 1}, "ref", ({"role": "user", "content": "q"},), key)


async def test_written_prediction_is_found_by_key(tmp_path):
    async with Store(tmp_path) as store:
        await store.write_completions([Completion(sample(), "ok", "reply", "stop")])
        found = await store.lookup_predictions(["k1", "absent"])
    assert list(found) == ["k1"] and found["k1"].text == "reply"


async def test_lookups_never_wait_for_the_writer(tmp_path):
    """Lookups read on the event loop's thread while the store's thread writes: a lookup
    in the middle of a write transaction answers at once (a reader blocked on the
    writer's lock would wait out the busy timeout, then fail) with what is committed,
    and sees the rest once it is."""
    async with Store(tmp_path) as store:
        await store.write_completions([Completion(sample(), "ok", "committed")])
        await store.conn.execute("BEGIN IMMEDIATE")
        await store.conn.execute(
            "INSERT INTO predictions (key, model, dataset, idx, replica, status, text, "
            "attempts, updated) VALUES ('k2', 'm', 'ds', 1, 0, 'ok', 'pending', 1, 0)")
        found = await store.lookup_predictions(["k1", "k2"])
        assert {k: p.text for k, p in found.items()} == {"k1": "committed"}
        await store.conn.execute("COMMIT")
        found = await store.lookup_predictions(["k1", "k2"])
        assert {k: p.text for k, p in found.items()} == {"k1": "committed", "k2": "pending"}


async def test_a_closed_store_refuses_lookups(tmp_path):
    store = Store(tmp_path)
    async with store:
        pass
    with pytest.raises(StoreError, match="not open"):
        await store.lookup_predictions(["k1"])


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


def _strict(constant: str) -> None:
    raise ValueError(f"{constant} is not JSON")


async def test_a_details_file_stays_json_when_a_postprocessor_returns_nan(server, tmp_path):
    # A user's postprocessor returning float('nan') wrote a bare NaN token, which strict
    # JSON readers (jq, JavaScript, most languages' parsers) refuse.
    data = write_arith(tmp_path / "a.jsonl", 4)
    cfg = tmp_path / "cfg.py"
    cfg.write_text(
        "from harness import CustomDataset, PromptTemplate, GenInferencer, AccEvaluator\n"
        "def pp(text):\n    return float('nan') if 'add 1 and 2' in text else text\n"
        f"datasets = [dict(abbr='arith', type=CustomDataset, path={str(data)!r},\n"
        "    reader_cfg=dict(input_columns=['question'], output_column='answer'),\n"
        "    infer_cfg=dict(prompt_template=dict(type=PromptTemplate, template='{question}'),\n"
        "                   inferencer=dict(type=GenInferencer, max_out_len=16)),\n"
        "    eval_cfg=dict(evaluator=dict(type=AccEvaluator), pred_postprocessor=dict(type=pp)))]\n"
        f"models = [{model_cfg(server.base_url)!r}]\n")
    await harness.evaluate(cfg, work_dir=tmp_path / "w")
    lines = (tmp_path / "w/details/fake/arith.jsonl").read_text().splitlines()
    rows = [json.loads(line, parse_constant=_strict) for line in lines]
    assert len(rows) == 4 and any(r.get("pred") == "nan" for r in rows)


def damage_a_tree_page(db) -> str:
    """Zero bytes in one b-tree page after another until ``quick_check`` reports a
    problem as its answer (not as an error): the damage only a full read finds."""
    data = db.read_bytes()
    for page in range(3, len(data) // 4096):
        damaged = bytearray(data)
        damaged[(page - 1) * 4096 + 200:(page - 1) * 4096 + 250] = bytes(50)
        db.write_bytes(damaged)
        con = sqlite3.connect(db)
        try:
            answer = con.execute("PRAGMA quick_check(1)").fetchone()[0]
        except sqlite3.DatabaseError:
            answer = "ok"  # an error, not an answer: try the next page
        finally:
            con.close()
        if answer != "ok":
            return answer
    raise AssertionError("no page whose damage quick_check reports")


@pytest.mark.parametrize("early", [False, True], ids=["checked-on-open", "checked-ahead"])
async def test_a_store_damaged_inside_a_page_is_refused_with_what_is_wrong(tmp_path, early):
    from harness.errors import StoreCorruptError
    from harness.store import IntactCheck

    async with Store(tmp_path) as store:
        await store.write_completions([Completion(sample(f"k{i:04d}"), "ok", "reply " * 20)
                                       for i in range(2000)])
    problem = damage_a_tree_page(tmp_path / "harness.db")
    before = (tmp_path / "harness.db").read_bytes()
    intact = IntactCheck(tmp_path) if early else None
    assert intact is None or intact.started
    with pytest.raises(StoreCorruptError) as raised:
        async with Store(tmp_path, intact):
            pass
    assert str(tmp_path / "harness.db") in str(raised.value)
    assert problem.splitlines()[-1] in str(raised.value)
    assert (tmp_path / "harness.db").read_bytes() == before


async def test_a_store_made_after_the_check_ahead_is_checked_when_it_opens(tmp_path):
    """A check started before the store existed read nothing: the store that is there
    when the run opens it is checked then, and a damaged one is refused."""
    from harness.errors import StoreCorruptError
    from harness.store import IntactCheck

    intact = IntactCheck(tmp_path)  # nothing to read yet
    async with Store(tmp_path) as store:
        await store.write_completions([Completion(sample(f"k{i:04d}"), "ok", "reply " * 20)
                                       for i in range(2000)])
    problem = damage_a_tree_page(tmp_path / "harness.db")
    with pytest.raises(StoreCorruptError) as raised:
        async with Store(tmp_path, intact):
            pass
    assert problem.splitlines()[-1] in str(raised.value)


async def test_a_cancelled_check_ahead_is_never_taken_for_an_intact_store(tmp_path):
    """A check cancelled before it finished (a run that stopped before its store
    opened) says nothing about the file: a store given it checks itself, and refuses
    a damaged one."""
    from harness.errors import StoreCorruptError
    from harness.store import IntactCheck

    async with Store(tmp_path) as store:
        await store.write_completions([Completion(sample(f"k{i:04d}"), "ok", "reply " * 20)
                                       for i in range(2000)])
    problem = damage_a_tree_page(tmp_path / "harness.db")
    intact = IntactCheck(tmp_path)
    intact.cancel()
    with pytest.raises(StoreCorruptError) as raised:
        async with Store(tmp_path, intact):
            pass
    assert problem.splitlines()[-1] in str(raised.value)


async def test_a_check_ahead_of_another_directory_is_refused(tmp_path):
    from harness.store import IntactCheck

    with pytest.raises(ValueError, match="intact check"):
        Store(tmp_path / "a", IntactCheck(tmp_path / "b"))


async def test_a_batch_written_many_rows_per_statement_keeps_every_row_exactly(tmp_path,
                                                                              monkeypatch):
    """A batch is bound many rows per statement (``Store._upsert``): each row keeps its
    values exactly (NUL, non-ASCII, None, large integers, floats), and rows of one key
    in the same batch upsert in order, as one statement per row would (an error never
    overwrites a success; a success replaces an error, their attempts added up), across
    statement boundaries too."""
    import harness.store as store_module
    from harness.records import OutcomeRow, VerdictRecord

    monkeypatch.setattr(store_module, "_rows_per_statement", lambda width: 7)
    texts = ["plain", "nul\x00inside", "ünï 😀 中文", "", "quote\"'\\\n\t", None]
    batch: list = []
    for i in range(100):
        text = texts[i % len(texts)]
        status = "error" if text is None else "ok"
        batch.append(Completion(sample(f"p{i:03d}"), status, text, "stop" if text else None,
                                "boom" if text is None else None, prompt_tokens=2**40 + i,
                                completion_tokens=i, attempts=1, reasoning=text))
        batch.append(OutcomeRow(f"o{i:03d}", f'{{"n": {i}, "t": "{i}é"}}',
                                None if i % 2 else f"v{i:03d}"))
        batch.append(VerdictRecord(f"v{i:03d}", "j", "m", "ds", i, 0, "ok", "A", text,
                                   probability=i / 7, requests=1))
    # The same keys again, later in the batch: an error after a success changes
    # nothing; a success after an error replaces it.
    batch.append(Completion(sample("p000"), "error", error="late", attempts=2))
    batch.append(Completion(sample("p005"), "ok", "recovered", "stop", attempts=3))
    async with Store(tmp_path) as store:
        await store.write_completions(batch)
    con = sqlite3.connect(tmp_path / "harness.db")
    predictions = {row[0]: row[1:] for row in con.execute(
        "SELECT key, status, text, finish_reason, error, prompt_tokens, completion_tokens, "
        "attempts, reasoning FROM predictions")}
    outcomes = dict(con.execute("SELECT key, outcome || '|' || ifnull(verdict, '-') "
                                "FROM outcomes"))
    verdicts = {row[0]: row[1:] for row in con.execute(
        "SELECT key, idx, reply, probability, requests FROM verdicts")}
    con.close()
    assert len(predictions) == len(outcomes) == len(verdicts) == 100
    for i in range(100):
        text = texts[i % len(texts)]
        if i == 5:  # error, then "recovered" in the same batch
            expected = ("ok", "recovered", "stop", None, 0, 0, 4, None)
        else:
            expected = ("error" if text is None else "ok", text, "stop" if text else None,
                        "boom" if text is None else None, 2**40 + i, i, 1, text)
        assert predictions[f"p{i:03d}"] == expected, i
        assert outcomes[f"o{i:03d}"] == f'{{"n": {i}, "t": "{i}é"}}|' + (
            "-" if i % 2 else f"v{i:03d}")
        assert verdicts[f"v{i:03d}"] == (i, text, i / 7, 1)


async def test_a_batch_uses_few_statement_shapes(tmp_path, monkeypatch):
    """Full statements, then the rest in powers of two: a prepared statement of many
    rows takes memory, and a cache of one per batch size met would grow with the run."""
    import harness.store as store_module

    monkeypatch.setattr(store_module, "_rows_per_statement", lambda width: 64)
    sizes: list[int] = []
    real = store_module._statement

    def statement(template: str, rows: int) -> str:
        sizes.append(rows)
        return real(template, rows)

    monkeypatch.setattr(store_module, "_statement", statement)
    async with Store(tmp_path) as store:
        for n in (1, 1000, 77):
            sizes.clear()
            await store.write_completions(
                [Completion(sample(f"n{n}-{i}"), "ok", "r") for i in range(n)])
            assert sum(sizes) == n
            assert sizes == sorted(sizes, reverse=True)
            assert all(s == 64 or s & (s - 1) == 0 for s in sizes), sizes
            assert len(sizes) <= n // 64 + 7  # not one statement per row
        assert len(await store.lookup_predictions([f"n1000-{i}" for i in range(1000)])) == 1000
