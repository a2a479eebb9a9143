"""The records of one sandboxed run: the limits it ran under and what came of it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

from ..config_keys import MAX_TIMEOUT, positive

#: How one program ended. ``passed``: exit status 0. ``failed``: any other exit, a
#: signal, or an output or memory limit. ``timeout``: the wall-clock or CPU limit.
#: ``sandbox_error``: the sandbox itself failed (bwrap could not start, the launcher
#: crashed, Python could not start under the limits) before the program ran; it says
#: nothing about the program.
Outcome = Literal["passed", "failed", "timeout", "sandbox_error"]

#: How programs are isolated: ``bwrap`` (bubblewrap) or ``none`` (unsafe, opt-in only).
SandboxKind = Literal["bwrap", "none"]

#: The largest count or size a limit may have: ``setrlimit`` takes a C long, and a
#: larger value would fail every program's launch instead of the config's load.
MAX_RLIMIT = 1 << 62


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource limits for one program; all of them can change its outcome.

    ``wall_time`` (seconds) bounds the whole run, its process tree included;
    ``cpu_time`` (whole seconds, as ``RLIMIT_CPU`` counts them) each process's CPU;
    ``memory`` (bytes) each process's address space; ``processes`` the processes and
    threads of the program; ``file_size`` (bytes) any file it writes; ``disk`` (bytes)
    its temporary directory; ``output`` (bytes) stdout and stderr together, past which
    it is killed; ``tail`` (bytes) how much of the end of each stream is kept.

    Every limit is a positive, finite number (``wall_time`` and ``cpu_time`` at most a
    day); all but ``wall_time`` are whole numbers (``2.0`` is read as ``2``, ``0.5`` is
    refused rather than cut to ``0``). A bad one is a ``ConfigError`` naming its field.
    """

    wall_time: float = 20.0
    cpu_time: int = 10
    memory: int = 1 << 30
    processes: int = 32
    file_size: int = 16 << 20
    disk: int = 64 << 20
    output: int = 1 << 20
    tail: int = 4096

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            at_most = MAX_TIMEOUT if field.name in ("wall_time", "cpu_time") else MAX_RLIMIT
            if field.name == "wall_time":  # the one limit in fractions of a second
                positive(value, field.name, float, at_most)
                continue
            if isinstance(value, float) and value.is_integer():
                value = int(value)  # 1e9 bytes, 2.0 seconds: whole numbers all the same
            object.__setattr__(self, field.name, positive(value, field.name, int, at_most))

    def as_key(self) -> dict[str, Any]:
        """The limits as a plain dict, for a result key."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Execution:
    """The outcome of running one program.

    ``reason`` says in a few words why it did not pass (``exit status 1``, ``killed
    by SIGKILL``, ``wall-clock limit``, ``output limit``, or the sandbox's failure);
    ``stdout``/``stderr`` are the last ``Limits.tail`` bytes of each, decoded.
    """

    outcome: Outcome
    exit_code: int | None
    stdout: str
    stderr: str
    reason: str | None = None
    duration: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """A plain dict (for the store and the details file)."""
        return asdict(self)
