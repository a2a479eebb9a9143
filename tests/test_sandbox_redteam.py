"""The red team's hostile programs (not those of ``test_sandbox_hostile``): ways out of
the sandbox that suite does not try, host exhaustion past the limits, output that could
break the details file, and (the ones that matter for the numbers) wrong programs that
try to be scored ``passed``. Each test asserts about the host or the score afterwards.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import uuid
from pathlib import Path

import pytest

import harness
from harness.sandbox import Limits
from harness.testing import FakeOpenAI
from tests.test_code_pipeline import BY_PROMPT, DATASETS, _model, good
from tests.test_sandbox_hostile import _contained, _marker

# A wrong body (every HumanEval task's tests reject ``None``) followed by a way to exit 0
# before, or despite, the tests; each task of the replayed run gets one of them.
CHEATS = {
    "sys.exit(0) after the function": "import sys\nsys.exit(0)\n",
    "os._exit(0) after the function": "import os\nos._exit(0)\n",
    "the model's own unittest.main()": (
        "import unittest\nclass T(unittest.TestCase):\n    def test_nothing(self):\n"
        "        pass\nif __name__ == '__main__':\n    unittest.main()\n"),
    "an atexit hook that exits 0 after the failed assertion": (
        "import atexit, os\natexit.register(os._exit, 0)\n"),
    "an excepthook that exits 0": "import os, sys\nsys.excepthook = lambda *a: os._exit(0)\n",
    "a thread that exits 0 while the tests run": (
        "import os, threading, time\nthreading.Thread(target=lambda: (time.sleep(0.05), "
        "os._exit(0))).start()\ntime.sleep(0.01)\n"),
}


def _cheat(row: dict, trick: str) -> str:
    return f"```python\n{row['prompt']}    return None\n\n{trick}```\n"


async def test_wrong_programs_that_exit_0_early_or_late_are_not_passed(tmp_path, monkeypatch):
    tricks = list(CHEATS.values())
    # Tasks 0..5 cheat; 6 and 7 are canonical, one of them calling sys.exit(0) in an
    # atexit hook (a correct program must still pass: the check did run to the end).
    def replay(body: dict) -> str:
        text = body["messages"][-1]["content"]
        i, row = BY_PROMPT[text.split("Complete the following python code:\n", 1)[1]]
        if i < len(tricks):
            return _cheat(row, tricks[i])
        return good(row) if i == 6 else good(row).replace(
            "```\n", "\nimport atexit, sys\natexit.register(sys.exit, 0)\n```\n")

    async with FakeOpenAI(responder=replay) as srv:
        report = await harness.evaluate(DATASETS / "humaneval.py", work_dir=tmp_path / "w",
                                        models=_model(srv), limit=8)
    summary = report.summaries[0]
    details = [json.loads(x) for x in Path(summary["details"]).read_text().splitlines()]
    assert [d["correct"] for d in details] == [False] * 6 + [True, True], details
    assert summary["correct"] == 2 and summary["complete"] is True
    assert all(d["outcome"] == "failed" for d in details[:6])
    assert all("harness-tests-done" not in d.get("stderr_tail", "") for d in details)


async def test_an_mbpp_program_that_exits_0_before_its_assertions_is_not_passed():
    from harness.evaluators.code import MBPPEvaluator

    row = {"test_list": ["assert add(1, 2) == 3"], "test_imports": []}
    wrong = "```python\ndef add(a, b):\n    return a - b\nraise SystemExit(0)\n```"
    detail = await MBPPEvaluator().ascore_sample(wrong, None, row)
    assert (detail["correct"], detail["outcome"]) == (False, "failed")
    assert detail["reason"] == "exited before its tests finished"
    right = await MBPPEvaluator().ascore_sample(wrong.replace("a - b", "a + b").replace(
        "raise SystemExit(0)\n", ""), None, row)
    assert right["correct"] is True


async def test_the_program_cannot_create_a_user_namespace_of_its_own():
    # Root of a namespace of its own, it could mount a tmpfs of any size in host memory.
    marker = _marker()
    run = await _contained(f"""# {marker}
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
print("unshare", libc.unshare(0x10000000), ctypes.get_errno())
assert libc.unshare(0x10000000) == 0 or os.getuid() == 0, "no user namespace"
""", marker)
    assert "unshare -1" in run.stdout and "no user namespace" in run.stderr


async def test_memfds_hold_no_more_than_the_memory_limit():
    # A memfd's pages are not in the address space, so RLIMIT_AS does not count them.
    marker = _marker()
    run = await _contained(f"""# {marker}
import os
total = 0
try:
    for i in range(64):
        fd = os.memfd_create("hog")
        for _ in range(15):
            os.write(fd, bytes(1 << 20))
        total += 15
except OSError as exc:
    print(exc)
print("MiB", total)
assert total > 256, total
""", marker, Limits(wall_time=10, memory=256 << 20, file_size=16 << 20))
    assert int(run.stdout.split("MiB")[1]) <= 256


async def test_the_hosts_unix_sockets_by_path_and_abstract_name_are_unreachable(tmp_path):
    listeners = []
    for address in (str(tmp_path / "host.sock"), f"\0harness-redteam-{uuid.uuid4().hex}"):
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(address)
        listener.listen(4)
        listener.setblocking(False)
        listeners.append((address, listener))
    marker = _marker()
    try:
        run = await _contained(f"""# {marker}
import socket
reached = []
for address in {[a for a, _ in listeners]!r}:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(address)
        s.sendall(b"exfiltrated")
        reached.append(address)
    except OSError as exc:
        print(address, exc)
assert reached, "none reached"
""", marker)
        for _, listener in listeners:
            with pytest.raises(BlockingIOError):
                listener.accept()
        assert "none reached" in run.stderr
    finally:
        for _, listener in listeners:
            listener.close()


async def test_no_file_descriptor_of_the_host_is_inherited(tmp_path):
    # An inheritable fd of the run (a store's SQLite file) must not reach the program.
    db = sqlite3.connect(tmp_path / "harness.db")
    db.execute("CREATE TABLE t (secret TEXT)")
    db.execute("INSERT INTO t VALUES ('store-secret')")
    db.commit()
    held = os.open(tmp_path / "harness.db", os.O_RDONLY)
    os.set_inheritable(held, True)
    marker = _marker()
    try:
        run = await _contained(f"""# {marker}
import os
extra = []
for fd in range(3, 1024):
    try:
        os.fstat(fd)
        extra.append((fd, os.readlink(f"/proc/self/fd/{{fd}}")))
        print(os.pread(fd, 1 << 16, 0))
    except OSError:
        pass
print(sorted(os.listdir("/proc/self/fd")))
assert extra, "only the standard streams"
""", marker)
    finally:
        os.close(held)
        db.close()
    assert "store-secret" not in run.stdout and "only the standard streams" in run.stderr


async def test_pid_1_the_kernel_knobs_and_ptrace_are_out_of_reach():
    marker = _marker()
    run = await _contained(f"""# {marker}
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
got = []
for path in ("/proc/1/root/etc", "/proc/1/cwd"):
    try:
        got.append((path, os.listdir(path)))
    except OSError as exc:
        print(path, exc)
for path in ("/proc/1/environ", "/proc/1/mem"):
    try:
        got.append((path, open(path, "rb").read(64)))
    except OSError as exc:
        print(path, exc)
for path in ("/proc/sys/kernel/hostname", "/proc/sys/vm/drop_caches", "/proc/sysrq-trigger",
             "/sys/kernel/uevent_helper"):
    try:
        open(path, "w").write("1")
        got.append(path)
    except OSError as exc:
        print(path, exc)
for pid in (1, os.getppid()):
    if libc.ptrace(16, pid, 0, 0) == 0:  # PTRACE_ATTACH
        got.append(("ptrace", pid))
status = open("/proc/self/status").read()
print([line for line in status.splitlines() if line.startswith(("NoNewPrivs", "CapEff"))])
if "NoNewPrivs:\\t0" in status:
    got.append("setuid binaries would raise privileges")
assert got, "nothing reached"
""", marker)
    assert "nothing reached" in run.stderr
    assert "NoNewPrivs:\\t1" in run.stdout and "CapEff:\\t0000000000000000" in run.stdout



async def test_terminal_escapes_nul_and_invalid_utf8_in_output_stay_data(tmp_path):
    # The program writes raw control bytes and invalid UTF-8 to both streams and fails;
    # the details file stays one JSON object per line, with no raw control byte in it.
    trick = ("import os\nos.write(1, b'\\x1b]0;pwned\\x07\\x1b[2J\\x00\\xff\\xed\\xa0\\x80' "
             "+ b'Z' * 100000)\nos.write(2, b'\\x1b[31m\\x00\\xc3(\\r\\n')\n"
             "assert False, '\\x1b[2J'\n")

    def replay(body: dict) -> str:
        text = body["messages"][-1]["content"]
        _, row = BY_PROMPT[text.split("Complete the following python code:\n", 1)[1]]
        return _cheat(row, trick)

    async with FakeOpenAI(responder=replay) as srv:
        report = await harness.evaluate(DATASETS / "humaneval.py", work_dir=tmp_path / "w",
                                        models=_model(srv), limit=1)
    raw = Path(report.summaries[0]["details"]).read_bytes()
    assert not any(byte < 0x20 and byte != 0x0A for byte in raw)
    [detail] = [json.loads(line) for line in raw.decode("utf-8").split("\n") if line]
    assert (detail["correct"], detail["outcome"]) == (False, "failed")
    assert detail["exception"].startswith("AssertionError")
