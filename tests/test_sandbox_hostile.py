"""Hostile programs: each tries to harm or read the host, and each test checks the host
afterwards (not only the program's outcome). A program asserts that its attack worked,
so ``passed`` would mean the sandbox let it through.

Every test ends by checking that no process of the run is left: none whose command line
holds the test's marker, none running as one of this process's sandbox uids.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import anyio
import pytest

from harness.sandbox import Limits, run_program
from harness.sandbox.run import UID_BASE

SMALL = Limits(wall_time=5, cpu_time=3, memory=256 << 20, processes=16, output=64 << 10)


def _marker() -> str:
    return f"hostile-{uuid.uuid4().hex}"


def _leftovers(marker: str) -> list[int]:
    """Pids of live processes whose command line holds ``marker`` or that run as one of
    this process's sandbox uids (a fork bomb's children keep their parent's argv)."""
    mine = range(UID_BASE + (os.getpid() << 8), UID_BASE + (os.getpid() << 8) + 256)
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue  # it ended while we looked
        if "State:\tZ" in status:
            continue
        uid = int(status.split("Uid:")[1].split()[0])
        if marker.encode() in cmdline or uid in mine:
            found.append(int(entry))
    return found


async def _contained(source: str, marker: str, limits: Limits = SMALL):
    run = await run_program(source, limits)
    assert run.outcome in ("failed", "timeout"), (run.outcome, run.stdout, run.stderr)
    assert _leftovers(marker) == []
    return run


async def test_no_connection_reaches_a_server_on_the_hosts_loopback():
    connections = []

    async def accept(reader, writer):
        connections.append(await reader.read(100))
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    marker = _marker()
    try:
        run = await _contained(f"""# {marker}
import socket
s = socket.create_connection(("127.0.0.1", {port}), timeout=2)
s.sendall(b"exfiltrated")
s.close()
""", marker)
    finally:
        server.close()
        await server.wait_closed()
    assert connections == []
    assert "ConnectionRefusedError" in run.stderr  # a loopback of its own, nobody listening


async def test_the_outside_network_is_unreachable():
    marker = _marker()
    run = await _contained(f"""# {marker}
import socket
socket.create_connection(("1.1.1.1", 53), timeout=2)
""", marker)
    assert "unreachable" in run.stderr


async def test_a_planted_key_in_the_environment_never_shows_up(monkeypatch):
    secret = f"sk-planted-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("HARNESS_TEST_SECRET", secret)
    marker = _marker()
    run = await _contained(f"""# {marker}
import os, glob
print(dict(os.environ))
seen = " ".join(os.environ.values())
for path in glob.glob("/proc/*/environ"):
    try:
        seen += open(path, "rb").read().decode(errors="replace")
    except OSError as exc:
        print("cannot read", path, exc)
print(seen)
assert "sk-planted-" in seen, "no key found"
""", marker)
    assert secret not in run.stdout + run.stderr
    assert "no key found" in run.stderr


async def test_a_canary_in_the_users_home_is_neither_read_nor_touched():
    canary = Path.home() / f".harness-canary-{uuid.uuid4().hex}"
    content = f"canary-{uuid.uuid4().hex}"
    canary.write_text(content)
    before = canary.stat()
    marker = _marker()
    try:
        run = await _contained(f"""# {marker}
import os
print(os.listdir(os.path.dirname({str(canary)!r})))
data = open({str(canary)!r}).read()
print(data)
open({str(canary)!r}, "w").write("overwritten")
""", marker)
        assert content not in run.stdout + run.stderr
        after = canary.stat()
        assert canary.read_text() == content
        assert (after.st_mtime_ns, after.st_size) == (before.st_mtime_ns, before.st_size)
    finally:
        canary.unlink()


async def test_the_work_directory_and_the_cwd_are_not_visible():
    marker = _marker()
    run = await _contained(f"""# {marker}
import os
for path in ({os.getcwd()!r}, "/work", "/home", {str(Path(__file__).resolve())!r}):
    print(path, os.path.exists(path))
print(open({str(Path(__file__).resolve())!r}).read())
""", marker)
    assert "Shared fixtures" not in run.stdout and "def test_" not in run.stdout
    assert "True" not in run.stdout


async def test_writes_outside_the_private_temp_dir_land_nowhere_on_the_host(tmp_path):
    name = f"harness-escape-{uuid.uuid4().hex}"
    marker = _marker()
    # /tmp inside the sandbox is its own tmpfs: the write there succeeds and vanishes.
    await _contained(f"""# {marker}
open("/tmp/{name}", "w").write("x")
open({str(tmp_path / name)!r}, "w").write("x")
""", marker)
    assert not (Path("/tmp") / name).exists()
    assert list(tmp_path.iterdir()) == []
    run = await _contained(f"""# {marker}
open("/usr/{name}", "w").write("x")
""", marker)
    assert "Read-only file system" in run.stderr or "Permission denied" in run.stderr
    assert not (Path("/usr") / name).exists()


async def test_deleting_files_leaves_the_hosts_files_alone(tmp_path):
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    marker = _marker()
    await _contained(f"""# {marker}
import os, shutil, sys
errors = []
for path in ({str(precious)!r}, sys.executable, "/usr/bin/env"):
    try:
        os.remove(path)
    except OSError as exc:
        errors.append(exc)
shutil.rmtree({str(tmp_path)!r}, ignore_errors=True)
assert not errors, errors
""", marker)
    assert precious.read_text() == "keep me"
    assert Path(sys.executable).exists() and Path("/usr/bin/env").exists()


async def test_a_fork_bomb_is_capped_and_leaves_no_process():
    marker = _marker()
    run = await _contained(f"""# {marker}
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
""", marker)
    assert run.outcome == "timeout"
    # The host can still start processes.
    assert (await anyio.run_process(["true"], check=False)).returncode == 0


async def test_a_memory_hog_hits_the_memory_limit():
    marker = _marker()
    run = await _contained(f"""# {marker}
hog = []
for _ in range(64):
    hog.append(bytearray(128 << 20))
print("allocated", len(hog) * 128, "MiB")
""", marker)
    assert "MemoryError" in run.stderr and "allocated" not in run.stdout


async def test_an_infinite_loop_times_out():
    marker = _marker()
    run = await _contained(f"# {marker}\nwhile True:\n    pass\n", marker)
    assert run.outcome == "timeout"


async def test_a_sleeping_child_that_outlives_its_parent_is_killed():
    marker = _marker()
    # The parent exits at once (and "passes"); the children, one detached with setsid
    # and double-forked, must not survive it.
    run = await run_program(f"""
import os, subprocess, sys
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "{marker}"])
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)",
                                  "{marker}"])
    os._exit(0)
print("parent done")
""", SMALL)
    assert run.stdout == "parent done\n"
    assert _leftovers(marker) == []


async def test_killing_the_parent_and_everything_in_sight_harms_no_host_process():
    # Popen, not anyio: poll() asks the kernel now, where an asyncio child watcher could
    # report the bystander's death late and let the assertion below pass wrongly.
    bystander = subprocess.Popen(["sleep", "600"])  # noqa: ASYNC220
    marker = _marker()
    try:
        run = await _contained(f"""# {marker}
import os, signal
for pid in (os.getppid(), {os.getpid()}, {bystander.pid}, 1):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError as exc:
        print("kill", pid, exc)
os.kill(-1, signal.SIGKILL)
""", marker)
        assert bystander.poll() is None  # still running
        assert run.outcome == "failed"
    finally:
        bystander.kill()
        bystander.wait()


async def test_printing_gigabytes_is_cut_at_the_output_limit():
    marker = _marker()
    run = await _contained(f"""# {marker}
import sys
chunk = "x" * (1 << 20)
for _ in range(4096):
    sys.stdout.write(chunk)
    sys.stderr.write(chunk)
""", marker, Limits(wall_time=60, output=1 << 20, tail=1024))
    assert run.reason == "output limit"
    assert len(run.stdout) <= 1024 and len(run.stderr) <= 1024


async def test_filling_the_disk_hits_the_file_size_limit():
    marker = _marker()
    run = await _contained(f"""# {marker}
with open("big", "wb") as f:
    for _ in range(1024):
        f.write(bytes(1 << 20))
""", marker, Limits(file_size=8 << 20, disk=32 << 20))
    assert "File too large" in run.stderr or run.reason == "killed by SIGXFSZ"


@pytest.mark.skipif(os.geteuid() != 0, reason="the uid switch happens only as root")
async def test_as_root_the_program_runs_unprivileged():
    run = await run_program("import os\nprint(os.getuid(), os.geteuid())\n"
                            "print(open('/proc/self/status').read())")
    uid = int(run.stdout.split()[0])
    assert uid >= UID_BASE
    assert "CapEff:\t0000000000000000" in run.stdout
    assert os.kill(os.getpid(), 0) is None and signal.SIGKILL  # we are alive and well
