"""The first process inside the sandbox: drop privileges, set limits, exec the program.

Run as ``python -I -S launcher.py STATUS_FD CONFIG_JSON`` with the program's source on
stdin. It runs before any untrusted code and imports only the standard library; it
must stay importable without the harness package (the sandbox does not see it).
Just before ``exec`` it writes ``exec`` to STATUS_FD, which is closed on exec (so the
program cannot write to it): the parent reads that marker to tell a sandbox that
failed (no marker, or ``fail`` after it when exec itself failed) from a program that
failed (the marker alone, then a non-zero exit).
"""

import json
import os
import resource
import sys


def _limit(which: int, value: int) -> None:
    resource.setrlimit(which, (value, value))


def main() -> None:
    """Prepare the process as the config says and replace it with the program."""
    status_fd = int(sys.argv[1])
    cfg = json.loads(sys.argv[2])
    source = sys.stdin.buffer.read()
    uid = cfg.get("uid")
    if uid is not None:
        # As host root, RLIMIT_NPROC is not enforced: run the program as a uid of its
        # own (one per concurrent sandbox), which also drops every capability.
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    os.chdir(cfg["cwd"])
    with open("program.py", "wb") as f:
        f.write(source)
    cpu = int(cfg["cpu_time"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    _limit(resource.RLIMIT_AS, int(cfg["memory"]))
    _limit(resource.RLIMIT_NPROC, int(cfg["processes"]))
    _limit(resource.RLIMIT_FSIZE, int(cfg["file_size"]))
    _limit(resource.RLIMIT_CORE, 0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.set_inheritable(status_fd, False)
    os.write(status_fd, b"exec\n")
    python = cfg["python"]
    try:
        os.execv(python, [python, "-I", "-S", "-B", "program.py"])
    except OSError as exc:  # the sandbox cannot run Python: not the program's failure
        os.write(status_fd, f"fail {exc}\n".encode())
        raise


if __name__ == "__main__":
    main()
