"""Ctrl-C: stop new requests, finish writes, say how to resume, exit non-zero."""

from __future__ import annotations

import signal
import sqlite3

import anyio
import pytest

from harness.testing import FakeOpenAI

from .helpers import arith_reply, count_stored, write_arith, write_config
from .test_cli import cli, env


async def _start(tmp_path, srv, base_url=None):
    data = write_arith(tmp_path / "a.jsonl", 400)
    cfg = write_config(tmp_path / "cfg.py", data)
    args = cli("run", str(cfg), "-w", str(tmp_path / "w"), "-q", "--model-base-url",
               base_url or srv.base_url, "--model", "fake-model", "-c", "8")
    proc = await anyio.open_process(args, env=env())
    with anyio.fail_after(30):
        while count_stored(tmp_path / "w" / "harness.db") < 20:  # noqa: ASYNC110 - another process's SQLite file: no event to wait on
            await anyio.sleep(0.01)
    return proc, args


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
async def test_first_signal_stops_gracefully_and_tells_how_to_resume(tmp_path, signum):
    async with FakeOpenAI(responder=arith_reply, latency=0.05) as srv:
        proc, args = await _start(tmp_path, srv)
        async with proc:
            proc.send_signal(signum)
            with anyio.fail_after(15):
                err = b"".join([chunk async for chunk in proc.stderr])
                await proc.wait()
        sent_at_stop = srv.stats.total
        assert proc.returncode == 130
        assert b"python -m harness run" in err and b"resume" in err
        stored = count_stored(tmp_path / "w" / "harness.db")
        assert 20 <= stored < 400
        # No new requests after the stop; a resumed run asks only for the rest.
        resumed = await anyio.run_process(args, env=env(), check=False)
        assert resumed.returncode == 0
        assert srv.stats.total - sent_at_stop <= 400 - stored + 8
    con = sqlite3.connect(tmp_path / "w" / "harness.db")
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    con.close()


async def test_the_resume_command_shows_no_secret_of_the_url(tmp_path):
    async with FakeOpenAI(responder=arith_reply, latency=0.05) as srv:
        proc, _ = await _start(tmp_path, srv, srv.base_url + "?api-key=QSECRET%2Bsig777")
        async with proc:
            proc.send_signal(signal.SIGINT)
            with anyio.fail_after(15):
                err = b"".join([chunk async for chunk in proc.stderr])
                await proc.wait()
    assert proc.returncode == 130
    assert b"api-key=***" in err and b"masked here" in err
    assert b"QSECRET" not in err and b"sig777" not in err


async def test_second_signal_exits_at_once_without_corrupting_the_store(tmp_path):
    async with FakeOpenAI(responder=arith_reply, latency=0.05) as srv:
        proc, args = await _start(tmp_path, srv)
        async with proc:
            proc.send_signal(signal.SIGINT)
            proc.send_signal(signal.SIGINT)
            with anyio.fail_after(15):
                await proc.wait()
        assert proc.returncode == 130
        resumed = await anyio.run_process(args, env=env(), check=False)
        assert resumed.returncode == 0
    con = sqlite3.connect(tmp_path / "w" / "harness.db")
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert con.execute("SELECT count(*) FROM predictions WHERE status='ok'").fetchone() == (400,)
    con.close()
