"""Run one Python program isolated, under limits, and say how it ended.

``run_program`` starts one bubblewrap sandbox per program (see ``bwrap``), feeds the
source to the launcher on stdin, reads stdout and stderr with a cap (past
``Limits.output`` bytes the program is killed), and kills the sandbox at the
wall-clock limit. Killing bwrap kills the sandbox's PID 1 (``--die-with-parent``),
and with it every process of the PID namespace, however it forked.

``sandbox='none'`` runs the launcher as a plain subprocess in a temporary directory
with the same limits and a cleared environment, but with the user's files, network
and processes in reach: never the default, only an explicit opt-in (see ``resolve``).
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import Any, cast

import anyio
from anyio.abc import ByteReceiveStream, Process

from ..defaults import ENV_UNSAFE_EXECUTION
from .bwrap import LAUNCHER, SANDBOX_CWD, bwrap_command, check_bwrap, python_executable
from .limits import Execution, Limits, Outcome, SandboxKind

log = logging.getLogger(__name__)

#: Set to ``1`` to run model code without a sandbox when no ``sandbox=`` is given.
UNSAFE_ENV = ENV_UNSAFE_EXECUTION

#: First uid handed to sandboxed programs when harness runs as root; each concurrent
#: program of each harness process gets its own (see ``_Uids``).
UID_BASE = 1_000_000_000

_UNSAFE_WARNING = ("running model-written code WITHOUT a sandbox (sandbox='none' or %s=1):"
                   " it can read your files and keys, use the network and leave processes"
                   " behind. Use this only for code you trust.")


def choose(sandbox: str | None) -> SandboxKind:
    """The sandbox asked for: the one given, else ``none`` if
    ``HARNESS_UNSAFE_EXECUTION=1``, else ``bwrap``; not yet checked (``check``)."""
    if sandbox is None:
        sandbox = "none" if os.environ.get(UNSAFE_ENV) == "1" else "bwrap"
    if sandbox not in ("bwrap", "none"):  # a config's string, checked here
        raise ValueError(f"sandbox must be 'bwrap' or 'none', not {sandbox!r}")
    return cast(SandboxKind, sandbox)


def check(kind: SandboxKind) -> None:
    """Refuse (``SandboxUnavailable``) unless programs can run in ``kind`` here: bwrap
    must start; ``none`` is warned about loudly, once."""
    if kind == "bwrap":
        check_bwrap()
    elif not _Uids.warned:
        _Uids.warned = True
        log.warning(_UNSAFE_WARNING, UNSAFE_ENV)


def resolve(sandbox: str | None) -> SandboxKind:
    """The sandbox to use (``choose``), checked to work here (``check``)."""
    kind = choose(sandbox)
    check(kind)
    return kind


class _Uids:
    """Unprivileged uids for concurrent programs: one each, so ``RLIMIT_NPROC`` (counted
    per uid) confines a fork bomb to its own sandbox. The pid spreads harness
    processes apart (pids fit in 22 bits, 256 programs at a time per process)."""

    free: list[int] = []
    next: int = 0
    warned = False

    @classmethod
    def take(cls) -> int:
        if cls.free:
            return cls.free.pop()
        cls.next += 1
        return UID_BASE + (os.getpid() << 8) + (cls.next % 256)

    @classmethod
    def give(cls, uid: int) -> None:
        cls.free.append(uid)


async def run_program(source: str, limits: Limits = Limits(),
                      sandbox: SandboxKind = "bwrap") -> Execution:
    """Run ``source`` as a Python program; never raises for anything the program does.

    The outcome is ``sandbox_error`` when the sandbox failed before the program ran
    (no marker from the launcher's ``RUNNER``: bwrap, the launcher or the interpreter
    failed, as Python does under a memory limit it cannot start in); callers call
    ``resolve`` first, so a missing bwrap is refused before any program, not reported
    per program.
    """
    privileged = os.geteuid() == 0 and sandbox == "bwrap"
    uid = _Uids.take() if privileged else None
    try:
        with tempfile.TemporaryDirectory(prefix="harness-exec-") as scratch:
            cfg = {"cpu_time": limits.cpu_time, "memory": limits.memory,
                   "processes": limits.processes, "file_size": limits.file_size,
                   "python": python_executable(), "uid": uid,
                   "cwd": SANDBOX_CWD if sandbox == "bwrap" else scratch}
            return await _run(source, limits, sandbox, cfg, privileged)
    finally:
        if uid is not None:
            _Uids.give(uid)


async def _run(source: str, limits: Limits, sandbox: SandboxKind, cfg: dict[str, Any],
               privileged: bool) -> Execution:
    status_r, status_w = os.pipe()
    init = _Init()
    if sandbox == "bwrap":
        launcher = [*bwrap_command(privileged, limits.disk), "--info-fd", str(init.write_fd),
                    cfg["python"], "-I", "-S", LAUNCHER]
        env: dict[str, str] | None = None  # bwrap clears it (--clearenv)
    else:
        launcher = [cfg["python"], "-I", "-S", str(Path(__file__).with_name("launcher.py"))]
        env = {"PATH": "/usr/bin:/bin", "HOME": cfg["cwd"], "TMPDIR": cfg["cwd"],
               "LANG": "C.UTF-8"}
    command = [*launcher, str(status_w), json.dumps(cfg)]
    started = time.monotonic()
    try:
        fds = (status_w, init.write_fd) if sandbox == "bwrap" else (status_w,)
        process = await anyio.open_process(command, env=env, start_new_session=True,
                                           pass_fds=fds)
    except OSError as exc:
        os.close(status_r)
        init.close()
        return Execution("sandbox_error", None, "", "", f"cannot start the sandbox: {exc}")
    finally:
        os.close(status_w)
        init.close_write()
    try:
        ended = await _supervise(process, source, limits, init)
        marker = _read_marker(status_r)
    finally:
        os.close(status_r)
        _kill(process)
        with anyio.CancelScope(shield=True):
            await process.aclose()  # closes the pipes, then waits
            await init.kill()
    duration = time.monotonic() - started
    why, out, err = ended
    code = process.returncode
    if not marker:
        return Execution("sandbox_error", code, out, err,
                         f"the sandbox failed before the program ran ({why or _cause(err)})",
                         duration)
    if why is not None:
        outcome: Outcome = "timeout" if why == "wall-clock limit" else "failed"
        return Execution(outcome, code, out, err, why, duration)
    if code == 0:
        return Execution("passed", 0, out, err, None, duration)
    if code in (128 + signal.SIGXCPU, -signal.SIGXCPU):
        return Execution("timeout", code, out, err, "CPU time limit", duration)
    return Execution("failed", code, out, err, _describe(code), duration)


async def _supervise(process: Process, source: str, limits: Limits,
                     init: _Init) -> tuple[str | None, str, str]:
    """Feed the source, read both streams under the output cap, wait for the end.

    Returns why the program was stopped (``None``: it ended by itself) and the tails.
    """
    tails = (_Tail(limits.tail), _Tail(limits.tail))
    stopped: list[str] = []
    total = [0]

    async def read(stream: ByteReceiveStream | None, tail: _Tail) -> None:
        if stream is None:
            return
        try:
            async for chunk in stream:
                tail.add(chunk)
                total[0] += len(chunk)
                if total[0] > limits.output and not stopped:
                    stopped.append("output limit")
                    _kill(process)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass

    async def feed() -> None:
        assert process.stdin is not None
        try:
            async with process.stdin:
                await process.stdin.send(source.encode("utf-8", "surrogatepass"))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass  # the sandbox died before reading it: reported by the exit

    with anyio.move_on_after(limits.wall_time) as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(feed)
            tg.start_soon(init.watch)
            tg.start_soon(read, process.stdout, tails[0])
            tg.start_soon(read, process.stderr, tails[1])
            await process.wait()
    if scope.cancelled_caught and not stopped:
        stopped.append("wall-clock limit")
    return (stopped[0] if stopped else None), tails[0].text(), tails[1].text()


class _Init:
    """The sandbox's PID 1, which bwrap names on ``--info-fd``. The kernel kills every
    process of a PID namespace when its PID 1 dies, and PID 1 is reaped only after
    them, so killing it and waiting for its pidfd guarantees nothing is left when
    ``run_program`` returns (bwrap itself may exit a moment before its PID 1 does)."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        self.pidfd: int | None = None

    def close_write(self) -> None:
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def close(self) -> None:
        self.close_write()
        if self.read_fd >= 0:
            os.close(self.read_fd)
            self.read_fd = -1
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None

    async def watch(self) -> None:
        """Read the PID 1's pid as soon as bwrap writes it and hold a pidfd of it (a
        pidfd cannot be fooled by the pid being reused later)."""
        info = b""
        while b"child-pid" not in info or b"}" not in info:
            await anyio.wait_readable(self.read_fd)
            chunk = os.read(self.read_fd, 4096)
            if not chunk:
                break  # bwrap ended before the sandbox existed
            info += chunk
        found = re.search(rb'"child-pid"\s*:\s*(\d+)', info)
        if found is not None and self.pidfd is None:
            try:
                self.pidfd = os.pidfd_open(int(found.group(1)))
            except ProcessLookupError:
                pass  # already gone, and its namespace with it

    async def kill(self) -> None:
        """Kill the PID 1 and wait until it (so every process it outlived) is gone."""
        try:
            if self.pidfd is not None:
                try:
                    signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                with anyio.move_on_after(30):
                    await anyio.wait_readable(self.pidfd)
        finally:
            self.close()


class _Tail:
    """The last ``size`` bytes of a stream."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.chunks: deque[bytes] = deque()
        self.held = 0

    def add(self, chunk: bytes) -> None:
        self.chunks.append(chunk)
        self.held += len(chunk)
        while self.held - len(self.chunks[0]) >= self.size:
            self.held -= len(self.chunks.popleft())

    def text(self) -> str:
        return b"".join(self.chunks)[-self.size:].decode("utf-8", "replace")


def _kill(process: Process) -> None:
    """SIGKILL the sandbox's process group (bwrap, or the unsandboxed launcher's)."""
    if process.returncode is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read_marker(fd: int) -> bool:
    """Whether Python started and the launcher's ``RUNNER`` was about to run the
    program (see ``launcher``)."""
    os.set_blocking(fd, False)
    try:
        return os.read(fd, 64) == b"run\n"
    except BlockingIOError:
        return False


def _describe(code: int | None) -> str:
    if code is None:
        return "no exit status"
    signum = -code if code < 0 else code - 128 if code > 128 else 0
    if signum:
        try:
            return f"killed by {signal.Signals(signum).name}"
        except ValueError:
            pass
    return f"exit status {code}"


def _cause(stderr: str) -> str:
    """The line of a failed sandbox's stderr that says why: CPython's ``Fatal Python
    error`` line when the interpreter could not start (the stack dump after it says
    nothing), else the last line (a traceback's exception, bwrap's message)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    fatal = [line for line in lines if line.startswith("Fatal Python error")]
    return (fatal or lines or ["no message"])[-1]
