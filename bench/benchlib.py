"""Shared helpers of the benchmark scripts: child processes, the fake server, data, output.

Every benchmark script is run as ``python bench/<name>.py`` from anywhere; this module
sits next to them, so ``import benchlib`` works (the script's folder is ``sys.path[0]``).

Child processes are always stopped: :func:`measure` kills its child if anything goes
wrong while waiting (also ``KeyboardInterrupt`` and cancellation), and
:class:`ServerProcess` terminates the fake server in ``__exit__``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

# The same arithmetic workload the tests use (re-exported: scripts say bl.write_arith).
from harness.testing.workloads import (  # noqa: F401
    JUDGE_MODEL,
    JUDGE_TEMPLATE,
    arith_datasets,
    cascade_reply,
    expected_cascade,
    fake_judge,
    write_arith,
    write_judge_config,
)

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PY = sys.executable


# -- child processes ---------------------------------------------------------------------

def measure(cmd: Sequence[str], *, env: dict[str, str] | None = None, check: bool = True,
            timeout: float | None = None) -> dict[str, Any]:
    """Run ``cmd`` (cwd: the repository); wall s, CPU s and peak RSS MiB of that process.

    ``os.wait4`` gives the resource usage of exactly this child (``ru_maxrss`` is its own
    peak, not that of earlier children). Output goes to temporary files, not pipes, so a
    talkative child can never block on a full pipe. The child is killed if waiting for
    it fails or is interrupted, or if it runs past ``timeout`` seconds.
    """
    with _Child(cmd, env, timeout) as child:
        return child.finish(child.wait(), check)


# noqa below: ``timeout`` is the child's limit, as in measure(); _Child kills it then.
async def ameasure(cmd: Sequence[str], *, env: dict[str, str] | None = None,
                   check: bool = True, timeout: float | None = None) -> dict[str, Any]:  # noqa: ASYNC109
    """:func:`measure` with the waiting done in a thread, so this process's event loop (a
    fake server in it) keeps serving while the child runs; cancelling kills the child."""
    with _Child(cmd, env, timeout) as child:
        return child.finish(await asyncio.to_thread(child.wait), check)


async def ameasure_profiled(cmd: Sequence[str], profile: Path, *, rate: int = 200,
                            timeout: float | None = None) -> dict[str, Any]:  # noqa: ASYNC109
    """:func:`ameasure` with ``py-spy record --idle --threads -f raw`` attached to the child
    by PID (so the child's own CPU, not py-spy's, is what ``os.wait4`` reports; the first
    fraction of a second, before py-spy attaches, is not in the profile)."""
    import shutil

    with _Child(cmd, None, timeout) as child:
        # Popen returns at once (the child is waited for in a thread below).
        spy_cmd = [shutil.which("py-spy") or "py-spy", "record", "--idle", "--threads",
                   "-r", str(rate), "-f", "raw", "-o", str(profile),
                   "--pid", str(child.proc.pid)]
        spy = subprocess.Popen(spy_cmd, stdout=subprocess.DEVNULL,  # noqa: ASYNC220
                               stderr=subprocess.DEVNULL)
        try:
            result = child.finish(await asyncio.to_thread(child.wait), True)
            # py-spy writes the profile once it sees its target exit.
            await asyncio.to_thread(spy.wait, 120)
        finally:
            _kill(spy)
    return result


class _Child:
    """One measured child process; ``__exit__`` kills it unless it was reaped."""

    def __init__(self, cmd: Sequence[str], env: dict[str, str] | None,
                 timeout: float | None) -> None:
        self.cmd, self.env, self.timeout = list(cmd), env, timeout
        self.reaped = False

    def __enter__(self) -> _Child:
        import threading

        self.out, self.err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        self.start = time.perf_counter()
        self.proc = subprocess.Popen(self.cmd, cwd=ROOT, stdout=self.out, stderr=self.err,
                                     env={**os.environ, **(self.env or {})})
        self.timer = None
        if self.timeout is not None:
            self.timer = threading.Timer(self.timeout, _kill, (self.proc,))
            self.timer.start()
        return self

    def wait(self) -> tuple[int, Any]:
        """Block until the child exits: ``(wait status, rusage)``."""
        _, status, usage = os.wait4(self.proc.pid, 0)
        self.reaped = True
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        return status, usage

    def finish(self, waited: tuple[int, Any], check: bool) -> dict[str, Any]:
        _, usage = waited
        wall = time.perf_counter() - self.start
        self.out.seek(0), self.err.seek(0)
        stdout = self.out.read().decode(errors="replace")
        stderr = self.err.read().decode(errors="replace")
        if check and self.proc.returncode != 0:
            raise SystemExit(f"{' '.join(self.cmd)} failed ({self.proc.returncode}):\n"
                             f"{stdout}\n{stderr}")
        return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
                "user": usage.ru_utime, "sys": usage.ru_stime,
                "rss_mib": usage.ru_maxrss / 1024, "returncode": self.proc.returncode,
                "stdout": stdout, "stderr": stderr}

    def __exit__(self, *exc: object) -> None:
        if self.timer is not None:
            self.timer.cancel()
        if not self.reaped:
            _kill(self.proc)
            try:
                os.waitpid(self.proc.pid, 0)  # reap (a thread in wait4 may beat us to it)
            except ChildProcessError:
                pass
        self.out.close(), self.err.close()


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            proc.kill()
        except ProcessLookupError:
            pass


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, timeout: float = 20.0, proc: subprocess.Popen | None = None) -> None:
    """Wait until something listens on 127.0.0.1:``port``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise SystemExit(f"fake server exited early ({proc.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("fake server did not start")


class ServerProcess:
    """``python -m harness.testing.fake_openai`` as a child process, stopped on exit.

    ``with ServerProcess(latency=0.1, reply='The answer is 42.') as server:`` gives
    ``server.url``; after the block ``server.stats`` holds the JSON line of statistics
    the server prints when it gets SIGTERM.
    """

    def __init__(self, *, latency: float = 0.0, reply: str | None = None,
                 extra: Sequence[str] = ()) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.cmd = [PY, "-m", "harness.testing.fake_openai", "--port", str(self.port),
                    "--latency", str(latency), *(["--reply", reply] if reply else []),
                    *extra]
        self.proc: subprocess.Popen | None = None
        self.stats: dict[str, Any] | None = None

    def __enter__(self) -> ServerProcess:
        self.proc = subprocess.Popen(self.cmd, cwd=ROOT, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        try:
            wait_for_port(self.port, proc=self.proc)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        proc = self.proc
        if proc is None:
            return
        try:
            if proc.poll() is None:
                proc.terminate()
            out = proc.communicate(timeout=15)[0].decode().strip().splitlines()
            self.stats = json.loads(out[-1]) if out else None
        except (subprocess.TimeoutExpired, ValueError):
            pass
        finally:
            _kill(proc)
            proc.wait()


# -- data and configs -------------------------------------------------------------------

def write_simple_config(path: Path, data: Path, max_out_len: int = 32) -> Path:
    """Exact match after ``gsm8k_postprocess``, no judge (the ``bench_pipeline`` config)."""
    path.write_text(
        "from harness import (AccEvaluator, CustomDataset, GenInferencer, RawPromptTemplate,\n"
        "                     ZeroRetriever, gsm8k_dataset_postprocess, gsm8k_postprocess)\n"
        + arith_datasets(data, "dict(evaluator=dict(type=AccEvaluator), "
                               "pred_postprocessor=dict(type=gsm8k_postprocess), "
                               "dataset_postprocessor=dict(type=gsm8k_dataset_postprocess))",
                         abbr="bench", max_out_len=max_out_len))
    return path


def is_judge(body: dict[str, Any]) -> bool:
    """Whether a request body is addressed to the judge."""
    return body.get("model") == JUDGE_MODEL


def expected_rule_failures(n: int) -> int:
    """How many rows of ``write_arith(n)`` ``cascade_reply`` answers in a way the rule fails."""
    return expected_cascade(n)["rule_failures"]


def harness_run(config: Path, work: Path, *extra: str) -> list[str]:
    """``python -m harness run CONFIG -q -w WORK ...``."""
    return [PY, "-m", "harness", "run", str(config), "-q", "-w", str(work), *extra]


def read_results(work: Path) -> list[dict[str, Any]]:
    """The per-dataset result objects of a finished run (``summary.json``)."""
    return json.loads((work / "summary.json").read_text())["results"]


# -- output ---------------------------------------------------------------------------

def today() -> str:
    """Today's date, ISO."""
    return _dt.date.today().isoformat()


def revision() -> str:
    """The checked-out commit (short), read without touching git's state; ``?`` if unknown."""
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                             capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


def params_text(params: dict[str, Any]) -> str:
    """``N=10000 C=64 L=0.1`` from a dict of the command's parameters."""
    return " ".join(f"{k}={v}" for k, v in params.items())


def fmt(value: Any, digits: int = 2) -> str:
    """Numbers with ``digits`` decimals (ints as is), ``-`` for None."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def document(bench: str, params: dict[str, Any], rows: Iterable[dict[str, Any]],
             extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The machine-readable result of one table."""
    return {"bench": bench, "date": today(), "revision": revision(), "params": params,
            "rows": list(rows), **(extra or {})}


def print_json(doc: Any) -> None:
    """Print ``doc`` as indented JSON (anything not JSON-native as ``str``)."""
    print(json.dumps(doc, indent=1, default=str))


def print_table(params: dict[str, Any], columns: Sequence[str],
                rows: Iterable[dict[str, Any]], notes: Sequence[str] = (),
                digits: dict[str, int] | None = None) -> None:
    """A markdown table: date, parameters, then ``columns`` (values through :func:`fmt`,
    with ``digits[column]`` decimals where given, else 2)."""
    digits = digits or {}
    head = ["date", "params", *columns]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    ptext = params_text(params)
    for row in rows:
        cells = [today(), ptext, *(fmt(row.get(c), digits.get(c, 2)) for c in columns)]
        print("| " + " | ".join(cells) + " |")
    for note in notes:
        print(note)


def emit(bench: str, params: dict[str, Any], columns: Sequence[str],
         rows: Iterable[dict[str, Any]], *, as_json: bool, extra: dict[str, Any] | None = None,
         notes: Sequence[str] = (), digits: dict[str, int] | None = None) -> None:
    """Print one markdown table (:func:`print_table`) or one JSON object (:func:`document`)."""
    rows = list(rows)
    if as_json:
        print_json(document(bench, params, rows, extra))
    else:
        print_table(params, columns, rows, notes, digits)


def common_args(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``--json`` for every benchmark; also makes SIGTERM clean up like Ctrl-C."""
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    exit_on_sigterm()
    return parser


def exit_on_sigterm() -> None:
    """Turn SIGTERM into ``KeyboardInterrupt`` so ``finally`` blocks stop the children
    (Python's default for SIGTERM is to die on the spot and leave them running)."""
    import signal

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, handler)


def busy_cores(seconds: float = 1.0) -> float:
    """How many CPUs were busy (all processes, from ``/proc/stat``) over ``seconds``:
    measured before a benchmark starts, it shows how loaded the machine already is."""
    def snap() -> tuple[int, int]:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
        idle = fields[3] + fields[4]
        return sum(fields[:8]) - idle, sum(fields[:8])

    busy0, total0 = snap()
    time.sleep(seconds)
    busy1, total1 = snap()
    cpus = os.cpu_count() or 1
    return round(cpus * (busy1 - busy0) / max(1, total1 - total0), 2)


def median(values: Iterable[float]) -> float:
    """The median."""
    return statistics.median(list(values))


def children(pid: int | None = None) -> list[int]:
    """Direct child processes of ``pid`` (default: this process), from ``/proc``."""
    pid = pid or os.getpid()
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def kill_children(keep: Iterable[int] = ()) -> list[int]:
    """Kill and reap this process's remaining children (e.g. worker processes left behind
    by an error), except those in ``keep`` (started earlier, by someone else); return the
    ids killed."""
    import signal

    keep = set(keep)
    left = [pid for pid in children() if pid not in keep]
    for child in left:
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            continue
    for child in left:
        try:
            os.waitpid(child, 0)
        except ChildProcessError:
            pass
    return left
