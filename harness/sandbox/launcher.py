"""The first process inside the sandbox: drop privileges, set limits, exec the program
(Python running ``RUNNER``, which runs ``program.py`` as a module named ``program``).

Run as ``python -I -S launcher.py STATUS_FD CONFIG_JSON`` with the program's source on
stdin. It runs before any untrusted code and imports only the standard library; it
must stay importable without the harness package (the sandbox does not see it).
STATUS_FD is handed on to ``RUNNER``, which writes ``run`` to it and closes it before
it reads the program (so the program cannot write to it): the parent reads that
marker to tell a sandbox that failed (no marker: bwrap, this launcher, or a Python
that could not start under the limits, none of which depends on the program) from a
program that failed (the marker, then a non-zero exit).
"""

import ctypes
import json
import os
import resource
import sys

_CLONE_NEWUSER = 0x10000000
_PR_SET_DUMPABLE = 4

#: What the interpreter runs (``-c``, with STATUS_FD and ``program.py`` as arguments)
#: instead of ``python program.py``: the program as a module named ``program``, not
#: ``__main__``, as HumanEval's and OpenCompass's references ``exec`` it, so a reply's
#: ``if __name__ == "__main__":`` block stays unrun. It writes the marker before it
#: touches the program, so everything before the marker is the same for every program.
#: Uncaught exceptions are shown from the program's first frame, as before.
RUNNER = """\
import os, sys
def _hook(kind, value, tb, _show=sys.excepthook, _runner=globals()):
    if tb is not None and tb.tb_frame.f_globals is _runner:
        value = value.with_traceback(tb.tb_next)
    _show(kind, value, value.__traceback__)
sys.excepthook = _hook
status = int(sys.argv[1])
sys.argv = sys.argv[2:]
program = type(sys)("program")
program.__file__ = os.path.abspath(sys.argv[0])
sys.modules["program"] = program
os.write(status, b"run\\n")
os.close(status)
with open(program.__file__, "rb") as source:
    code = compile(source.read(), program.__file__, "exec", dont_inherit=True)
exec(code, program.__dict__)
"""


def _limit(which: int, value: int) -> None:
    resource.setrlimit(which, (value, value))


def _no_user_namespaces(uid: int) -> None:
    """Enter a user namespace of our own (``uid`` mapped to itself) that allows none
    below it: as host root bwrap creates none to forbid nesting in, and a program that
    became root of its own could mount a tmpfs of any size in the host's memory."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_DUMPABLE, 1)  # cleared by the uid switch; /proc/self needs it
    if libc.unshare(_CLONE_NEWUSER) != 0:
        return  # user namespaces are forbidden to this uid, so to the program too
    for name, text in (("uid_map", f"{uid} {uid} 1"), ("setgroups", "deny"),
                       ("gid_map", f"{uid} {uid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)
    with open("/proc/sys/user/max_user_namespaces", "w") as f:
        f.write("0")


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
    # Each open file (a memfd) can hold file_size bytes of the host's memory outside the
    # address-space limit: this many of them hold no more than the memory limit.
    files = max(16, int(cfg["memory"]) // int(cfg["file_size"]))
    _limit(resource.RLIMIT_NOFILE, min(files, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    if uid is not None:
        _no_user_namespaces(uid)  # after RLIMIT_NPROC: a new namespace inherits it
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.set_inheritable(status_fd, True)  # RUNNER writes the marker, then closes it
    python = cfg["python"]
    os.execv(python, [python, "-I", "-S", "-B", "-c", RUNNER, str(status_fd), "program.py"])


if __name__ == "__main__":
    main()
