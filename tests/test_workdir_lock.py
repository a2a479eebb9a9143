"""One run per work directory, even if someone deletes a lock file (issue 13, point 6).

The lock is held on the work directory itself, so there is no file whose removal lets a
second run in. Two real processes: the first is held open by a fake server that answers
only when the test lets it.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio

from harness.testing import FakeOpenAI

from .helpers import arith_reply, count_stored, expected_correct, write_arith, write_config
from .test_cli import cli, env


def listing(work: Path) -> dict[str, tuple[int, int]]:
    """Size and modification time of every file the runs write besides the store."""
    return {str(p.relative_to(work)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(work.rglob("*"))
            if p.is_file() and not p.name.startswith("harness.db")}


async def test_deleting_the_lock_file_does_not_let_a_second_run_in(tmp_path):
    n = 20
    cfg = write_config(tmp_path / "cfg.py", write_arith(tmp_path / "a.jsonl", n))
    work = tmp_path / "w"
    arrived, release = anyio.Event(), anyio.Event()

    async def held(body: dict) -> str:
        arrived.set()
        await release.wait()
        return arith_reply(body)

    async with FakeOpenAI(responder=held) as first_srv, \
            FakeOpenAI(responder=arith_reply) as second_srv:
        def args(srv: FakeOpenAI) -> list[str]:
            return cli("run", str(cfg), "-w", str(work), "-q", "--model-base-url",
                       srv.base_url, "--model", "fake-model", "-c", "4")

        first = await anyio.open_process(args(first_srv), env=env())
        async with first:
            with anyio.fail_after(30):
                await arrived.wait()
            # What a user clearing a "stale" lock does (the lock file of earlier versions).
            (work / ".lock").unlink(missing_ok=True)
            before = listing(work)
            second = await anyio.run_process(args(second_srv), env=env(), check=False)
            after = listing(work)
            release.set()
            with anyio.fail_after(60):
                await first.wait()
            first_err = b"".join([chunk async for chunk in first.stderr]).decode()
        assert second_srv.stats.total == 0
    assert second.returncode == 2, second.stderr.decode()
    assert b"another harness process is using this work directory" in second.stderr
    assert b"Traceback" not in second.stderr
    assert after == before  # the second run touched neither details nor results
    assert first.returncode == 0, first_err
    rows = (work / "details" / "fake-model" / "arith.jsonl").read_text().splitlines()
    assert sorted(json.loads(row)["index"] for row in rows) == list(range(n))
    result = json.loads((work / "results" / "fake-model" / "arith.json").read_text())
    assert result["correct"] == expected_correct(n)


async def test_the_lock_goes_with_the_run(server, tmp_path):
    cfg = write_config(tmp_path / "cfg.py", write_arith(tmp_path / "a.jsonl", 4))
    args = cli("run", str(cfg), "-w", str(tmp_path / "w"), "-q", "--model-base-url",
               server.base_url, "--model", "fake-model")
    for _ in range(2):  # the second run finds the directory free again
        result = await anyio.run_process(args, env=env(), check=False)
        assert result.returncode == 0, result.stderr.decode()
    assert not (tmp_path / "w" / ".lock").exists()


async def run_while_replaced(tmp_path: Path, work: Path, replace) -> tuple:
    """Start a run on ``work`` (held mid-run by its server), ``replace(work)``, run a
    second one on ``work`` to the end, then let the first finish. Returns both
    processes' (exit code, stderr) and the listing of ``work`` after the second."""
    n = 12
    cfg = write_config(tmp_path / "cfg.py", write_arith(tmp_path / "a.jsonl", n))
    arrived, release = anyio.Event(), anyio.Event()

    async def held(body: dict) -> str:
        arrived.set()
        await release.wait()
        return arith_reply(body)

    async with FakeOpenAI(responder=held) as first_srv, \
            FakeOpenAI(responder=arith_reply) as second_srv:
        def args(srv: FakeOpenAI, limit: str) -> list[str]:
            return cli("run", str(cfg), "-w", str(work), "-q", "--model-base-url",
                       srv.base_url, "--model", "fake-model", "-c", "4", "--limit", limit)

        first = await anyio.open_process(args(first_srv, str(n)), env=env())
        async with first:
            with anyio.fail_after(30):
                await arrived.wait()
            replace(work)
            second = await anyio.run_process(args(second_srv, "5"), env=env(), check=False)
            after_second = listing(work)
            release.set()
            with anyio.fail_after(60):
                await first.wait()
            first_err = b"".join([chunk async for chunk in first.stderr]).decode()
    assert second.returncode == 0, second.stderr.decode()
    assert listing(work) == after_second  # the first run wrote nothing into the new one
    assert json.loads((work / "results/fake-model/arith.json").read_text())["total"] == 5
    return first.returncode, first_err


async def test_a_run_whose_work_directory_is_replaced_writes_nothing_into_the_new_one(
        tmp_path):
    work = tmp_path / "w"

    def move_and_recreate(path: Path) -> None:
        path.rename(tmp_path / "w.old")
        path.mkdir()

    code, err = await run_while_replaced(tmp_path, work, move_and_recreate)
    assert code == 2, err
    assert "the work directory was moved, removed or replaced while this run was using it" in err
    assert f"it is now at {tmp_path / 'w.old'}" in err and "Traceback" not in err
    assert count_stored(tmp_path / "w.old" / "harness.db") == 12  # kept where it started


async def test_a_run_on_a_symlink_keeps_writing_where_the_link_pointed_at_the_start(tmp_path):
    (tmp_path / "w1").mkdir()
    (tmp_path / "w2").mkdir()
    work = tmp_path / "w"
    work.symlink_to(tmp_path / "w1")

    def repoint(path: Path) -> None:
        path.unlink()
        path.symlink_to(tmp_path / "w2")

    code, err = await run_while_replaced(tmp_path, work, repoint)
    assert code == 0, err
    assert json.loads((tmp_path / "w1/results/fake-model/arith.json").read_text())["total"] == 12
    assert json.loads((tmp_path / "w2/results/fake-model/arith.json").read_text())["total"] == 5
