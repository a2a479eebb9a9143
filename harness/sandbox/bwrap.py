"""The bubblewrap command line that isolates one program, and whether bwrap works here.

The sandbox sees a read-only view of ``/usr``, the ``/bin``/``/lib*`` links or
directories, the few ``/etc`` files the dynamic loader and ``time`` read, and the
Python installation (``sys.base_prefix``), plus a private tmpfs as working and
temporary directory, a fresh ``/proc`` and a minimal ``/dev``. Not the user's home,
the work directory or the current directory. Every namespace bwrap can create is new
(no network: only a loopback of its own); the environment is cleared.

Run as root, bwrap keeps no user namespace: a process counted as host root ignores
``RLIMIT_NPROC``, so the launcher instead switches to an unprivileged uid of its own
with only ``CAP_SETUID``/``CAP_SETGID`` until then. Run as any other user, bwrap
creates a user namespace and the launcher stays that user.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ..errors import HarnessError

#: What to tell a user whose machine cannot sandbox.
INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: "
                "dnf install bubblewrap), or, only for code you trust, opt in to running "
                "it unsandboxed with sandbox='none' or HARNESS_UNSAFE_EXECUTION=1")

#: The working and temporary directory inside the sandbox.
SANDBOX_CWD = "/tmp"

#: Where the launcher is mounted inside the sandbox.
LAUNCHER = "/.harness/launcher.py"

_ETC = ("/etc/ld.so.cache", "/etc/localtime", "/etc/alternatives")


class SandboxUnavailable(HarnessError):
    """No working sandbox on this machine: harness refuses to run model-written code.

    ``exit_code`` 2: the run could not start (no sample is pending, none was run)."""

    exit_code = 2


def python_executable() -> str:
    """The interpreter the sandbox runs: the base installation's, outside any venv."""
    real = os.path.realpath(sys.executable)
    base = os.path.realpath(sys.base_prefix)
    if real.startswith(base + os.sep):
        return real
    return str(Path(base) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}")


def bwrap_path() -> str:
    """The bwrap executable, or ``SandboxUnavailable`` saying how to install it."""
    found = shutil.which("bwrap")
    if found is None:
        raise SandboxUnavailable(f"harness executes model-written code only in a sandbox and "
                                 f"bubblewrap (bwrap) is not on PATH: {INSTALL_HINT}")
    return found


def bwrap_command(privileged: bool, disk: int) -> list[str]:
    """The bwrap arguments before the launcher's command (see the module docstring)."""
    args = [bwrap_path(), "--die-with-parent", "--new-session", "--clearenv"]
    if privileged:
        args += ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
                 "--unshare-cgroup-try", "--cap-drop", "ALL",
                 "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        args += ["--unshare-all", "--disable-userns"]
    args += ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for path in _ETC:
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    base = os.path.realpath(sys.base_prefix)
    if not base.startswith("/usr/") and base != "/usr":
        args += [*_open_dirs(base), "--ro-bind", base, base]
    launcher = str(Path(__file__).with_name("launcher.py"))
    args += [*_open_dirs(LAUNCHER), "--ro-bind", launcher, LAUNCHER,
             "--proc", "/proc", "--dev", "/dev",
             "--perms", "1777", "--size", str(disk), "--tmpfs", SANDBOX_CWD,
             "--chdir", SANDBOX_CWD,
             "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin",
             "--setenv", "HOME", SANDBOX_CWD, "--setenv", "TMPDIR", SANDBOX_CWD,
             "--setenv", "LANG", "C.UTF-8", "--setenv", "PYTHONDONTWRITEBYTECODE", "1",
             "--setenv", "PYTHONHASHSEED", "0"]
    return args


def _open_dirs(path: str) -> list[str]:
    """Create ``path``'s parents world-traversable: bwrap would copy their host modes
    (``/root`` is 0700), and the program's own uid must reach a bind below them."""
    out: list[str] = []
    for parent in reversed(Path(path).parents[:-1]):
        out += ["--perms", "0755", "--dir", str(parent)]
    return out


@functools.cache
def check_bwrap() -> None:
    """Raise ``SandboxUnavailable`` unless bwrap can start a sandbox here (probed once
    per process by running ``true`` in one)."""
    privileged = os.geteuid() == 0
    try:
        cmd = bwrap_command(privileged, 1 << 20)
        probe = subprocess.run([*cmd, "/usr/bin/env", "true"], capture_output=True,
                               timeout=30, text=True)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxUnavailable(f"bubblewrap could not be started ({exc}): "
                                 f"{INSTALL_HINT}") from exc
    if probe.returncode != 0:
        why = probe.stderr.strip() or f"exit status {probe.returncode}"
        raise SandboxUnavailable(
            f"bubblewrap cannot create a sandbox here ({why}). Unprivileged user "
            "namespaces may be disabled (sysctl kernel.unprivileged_userns_clone=1, or "
            "an AppArmor profile for bwrap on Ubuntu 24.04), or a container forbids them: "
            f"{INSTALL_HINT}")
