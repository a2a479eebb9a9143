"""Bad values, endpoints and work directories are refused before anything runs (issue 13,
point 4): exit 2, the field (flag, config key, environment variable or file), the value
and what is allowed, no traceback, no request to the server, nothing stored touched.

Read-only and full disks are real: a read-only bind mount (EROFS stops root, which file
permissions do not) and a small tmpfs filled to the last byte. Both need root with
CAP_SYS_ADMIN, and are skipped where the test process may not mount.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import harness
from harness.errors import ConfigError, StoreError
from harness.models import ModelOverrides
from harness.records import Completion, Sample
from harness.store import Store
from harness.testing import FakeOpenAI
from harness.testing.workloads import model_and_judge, write_judge_config

from .helpers import arith_reply, count_stored, model_cfg, write_arith, write_config
from .test_cli import cli, env


async def run(cfg: Path, work: Path, *flags: str, **environ: str) -> Any:
    return await anyio.run_process(cli("run", str(cfg), "-w", str(work), "-q", *flags),
                                   env=env(**environ), check=False)


def refused(result: Any, *expected: str) -> str:
    """Check ``result`` exited 2 with every ``expected`` text and no traceback; return
    its stderr."""
    err = result.stderr.decode()
    assert result.returncode == 2, (result.returncode, err)
    assert "Traceback" not in err, err
    for text in expected:
        assert text in err, err
    return err


# Command-line numbers --------------------------------------------------------------------

BAD_FLAGS = {
    "concurrency-0": (["-c", "0"], "argument -c/--concurrency: must be positive, not 0"),
    "concurrency-negative": (["-c", "-1"], "argument -c/--concurrency: must be positive, not -1"),
    "max-attempts-0": (["--max-attempts", "0"],
                       "argument --max-attempts: must be positive, not 0"),
    "max-attempts-negative": (["--max-attempts", "-2"],
                              "argument --max-attempts: must be positive, not -2"),
    "max-attempts-text": (["--max-attempts", "two"],
                          "argument --max-attempts: must be an integer, not 'two'"),
    "timeout-0": (["--timeout", "0"], "argument --timeout: must be positive, not 0.0"),
    "timeout-negative": (["--timeout", "-1"], "argument --timeout: must be positive, not -1.0"),
    "timeout-inf": (["--timeout", "inf"], "argument --timeout: must be a finite number, not inf"),
    "limit-0": (["--limit", "0"], "argument --limit: must be positive, not 0"),
    "limit-negative": (["--limit", "-1"], "argument --limit: must be positive, not -1"),
}


@pytest.mark.parametrize("flags,message", BAD_FLAGS.values(), ids=BAD_FLAGS.keys())
async def test_a_bad_number_on_the_command_line_exits_2_before_any_request(server, tmp_path,
                                                                          flags, message):
    cfg = write_config(tmp_path / "cfg.py", write_arith(tmp_path / "a.jsonl", 4),
                       models=[model_cfg(server.base_url)])
    refused(await run(cfg, tmp_path / "w", *flags), message)
    assert server.stats.total == 0
    assert not (tmp_path / "w").exists()


@pytest.mark.parametrize("field,value", [("timeout", 0), ("timeout", -1.0),
                                         ("max_attempts", 0), ("max_attempts", -2)])
def test_model_overrides_refuse_what_the_flags_refuse(field, value):
    flag = "--" + field.replace("_", "-")
    with pytest.raises(ConfigError, match=f"field '{flag}': must be positive, not {value}"):
        ModelOverrides(**{field: value})


@pytest.mark.parametrize("option", [dict(concurrency=0), dict(concurrency=-1), dict(limit=-1)])
async def test_the_library_refuses_a_bad_concurrency_or_limit(server, tmp_path, option):
    cfg = write_config(tmp_path / "cfg.py", write_arith(tmp_path / "a.jsonl", 4),
                       models=[model_cfg(server.base_url)])
    name = next(iter(option))
    with pytest.raises(ConfigError, match=f"field '{name}': must be positive"):
        await harness.evaluate(cfg, work_dir=tmp_path / "w", **option)
    assert server.stats.total == 0


# Endpoints -------------------------------------------------------------------------------

JUDGE_FIELD = "datasets[0].eval_cfg.evaluator.llm_evaluator.judge_cfg"


def on_server(cfg: Path, data: Path, url: str) -> Path:
    """The arithmetic config with its model on the fake server."""
    return write_config(cfg, data, models=[model_cfg(url)])


def no_models(cfg: Path, data: Path, url: str) -> Path:
    """The arithmetic config without models (the endpoint comes from elsewhere)."""
    return write_config(cfg, data)


def model_at(bad_url: str) -> Callable[[Path, Path, str], Path]:
    """A config writer whose model's ``openai_api_base`` is ``bad_url``."""
    return lambda cfg, data, url: write_config(cfg, data, models=[model_cfg(bad_url)])


def judge_at(bad_url: str | None) -> Callable[[Path, Path, str], Path]:
    """A cascade config judged at ``bad_url``; ``None`` gives ``judge_cfg=dict()``,
    which reads the judge's endpoint from ``OC_JUDGE_API_BASE``."""

    def write(cfg: Path, data: Path, url: str) -> Path:
        path = write_judge_config(cfg, data, url, judge_url=bad_url)
        if bad_url is None:
            path.write_text(re.sub(r"judge_cfg=\{[^}]*\}", "judge_cfg=dict()", path.read_text()))
        return path

    return write


# (config writer, flags, environment, the field the error names, the bad value)
BAD_ENDPOINTS = {
    "model-not-a-url": (model_at("not a url"), [], {},
                        "cfg.py field 'models[0].openai_api_base'", "not a url"),
    "model-ftp": (model_at("ftp://example.com/v1"), [], {},
                  "cfg.py field 'models[0].openai_api_base'", "ftp://example.com/v1"),
    "flag": (on_server, ["--model-base-url", "not a url", "--model", "m"], {},
             "field '--model-base-url'", "not a url"),
    "flag-ftp": (on_server, ["--model-base-url", "ftp://example.com/v1", "--model", "m"], {},
                 "field '--model-base-url'", "ftp://example.com/v1"),
    "environment": (no_models, [], {"HARNESS_MODEL_BASE_URL": "localhost:8000",
                                    "HARNESS_MODEL": "m"},
                    "field '$HARNESS_MODEL_BASE_URL'", "localhost:8000"),
    "judge": (judge_at("ftp://example.com/v1"), [], {},
              f"cfg.py field '{JUDGE_FIELD}.openai_api_base'", "ftp://example.com/v1"),
    "judge-environment": (judge_at(None), [], {"OC_JUDGE_API_BASE": "not a url",
                                               "OC_JUDGE_MODEL": "judge-model"},
                          "field '$OC_JUDGE_API_BASE'", "not a url"),
}


@pytest.mark.parametrize("write,flags,environ,field,value", BAD_ENDPOINTS.values(),
                         ids=BAD_ENDPOINTS.keys())
async def test_an_endpoint_that_is_not_an_http_url_exits_2_naming_its_source(
        tmp_path, write, flags, environ, field, value):
    async with FakeOpenAI(responder=model_and_judge, models=("fake-model", "judge-model")) as srv:
        cfg = write(tmp_path / "cfg.py", write_arith(tmp_path / "a.jsonl", 4), srv.base_url)
        result = await run(cfg, tmp_path / "w", *flags, **environ)
    refused(result, f"{field}: {value!r} is not an http(s) URL with a host",
            "such as http://localhost:8000/v1")
    assert srv.stats.total == 0


# Config values fixed before this change (f3f0bf4, b0d3a29): kept from regressing -----------

def edited(old: str, new: str) -> Callable[[Path, Path, str], Path]:
    """A config writer: the arithmetic config on the server with ``old`` made ``new``."""

    def write(cfg: Path, data: Path, url: str) -> Path:
        path = write_config(cfg, data, models=[model_cfg(url)])
        assert old in path.read_text()
        path.write_text(path.read_text().replace(old, new, 1))
        return path

    return write


def judged(**judge: Any) -> Callable[[Path, Path, str], Path]:
    """A config writer: the cascade config with ``judge`` added to its ``judge_cfg``."""
    return lambda cfg, data, url: write_judge_config(cfg, data, url, judge=judge)


BAD_VALUES = {
    "dataset-without-path": (edited(", path=", ", file_name="), "datasets[0].path", "missing"),
    "model-not-a-dict": (edited("models = [", "models = ['oops', "), "models[0]",
                         "a model must be a dict, not 'oops'"),
    "judge-rpm-negative": (judged(rpm=-5), f"{JUDGE_FIELD}.rpm", "must be positive, not -5"),
    "judge-rpm-text": (judged(rpm="abc"), f"{JUDGE_FIELD}.rpm", "must be a number, not 'abc'"),
    "judge-concurrency": (judged(concurrency=-2), f"{JUDGE_FIELD}.concurrency",
                          "must be positive, not -2"),
    "judge-max_reasks": (judged(max_reasks=-1), f"{JUDGE_FIELD}.max_reasks",
                         "must be a whole number from 0 to 10, not -1"),
}


@pytest.mark.parametrize("write,field,message", BAD_VALUES.values(), ids=BAD_VALUES.keys())
async def test_a_bad_config_value_exits_2_before_any_request(tmp_path, write, field, message):
    async with FakeOpenAI(responder=model_and_judge, models=("fake-model", "judge-model")) as srv:
        cfg = write(tmp_path / "cfg.py", write_arith(tmp_path / "a.jsonl", 4), srv.base_url)
        result = await run(cfg, tmp_path / "w")
    refused(result, f"cfg.py field '{field}': {message}")
    assert srv.stats.total == 0


# Model numbers that became a default or no limit at all: (model key, field, message)
MODEL_NUMBERS = {
    "max_attempts-0": ("'max_attempts': 0", "models[0].max_attempts", "must be positive, not 0"),
    "timeout-inf": ("'timeout': float('inf')", "models[0].timeout",
                    "must be a finite number, not inf"),
    "rpm-nan": ("'rpm': float('nan')", "models[0].rpm", "must be a finite number, not nan"),
}


@pytest.mark.parametrize("key,field,message", MODEL_NUMBERS.values(), ids=MODEL_NUMBERS.keys())
async def test_a_model_number_that_means_no_limit_is_refused(server, tmp_path, key, field,
                                                             message):
    write = edited("'temperature': 0.0", f"'temperature': 0.0, {key}")
    cfg = write(tmp_path / "cfg.py", write_arith(tmp_path / "a.jsonl", 4), server.base_url)
    refused(await run(cfg, tmp_path / "w"), f"cfg.py field '{field}': {message}")
    assert server.stats.total == 0


# Work directories ------------------------------------------------------------------------

def snapshot(work: Path) -> dict[str, str]:
    """Every file under ``work`` and the sha256 of its bytes."""
    return {str(p.relative_to(work)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(work.rglob("*")) if p.is_file()}


def no_part_files(work: Path) -> bool:
    """Whether no half-written file (details ``.part``, JSON ``.tmp``) is left in ``work``."""
    return not [p for p in work.rglob("*") if p.name.endswith((".part", ".tmp"))]


@pytest.fixture
def arith_cfg(server, tmp_path) -> Path:
    """An 8-row arithmetic config on the fake server."""
    return write_config(tmp_path / "cfg.py", write_arith(tmp_path / "a.jsonl", 8),
                        models=[model_cfg(server.base_url)])


async def test_a_work_directory_that_is_a_file_exits_2(server, tmp_path, arith_cfg):
    work = tmp_path / "w"
    work.write_text("my notes\n")
    refused(await run(arith_cfg, work), f"{work}: the work directory is a file, not a directory")
    assert server.stats.total == 0 and work.read_text() == "my notes\n"


async def test_a_work_directory_below_a_file_exits_2(server, tmp_path, arith_cfg):
    (tmp_path / "f").write_text("")
    refused(await run(arith_cfg, tmp_path / "f" / "w"),
            "cannot create the work directory (a part of the path is a file)")
    assert server.stats.total == 0


@pytest.fixture
def mount() -> Iterator[Callable[..., None]]:
    """``mount(*args, target)``: mount for this test only (unmounted after it); skips
    where this process may not mount."""
    mounted: list[Path] = []

    def do(*args: Any) -> None:
        result = subprocess.run(["mount", *map(str, args)], capture_output=True, text=True,
                                check=False)
        if result.returncode:
            pytest.skip(f"cannot mount here ({result.stderr.strip()})")
        if "remount" not in " ".join(map(str, args)):
            mounted.append(Path(args[-1]))

    yield do
    for target in reversed(mounted):
        subprocess.run(["umount", "-l", str(target)], check=False)


async def test_a_read_only_work_directory_exits_2_and_keeps_what_is_stored(
        server, tmp_path, arith_cfg, mount):
    work = tmp_path / "w"
    assert (await run(arith_cfg, work, "--limit", "4")).returncode == 0
    before = snapshot(work)
    mount("--bind", work, work)
    mount("-o", "remount,bind,ro", work)
    server.reset()
    refused(await run(arith_cfg, work),
            f"{work}: the work directory is not writable (Read-only file system)")
    assert server.stats.total == 0
    assert snapshot(work) == before


def fill(directory: Path) -> None:
    """Fill the file system of ``directory`` to the last byte."""
    fd = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 65536)
    except OSError as exc:
        assert exc.errno == 28, exc  # ENOSPC
    finally:
        os.close(fd)
    fd = os.open(directory / "filler", os.O_WRONLY | os.O_APPEND)
    try:  # the last partial block
        while True:
            os.write(fd, b"\0")
    except OSError:
        pass
    finally:
        os.close(fd)


def stored_intact(work: Path) -> int:
    """The store's ok predictions, after checking it is intact."""
    con = sqlite3.connect(f"file:{work / 'harness.db'}?mode=ro", uri=True)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return con.execute("SELECT count(*) FROM predictions WHERE status='ok'").fetchone()[0]
    finally:
        con.close()


async def test_a_full_disk_exits_2_and_keeps_what_is_stored(server, tmp_path, arith_cfg, mount):
    work = tmp_path / "w"
    work.mkdir()
    mount("-t", "tmpfs", "-o", "size=1m", "tmpfs", work)
    assert (await run(arith_cfg, work, "--limit", "4")).returncode == 0
    results = snapshot(work / "results")
    fill(work)
    server.reset()
    refused(await run(arith_cfg, work),
            f"{work}: the disk is full: free some space and run the same command again")
    assert server.stats.total == 0
    assert no_part_files(work) and snapshot(work / "results") == results
    (work / "filler").unlink()  # space freed: the same command resumes
    assert stored_intact(work) == 4
    assert (await run(arith_cfg, work)).returncode == 0
    assert server.stats.total == 4


async def test_a_store_write_on_a_full_disk_says_so_and_keeps_what_is_stored(tmp_path, mount):
    work = tmp_path / "w"
    work.mkdir()
    mount("-t", "tmpfs", "-o", "size=1m", "tmpfs", work)
    async with Store(work) as store:
        await store.write_completions([completion("kept", "a short reply")])
        fill(work)
        with pytest.raises(StoreError, match=f"{work / 'harness.db'}: writing results failed: "
                           "database or disk is full; the disk is full: free some space"):
            await store.write_completions([completion(f"k{i}", "x" * 4000) for i in range(8)])
    (work / "filler").unlink()
    assert stored_intact(work) == 1


def completion(key: str, text: str) -> Completion:
    sample = Sample("ds", "m", 0, 0, {"q": 1}, "ref", ({"role": "user", "content": "q"},), key)
    return Completion(sample, "ok", text, "stop")


async def test_a_disk_that_fills_during_a_run_stops_it_and_keeps_what_is_stored(tmp_path,
                                                                                mount):
    work = tmp_path / "w"
    work.mkdir()
    mount("-t", "tmpfs", "-o", "size=1m", "tmpfs", work)
    gate = anyio.Event()

    async def first_two_then_wait(body: dict) -> str:
        if not re.search(r"What is [01] \+", json.dumps(body)):
            await gate.wait()
        return arith_reply(body)

    async with FakeOpenAI(responder=first_two_then_wait) as srv:
        cfg = write_config(tmp_path / "cfg.py", write_arith(tmp_path / "a.jsonl", 40),
                           models=[model_cfg(srv.base_url)])
        proc = await anyio.open_process(cli("run", str(cfg), "-w", str(work), "-q", "-c", "4"),
                                        env=env())
        async with proc:
            with anyio.fail_after(30):
                while count_stored(work / "harness.db") < 2:  # noqa: ASYNC110 - another process's SQLite file: no event to wait on
                    await anyio.sleep(0.02)
            fill(work)
            gate.set()
            err = b"".join([chunk async for chunk in proc.stderr]).decode()
            await proc.wait()
    assert proc.returncode == 2 and "Traceback" not in err, err
    assert "No space left on device" in err or "the disk is full" in err, err
    assert no_part_files(work)
    (work / "filler").unlink()
    assert stored_intact(work) >= 2


# Stores ----------------------------------------------------------------------------------

def garbage(db: Path) -> None:
    db.write_bytes(bytes(range(256)) * 64)


def cut_in_half(db: Path) -> None:
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize("damage", [garbage, cut_in_half], ids=["garbage", "truncated"])
async def test_a_damaged_store_exits_2_naming_the_file(server, tmp_path, damage):
    # Enough rows that half the file still holds the schema: the damage is in the data.
    cfg = write_config(tmp_path / "cfg.py", write_arith(tmp_path / "a.jsonl", 300),
                       models=[model_cfg(server.base_url)])
    work = tmp_path / "w"
    assert (await run(cfg, work)).returncode == 0
    damage(work / "harness.db")
    damaged = snapshot(work)
    server.reset()
    refused(await run(cfg, work), f"{work / 'harness.db'}: ",
            "the file is damaged or is not a harness store", "move it away")
    assert server.stats.total == 0
    assert snapshot(work) == damaged  # nothing written over it


async def test_without_the_local_extra_the_embedded_model_exits_2(tmp_path):
    cfg = write_config(tmp_path / "cfg.py", write_arith(tmp_path / "a.jsonl", 4))
    work = tmp_path / "w"
    # The packages hidden as if never installed: importlib finds no module named None.
    hide = ("import sys; sys.modules['xllamacpp'] = None; from harness.cli import main; "
            "sys.exit(main(sys.argv[1:]))")
    result = await anyio.run_process(
        [sys.executable, "-c", hide, "run", str(cfg), "-w", str(work), "-q"],
        env={k: v for k, v in env().items() if not k.startswith(("HARNESS_MODEL", "OPENAI"))},
        check=False)
    refused(result, "the embedded local model needs the optional packages",
            "pip install -e '.[local]'")
    assert no_part_files(work)
