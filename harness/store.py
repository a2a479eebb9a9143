"""The SQLite store of a work directory: every prediction and verdict, committed as
it arrives, and the final outcome of every scored sample (``harness.outcomes``).

One ``Store`` owns two connections: an aiosqlite one, whose thread does every write, and
a reader on the event loop's own thread for every query once the store is open. Reading
from the writer's thread cost more than the queries: ``sqlite3`` lets go of the GIL around
each row it steps to, so a lookup handed the GIL back and forth with a busy event loop once
per row, and a stored rerun waited on its lookups (``bench/README.md``, "Lookups on the
event loop's thread"). A read blocks the loop while it runs, so every query stays one
indexed lookup of a batch, or runs before the pipeline starts. In WAL mode a reader
never waits for the writer and sees what it has committed (not a batch still being
written). WAL with ``synchronous=NORMAL`` means a committed row survives the process
being killed (SIGKILL) at any point; at most the requests in flight at that moment are
lost. A lock on the work directory itself keeps a second process off it. API keys never
reach the store: rows hold keys (hashes), texts and statuses only.

A work directory that cannot be used (a file, not writable, on a full disk) or a store
that is damaged is a ``StoreError`` naming the path and the cause, raised when the store
opens, before any request; a disk that fills during a run stops it with the same kind of
message, and every transaction committed before stays committed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import json
import os
import sqlite3
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiosqlite

from .errors import (
    SchemaVersionError,
    StoreCorruptError,
    StoreError,
    WorkDirError,
    WorkDirLockedError,
)
from .keys import canonical_json
from .records import OutcomeRow, StoreWrite, VerdictRecord

if TYPE_CHECKING:
    from .sandbox import Execution

SCHEMA_VERSION = 6
DB_NAME = "harness.db"

# A rowid table, so rows lie in the order they were written, about the order a rerun
# looks them up in: a batch's rows share pages. In a WITHOUT ROWID table (schema 4) they
# lie in the order of their keys, hashes, so a batch's rows are spread over the table.
_OUTCOMES_TABLE = """CREATE TABLE {name} (
    key TEXT PRIMARY KEY,
    outcome TEXT NOT NULL,
    verdict TEXT,
    updated REAL NOT NULL
);"""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS predictions (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    dataset TEXT NOT NULL,
    idx INTEGER NOT NULL,
    replica INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'error')),
    text TEXT,
    finish_reason TEXT,
    error TEXT,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    updated REAL NOT NULL,
    reasoning TEXT
);
CREATE TABLE IF NOT EXISTS models (
    abbr TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS verdicts (
    key TEXT PRIMARY KEY,
    judge TEXT NOT NULL,
    model TEXT NOT NULL,
    dataset TEXT NOT NULL,
    idx INTEGER NOT NULL,
    replica INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'unparsed', 'error')),
    verdict TEXT,
    reply TEXT,
    probability REAL,
    error TEXT,
    requests INTEGER NOT NULL DEFAULT 0,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    updated REAL NOT NULL,
    reasks INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS executions (
    key TEXT PRIMARY KEY,
    outcome TEXT NOT NULL CHECK (outcome IN ('passed', 'failed', 'timeout')),
    exit_code INTEGER,
    stdout TEXT NOT NULL,
    stderr TEXT NOT NULL,
    reason TEXT,
    duration REAL NOT NULL,
    updated REAL NOT NULL
);
""" + _OUTCOMES_TABLE.format(name="IF NOT EXISTS outcomes")

# A verdict that was paid for (ok or unparsed after its re-asks) is final; an error row
# only records the failure and is replaced by the next attempt. An unparsed one is asked
# again only by a judge allowed more re-asks (``JudgeRunner.serves``), whose answer or
# longer try replaces it.
_UPSERT_VERDICT = """
INSERT INTO verdicts (key, judge, model, dataset, idx, replica, status, verdict, reply,
                      probability, error, requests, prompt_tokens, completion_tokens, updated,
                      reasks)
VALUES {rows}
ON CONFLICT(key) DO UPDATE SET
    status = excluded.status, verdict = excluded.verdict, reply = excluded.reply,
    probability = excluded.probability, error = excluded.error,
    requests = verdicts.requests + excluded.requests,
    prompt_tokens = verdicts.prompt_tokens + excluded.prompt_tokens,
    completion_tokens = verdicts.completion_tokens + excluded.completion_tokens,
    updated = excluded.updated, reasks = excluded.reasks
WHERE verdicts.status = 'error' OR (verdicts.status = 'unparsed' AND (
    excluded.status = 'ok' OR (excluded.status = 'unparsed'
                               AND excluded.reasks > verdicts.reasks)))
"""

# An error never overwrites a stored success: a later failed retry of a sample that
# another run already answered must not lose the answer.
_UPSERT_PREDICTION = """
INSERT INTO predictions (key, model, dataset, idx, replica, status, text, finish_reason,
                         error, prompt_tokens, completion_tokens, attempts, updated,
                         reasoning)
VALUES {rows}
ON CONFLICT(key) DO UPDATE SET
    status = excluded.status, text = excluded.text, finish_reason = excluded.finish_reason,
    error = excluded.error, reasoning = excluded.reasoning,
    prompt_tokens = excluded.prompt_tokens,
    completion_tokens = excluded.completion_tokens,
    attempts = predictions.attempts + excluded.attempts, updated = excluded.updated
WHERE predictions.status != 'ok' OR excluded.status = 'ok'
"""


# Schema 1 stored an empty reply as the answer after one attempt; schema 2 stores one
# only once its retries are spent. Those rows are asked again rather than trusted.
_MIGRATE_1_TO_2 = (
    "ALTER TABLE predictions ADD COLUMN reasoning TEXT",
    "UPDATE predictions SET status = 'error', error = 'empty reply stored by an earlier "
    "version without retries; asked again' "
    "WHERE status = 'ok' AND trim(text, char(32, 9, 10, 13)) = ''",
)


# Schema 3 adds the executions table (created by _SCHEMA); nothing else changes.
_MIGRATE_2_TO_3: tuple[str, ...] = ()

# Schema 4 adds the outcomes table (created by _SCHEMA); nothing else changes. Outcomes
# are derived data: a migrated store starts with none and re-scores once.
_MIGRATE_3_TO_4: tuple[str, ...] = ()

# Schema 5 stores outcomes in a rowid table (see _OUTCOMES_TABLE), their rows copied in
# the order they were written.
_MIGRATE_4_TO_5 = (
    _OUTCOMES_TABLE.format(name="outcomes_v5"),
    "INSERT INTO outcomes_v5 SELECT key, outcome, verdict, updated FROM outcomes "
    "ORDER BY updated",
    "DROP TABLE outcomes",
    "ALTER TABLE outcomes_v5 RENAME TO outcomes",
)

# Schema 6 records the re-asks each verdict took. An unparsed verdict stored before
# counts as given none: a judge that allows re-asks asks it again, once.
_MIGRATE_5_TO_6 = ("ALTER TABLE verdicts ADD COLUMN reasks INTEGER NOT NULL DEFAULT 0",)

#: The migrations that bring a store of each older version to the next one.
_MIGRATIONS = {1: _MIGRATE_1_TO_2, 2: _MIGRATE_2_TO_3, 3: _MIGRATE_3_TO_4, 4: _MIGRATE_4_TO_5,
               5: _MIGRATE_5_TO_6}

# The same inputs give the same outcome, so a second write of a key only refreshes it.
_UPSERT_OUTCOME = """
INSERT INTO outcomes (key, outcome, verdict, updated) VALUES {rows}
ON CONFLICT(key) DO UPDATE SET
    outcome = excluded.outcome, verdict = excluded.verdict, updated = excluded.updated
"""

# A judged outcome is served only with its verdict, as a verdict lookup serves it
# (final, not an error row): without one the sample is scored and judged again.
_LOOKUP_OUTCOMES = """
SELECT o.key, o.outcome, v.key, v.judge, v.model, v.dataset, v.idx, v.replica, v.status,
       v.verdict, v.reply, v.probability, v.error, v.requests, v.prompt_tokens,
       v.completion_tokens, v.reasks
FROM outcomes o LEFT JOIN verdicts v ON v.key = o.verdict AND v.status != 'error'
WHERE o.key IN ({marks}) AND (o.verdict IS NULL OR v.key IS NOT NULL)
"""


class StoredPrediction(tuple):
    """``(text, finish_reason, prompt_tokens, completion_tokens, reasoning)`` of a stored
    success."""

    __slots__ = ()

    @property
    def text(self) -> str:
        """The raw model reply."""
        return self[0]

    @property
    def finish_reason(self) -> str | None:
        """Why the model stopped (``stop``, ``length`` …)."""
        return self[1]

    @property
    def reasoning(self) -> str | None:
        """What the server sent beside the answer (``reasoning_content``)."""
        return self[4]


class IntactCheck:
    """``PRAGMA quick_check`` of a work directory's store, started at once in a thread of
    its own, so that it reads the file while the run loads and validates its datasets
    (both take about as long, and SQLite reads without holding the GIL). ``Store``
    awaits its answer when it opens (a store that did not exist yet is checked then).

    The check runs before the store's lock is taken: reading is safe beside another
    process (WAL readers see a committed snapshot), and that process's lock still stops
    this run when the store opens. A run that fails before its store opens ``cancel``s
    the check, which would otherwise read the whole file for nobody.
    """

    def __init__(self, work_dir: str | Path) -> None:
        self.path = Path(work_dir) / DB_NAME
        self._answer: str | None = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._conn: sqlite3.Connection | None = None
        self._cancelled = threading.Event()
        try:
            exists = self.path.is_file()
        except OSError:  # an unusable work directory: the store says what is wrong
            exists = False
        if exists:
            self._thread = threading.Thread(target=self._run, name="harness-quick-check",
                                            daemon=True)
            self._thread.start()

    def _run(self) -> None:
        try:
            # Not bound to this thread: ``cancel`` interrupts it from another.
            conn = self._conn = sqlite3.connect(self.path, isolation_level=None,
                                                check_same_thread=False)
            try:
                if not self._cancelled.is_set():
                    self._answer = _quick_check(conn.execute(_QUICK_CHECK).fetchone())
            finally:
                self._conn = None
                conn.close()
        except BaseException as exc:  # handed to the coroutine that awaits the answer
            self._error = exc

    def cancel(self) -> None:
        """Stop the check: no store will wait for its answer."""
        self._cancelled.set()
        conn = self._conn
        if conn is not None:
            with contextlib.suppress(sqlite3.ProgrammingError):  # closed meanwhile: done
                conn.interrupt()

    @property
    def started(self) -> bool:
        """Whether the check has an answer to wait for: not when there was no store yet
        (a new one is checked when it opens), nor once cancelled (a check stopped early
        has read only part of the file: the store checks itself)."""
        return self._thread is not None and not self._cancelled.is_set()

    async def answer(self) -> str | None:
        """What the check found wrong (``None``: nothing); a ``sqlite3.Error`` if it
        could not run."""
        if self._thread is not None and self._thread.is_alive():
            import anyio.to_thread

            await anyio.to_thread.run_sync(self._thread.join)
        if self._error is not None:
            raise self._error
        return self._answer


#: Stops at the first problem: a damaged store is refused whatever the rest holds.
_QUICK_CHECK = "PRAGMA quick_check(1)"


def _quick_check(row: Sequence[Any] | None) -> str | None:
    """The problem a ``quick_check`` row reports (``None`` for ``ok``)."""
    return None if row is not None and row[0] == "ok" else str(row and row[0])


class Store:
    """``WORK_DIR/harness.db``; use as ``async with Store(work_dir)`` (which thread runs
    what: see the module docstring).

    ``intact``: an ``IntactCheck`` of the same work directory started earlier, whose
    answer replaces the check the store would run when it opens.
    """

    def __init__(self, work_dir: str | Path, intact: IntactCheck | None = None) -> None:
        self.work_dir = Path(work_dir)
        self.path = self.work_dir / DB_NAME
        self._conn: aiosqlite.Connection | None = None
        self._reader: sqlite3.Connection | None = None
        self._lock_fd: int | None = None
        if intact is not None and intact.path != self.path:
            raise ValueError(f"the intact check is of {intact.path}, not {self.path}")
        self._intact = intact

    async def __aenter__(self) -> Store:
        try:
            self._acquire_lock()
        except BaseException:
            await self.aclose()
            raise
        try:
            _check_writable(self.work_dir)
            self._conn = await aiosqlite.connect(self.path, isolation_level=None)
            await self._conn.execute("PRAGMA journal_mode=WAL")
            await self._conn.execute("PRAGMA synchronous=NORMAL")
            await self._conn.execute("PRAGMA busy_timeout=10000")
            await self._check_intact()
            await self._conn.executescript(_SCHEMA)
            await self._check_version()
            self._reader = _open_reader(self.path)
        except sqlite3.Error as exc:
            await self.aclose()
            raise self._error("cannot open the store", exc) from exc
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close both connections and release the work-directory lock (even when
        cancelled)."""
        import anyio

        if self._intact is not None:
            self._intact.cancel()  # a store that failed to open never waited for it
        if self._reader is not None:
            reader, self._reader = self._reader, None
            reader.close()
        if self._conn is not None:
            conn, self._conn = self._conn, None
            with anyio.CancelScope(shield=True):
                await conn.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def _read(self, sql: str, params: Sequence[Any], doing: str) -> list[Any]:
        """The rows of one query, on the event loop's thread (see the module docstring).
        A store used from a thread other than the one that opened it is a bug of the
        caller: ``sqlite3``'s ``ProgrammingError`` says so, and is raised as it is."""
        if self._reader is None:
            raise StoreError("store is not open")
        try:
            return self._reader.execute(sql, params).fetchall()
        except sqlite3.ProgrammingError:
            raise
        except sqlite3.Error as exc:
            raise self._error(doing, exc) from exc

    @property
    def conn(self) -> aiosqlite.Connection:
        """The writer's connection, in the store's thread (raises if the store is
        closed)."""
        if self._conn is None:
            raise StoreError("store is not open")
        return self._conn

    def _acquire_lock(self) -> None:
        """Lock the work directory itself (``flock`` on a descriptor of the directory).

        Not a lock file in it: a file can be deleted while a run holds its lock, and the
        next run would then lock a new file and write the same details files. A
        directory that holds a store cannot be removed (only renamed or removed with
        everything in it, which ends the first run's work anyway).
        """
        fd = _open_work_dir(self.work_dir)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if isinstance(exc, BlockingIOError):
                raise WorkDirLockedError(
                    f"{self.work_dir}: another harness process is using this work directory; "
                    "wait for it to finish or choose another --work-dir") from None
            # flock on a directory fails on network file systems, where SQLite's WAL
            # mode does not work either.
            raise WorkDirError(f"{self.work_dir}: cannot lock the work directory "
                               f"({exc.strerror}); use one on a local disk") from exc
        self._lock_fd = fd

    def check_work_dir(self) -> None:
        """Raise ``WorkDirError`` if the work directory's path no longer leads to the
        directory this store locked: it was moved, removed or replaced (``mv w w.old;
        mkdir w``) while the run went on, and files written by path would land in a
        directory another run may hold. Called before results are written."""
        if self._lock_fd is None:
            return
        locked = os.fstat(self._lock_fd)
        try:
            now = os.stat(self.work_dir)
        except OSError:
            now = None
        if now is not None and (now.st_dev, now.st_ino) == (locked.st_dev, locked.st_ino):
            return
        try:  # Linux names where the locked directory is now
            moved = f" (it is now at {os.readlink(f'/proc/self/fd/{self._lock_fd}')})"
        except OSError:
            moved = ""
        raise WorkDirError(
            f"{self.work_dir}: the work directory was moved, removed or replaced while this "
            f"run was using it; nothing was written to what is there now. Everything received "
            f"is stored in the directory the run started in{moved}: put it back (or give "
            "--work-dir its new path) and run the same command again to write the results")

    async def _check_intact(self) -> None:
        """Refuse a damaged store before the run relies on it: a truncated copy can
        open and even answer the first queries. ``quick_check`` reads every page once
        (about 0.1 s per 100 MB); an ``IntactCheck`` given to the store has read them."""
        if self._intact is not None and self._intact.started:
            problem = await self._intact.answer()
        else:
            async with self.conn.execute(_QUICK_CHECK) as cur:
                problem = _quick_check(await cur.fetchone())
        if problem is not None:
            raise StoreCorruptError(f"{self.path}: the store is damaged ({problem}); "
                                    f"{_CORRUPT_HINT}")

    def _error(self, doing: str, exc: sqlite3.Error) -> StoreError:
        """The ``StoreError`` for a failed SQLite call: what failed, the cause, what to do."""
        code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
        if code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
            return StoreCorruptError(f"{self.path}: {doing}: the file is damaged or is not "
                                     f"a harness store ({exc}); {_CORRUPT_HINT}")
        # SQLite says "disk I/O error" when a full disk refuses its shared-memory file.
        if code == sqlite3.SQLITE_FULL or (code == sqlite3.SQLITE_IOERR
                                           and _disk_full(self.work_dir)):
            return StoreError(f"{self.path}: {doing}: {exc}; {_DISK_FULL}")
        return StoreError(f"{self.path}: {doing}: {exc}{_HINTS.get(code, '')}")

    async def _check_version(self) -> None:
        async with self.conn.execute(
                "SELECT value FROM meta WHERE name='schema_version'") as cur:
            row = await cur.fetchone()
        if row is None:
            await self.conn.execute("INSERT INTO meta VALUES ('schema_version', ?)",
                                    (str(SCHEMA_VERSION),))
            return
        version = int(row[0]) if row[0].isdigit() else None
        if version is None or not 1 <= version <= SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{self.path}: store schema version {row[0]} is not supported by this "
                f"harness (expects {SCHEMA_VERSION}); use a new --work-dir")
        for old in range(version, SCHEMA_VERSION):
            await self._migrate(_MIGRATIONS[old], old + 1)

    async def _migrate(self, statements: Sequence[str], version: int) -> None:
        """Apply ``statements`` and set the schema version, in one transaction."""
        await self.conn.execute("BEGIN")
        try:
            for statement in statements:
                await self.conn.execute(statement)
            await self.conn.execute("UPDATE meta SET value = ? WHERE name = 'schema_version'",
                                    (str(version),))
            await self.conn.execute("COMMIT")
        except BaseException:
            await self.conn.execute("ROLLBACK")
            raise

    async def record_models(self, specs: Iterable[Mapping[str, Any]]) -> None:
        """Remember the models a run predicts with (``abbr`` → what makes their keys),
        so ``--mode eval`` can re-score them without being told which they were."""
        now = time.time()
        rows = [(spec["abbr"], canonical_json(spec), now) for spec in specs]
        try:
            await self.conn.executemany(
                "INSERT INTO models VALUES (?, ?, ?) ON CONFLICT(abbr) DO UPDATE SET "
                "spec = excluded.spec, updated = excluded.updated", rows)
        except sqlite3.Error as exc:
            raise self._error("recording models failed", exc) from exc

    async def recorded_models(self) -> list[dict[str, Any]]:
        """Every model a run in this work directory predicted with (or set out to)."""
        sql = "SELECT spec FROM models ORDER BY abbr"
        return [json.loads(row[0]) for row in self._read(sql, (), "reading models failed")]

    async def stored_pairs(self, datasets: Sequence[str]) -> set[tuple[str, str]]:
        """``(model, dataset)`` pairs with at least one stored prediction, for ``datasets``."""
        sql = ("SELECT DISTINCT model, dataset FROM predictions WHERE status = 'ok' AND "
               f"dataset IN ({','.join('?' * len(datasets))})")
        return {(row[0], row[1])
                for row in self._read(sql, datasets, "reading predictions failed")}

    async def lookup_predictions(self, keys: Sequence[str]) -> dict[str, StoredPrediction]:
        """Stored successful predictions among ``keys`` (one query per call)."""
        if not keys:
            return {}
        marks = ",".join("?" * len(keys))
        sql = ("SELECT key, text, finish_reason, prompt_tokens, completion_tokens, reasoning "
               f"FROM predictions WHERE status='ok' AND key IN ({marks})")
        found = self._read(sql, keys, "reading predictions failed")
        return {row[0]: StoredPrediction(row[1:]) for row in found}

    async def any_prediction(self, keys: Sequence[str]) -> bool:
        """Whether a successful prediction is stored under any of ``keys`` (one query,
        no row read)."""
        if not keys:
            return False
        sql = ("SELECT 1 FROM predictions WHERE status='ok' AND "
               f"key IN ({','.join('?' * len(keys))}) LIMIT 1")
        return bool(self._read(sql, keys, "reading predictions failed"))

    async def lookup_verdicts(self, keys: Sequence[str]) -> dict[str, VerdictRecord]:
        """Stored final verdicts (``ok`` or ``unparsed``) among ``keys``, in one query."""
        if not keys:
            return {}
        sql = ("SELECT key, judge, model, dataset, idx, replica, status, verdict, reply, "
               "probability, error, requests, prompt_tokens, completion_tokens, reasks "
               f"FROM verdicts WHERE status != 'error' AND key IN ({','.join('?' * len(keys))})")
        return {row[0]: _cached_verdict(row)
                for row in self._read(sql, keys, "reading verdicts failed")}

    async def lookup_outcomes(self, keys: Sequence[str]
                              ) -> dict[str, tuple[str, VerdictRecord | None]]:
        """Stored outcomes among ``keys`` (one query): each one's encoded result and,
        for a judged sample, its stored verdict (``cached``); a judged outcome whose
        verdict is missing or failed is left out."""
        if not keys:
            return {}
        sql = _LOOKUP_OUTCOMES.format(marks=",".join("?" * len(keys)))
        found = self._read(sql, keys, "reading outcomes failed")
        return {row[0]: (row[1], None if row[2] is None else _cached_verdict(row[2:]))
                for row in found}

    async def lookup_execution(self, key: str) -> Execution | None:
        """The stored execution of a generated program under ``key``, if any."""
        from .sandbox import Execution

        sql = ("SELECT outcome, exit_code, stdout, stderr, reason, duration FROM executions "
               "WHERE key = ?")
        rows = self._read(sql, (key,), "reading executions failed")
        return Execution(*rows[0]) if rows else None

    async def write_execution(self, key: str, execution: Execution) -> None:
        """Commit one execution (never a ``sandbox_error``: that is retried).

        One statement, so it commits on its own, or joins a batch of
        ``write_completions`` in progress on this connection (and lookups see it when
        that batch commits: the same program met meanwhile runs again)."""
        if execution.outcome == "sandbox_error":
            return
        row = (key, execution.outcome, execution.exit_code, execution.stdout,
               execution.stderr, execution.reason, execution.duration, time.time())
        try:
            await self.conn.execute(
                "INSERT INTO executions VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(key) DO NOTHING", row)
        except sqlite3.Error as exc:
            raise self._error("writing an execution failed", exc) from exc

    async def write_completions(self, batch: Iterable[StoreWrite]) -> None:
        """Commit a batch of fresh completions, verdicts and outcomes in one transaction."""
        now = time.time()
        # Each table's rows, flattened (``_upsert`` binds them many rows per statement).
        predictions: list[Any] = []
        verdicts: list[Any] = []
        outcomes: list[Any] = []
        for item in batch:
            if isinstance(item, OutcomeRow):
                outcomes += (item.key, item.outcome, item.verdict, now)
            elif isinstance(item, VerdictRecord):
                verdicts += (item.key, item.judge, item.model, item.dataset, item.index,
                             item.replica, item.status, item.verdict, item.reply,
                             item.probability, item.error, item.requests,
                             item.prompt_tokens, item.completion_tokens, now, item.reasks)
            else:
                c = item
                predictions += (c.sample.key, c.sample.model, c.sample.dataset,
                                c.sample.index, c.sample.replica, c.status, c.text,
                                c.finish_reason, c.error, c.prompt_tokens,
                                c.completion_tokens, c.attempts, now, c.reasoning)
        if not predictions and not verdicts and not outcomes:
            return
        try:
            await self.conn.execute("BEGIN")
            try:
                await self._upsert(_UPSERT_PREDICTION, predictions)
                await self._upsert(_UPSERT_VERDICT, verdicts)
                await self._upsert(_UPSERT_OUTCOME, outcomes)
                await self.conn.execute("COMMIT")
            except BaseException:
                if self.conn.in_transaction:
                    await self.conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise self._error("writing results failed", exc) from exc

    async def _upsert(self, template: str, values: list[Any]) -> None:
        """Run ``template`` (an upsert whose ``VALUES {rows}`` takes the rows) over
        ``values``, rows of one value per column laid end to end, many rows per statement.

        ``sqlite3`` lets go of the GIL around each statement it steps, and taking it
        back from a busy event loop waits for the loop to yield it: once per row with
        ``executemany``, a convoy that slowed the loop and the writer alike at a thousand
        calls in flight; once per ``ROWS_PER_STATEMENT`` rows this way
        (``bench/README.md``, "Scale, seventh round")."""
        width = _columns(template)
        most, start, left = _rows_per_statement(width), 0, len(values) // width
        while left:
            # The rest in powers of two: a prepared statement of a thousand rows takes
            # megabytes, and its cache would keep one of each size met.
            rows = min(most, 1 << (left.bit_length() - 1))
            end = start + rows * width
            await self.conn.execute(_statement(template, rows), values[start:end])
            start, left = end, left - rows


#: Rows one write statement binds at most (fewer where SQLite allows fewer variables).
ROWS_PER_STATEMENT = 1024


@functools.cache
def _columns(template: str) -> int:
    """How many columns the ``INSERT INTO table (...)`` of ``template`` names."""
    return template.partition("(")[2].partition(")")[0].count(",") + 1


@functools.cache
def _rows_per_statement(width: int) -> int:
    """``ROWS_PER_STATEMENT``, or as many rows of ``width`` values as this SQLite binds."""
    with contextlib.closing(sqlite3.connect(":memory:")) as probe:
        variables = probe.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    return max(1, min(ROWS_PER_STATEMENT, variables // width))


@functools.cache
def _statement(template: str, rows: int) -> str:
    """``template`` with ``rows`` rows of placeholders (built once per size: a few
    powers of two, see ``Store._upsert``)."""
    row = "(" + ", ".join("?" * _columns(template)) + ")"
    return template.format(rows=", ".join([row] * rows))


_CORRUPT_HINT = ("move it away (or put back a good copy) and run again; without it the "
                 "run starts over with an empty store")

_DISK_FULL = ("the disk is full: free some space and run the same command again "
              "(everything stored so far is kept)")

#: What to do, by SQLite's primary result code.
_HINTS = {
    sqlite3.SQLITE_READONLY: "; the store or its directory is read-only: make it "
                             "writable or choose another --work-dir",
    sqlite3.SQLITE_CANTOPEN: "; check that the work directory can be written",
    sqlite3.SQLITE_IOERR: "; the disk reported an error",
}


def _disk_full(path: Path) -> bool:
    """Whether the file system of ``path`` has no block left for this process."""
    try:
        st = os.statvfs(path)
    except OSError:
        return False
    # root may write into the blocks reserved for it (f_bfree), others may not.
    return (st.f_bfree if os.geteuid() == 0 else st.f_bavail) == 0


def _open_reader(path: Path) -> sqlite3.Connection:
    """A query-only connection to the store at ``path``, for the event loop's thread."""
    reader = sqlite3.connect(path, isolation_level=None)
    try:
        reader.execute("PRAGMA query_only=ON")
        # A WAL reader is refused only while another connection recovers the file, and
        # it waits on the event loop's thread: briefly, then the run stops with the error.
        reader.execute("PRAGMA busy_timeout=200")
    except BaseException:
        reader.close()
        raise
    return reader


def _open_work_dir(path: Path) -> int:
    """Create the work directory if needed and open a descriptor of it to lock."""
    if path.exists() and not path.is_dir():
        raise WorkDirError(f"{path}: the work directory is a file, not a directory; "
                           "choose another --work-dir")
    try:
        path.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        # NotADirectoryError: a folder on the way is a file.
        why = ("a part of the path is a file" if isinstance(exc, NotADirectoryError)
               else exc.strerror)
        raise WorkDirError(f"{path}: cannot create the work directory ({why}); choose "
                           "another --work-dir") from exc


def _check_writable(path: Path) -> None:
    """Results, details and the store are written in ``path``: find out now, before any
    request, that they cannot be. (As root, permission bits do not stop a write, so the
    test is a write: one block to an unnamed temporary file, which leaves nothing
    behind.)"""
    try:
        with tempfile.TemporaryFile(dir=path) as probe:
            probe.write(bytes(4096))
            probe.flush()
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise WorkDirError(f"{path}: {_DISK_FULL}") from exc
        raise WorkDirError(f"{path}: the work directory is not writable ({exc.strerror}); "
                           "make it writable or choose another --work-dir") from exc


def _cached_verdict(row: Sequence[Any]) -> VerdictRecord:
    """A row of ``lookup_verdicts``'s columns as a stored (``cached``) verdict."""
    (key, judge, model, dataset, index, replica, status, verdict, reply, probability, error,
     requests, prompt_tokens, completion_tokens, reasks) = row
    return VerdictRecord(key, judge, model, dataset, index, replica, status, verdict, reply,
                         probability, error, requests, prompt_tokens, completion_tokens,
                         cached=True, reasks=reasks)
