"""Extraction and cheap rule checks of a backlog of replies, in a worker process.

At high concurrency the event loop's thread is the bottleneck, and the extraction
postprocessors are most of what it does per reply beyond HTTP (``bench/README.md``).
When replies arrive faster than the loop scores them they pile up in the score stage's
stream; the stage then sends them in one batch to a worker process, which runs the same
``extract`` and ``score_sample`` as the loop would, on the core the loop leaves idle.
Until scoring takes a large share of the loop's time (``HOT_SHARE``), replies are scored
on the spot by the task that holds them, as without offloading; a trickle that reaches
the score stage is scored there: a worker round trip costs more than a check.

Each worker gets the datasets' rules once, as a warm-up (``install``), not with every
batch. Only datasets whose evaluator needs nothing but a plain ``score_sample`` (not
math-verify, which has its own per-check worker calls and time limits, nor code
execution) and whose rules are made of harness's and the standard library's code alone
are offloaded (``offloadable``); the others are scored on the loop as before.
"""

from __future__ import annotations

import functools
import io
import os
import pickle
import sys
import sysconfig
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..outcomes import HARNESS_DIR
from .extract import Extraction, Rules, extract

#: Share of the event loop's time spent scoring in callers' tasks, over a window of
#: ``WINDOW`` seconds, past which replies go to the score stage to be batched: below
#: it the loop has time to spare, and a worker's start-up and round trips cost more
#: than they save (``bench/README.md``).
HOT_SHARE = 0.15
WINDOW = 1.0
#: Replies of one batch at most (one pickle each way).
BATCH = 256
#: Fewer replies waiting than this are scored on the spot.
MIN_BATCH = 16
#: Seconds the score stage waits for a batch to build when replies come one at a time
#: (a single producer, such as the reader re-scoring stored predictions).
GATHER = 0.002
#: Largest pickled rules sent to a worker: a warm-up is written to an empty pipe
#: without waiting, which a pipe buffer's worth never blocks.
MAX_RULES_BYTES = 32 * 1024
#: A batch's time limit in the worker: this, plus ``SECONDS_PER_CHAR`` for each
#: character of its replies (extraction is linear in a reply's length, a few µs per
#: hundred characters); past it the worker is killed and the batch is scored on the loop.
BATCH_TIMEOUT = 60.0
SECONDS_PER_CHAR = 1e-5

#: One reply to check: (dataset, text, finish_reason, row, reference).
Item = tuple[str, str | None, str | None, Mapping[str, Any], Any]
#: What a worker made of one reply: its extraction and the evaluator's detail (None
#: when nothing was extracted), or None when that raised (the loop scores it again,
#: so the error is reported as it would be there).
Checked = tuple[Extraction, dict[str, Any] | None] | None

_RULES: dict[str, Rules] = {}
_CLI = False


def started_by_cli() -> None:
    """Called by the ``harness`` script's entry point (``cli.console_main``): its
    wrapper, the main module, is guarded, so workers are safe to spawn under it."""
    global _CLI
    _CLI = True


def can_spawn() -> bool:
    """Whether starting a worker process is safe without the user's say. A spawned
    worker imports the program's main module again, unless it is a package's
    ``__main__`` (``python -m harness``, ``python -m pytest``), which multiprocessing
    never re-runs, or the CLI's guarded script; a script that runs harness without
    ``if __name__ == "__main__":`` would run again inside the worker (the README asks
    for that guard only for math-verify's workers)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return _CLI or (spec is not None and spec.name.endswith(".__main__"))


def offloadable(rules: Mapping[str, Rules]) -> tuple[bytes, frozenset[str]] | None:
    """The pickled rules of the datasets a worker can score, and their names; None if
    there are none. A dataset qualifies when its evaluator needs only ``score_sample``
    (not math-verify's workers, not code execution, no time limit of its own) and its
    rules are made only of harness's and the standard library's code: a user's module
    imported again in a worker would not carry the state the run gave it, so its
    verdicts could differ. Datasets are taken in order while the rules fit
    ``MAX_RULES_BYTES``."""
    chosen: dict[str, Rules] = {}
    size = 0
    for name, rule in rules.items():
        checker = rule.checker
        if (checker is None or checker.needs_worker or checker.executes
                or checker.quiet_timeout() is not None):
            continue
        try:
            blob = _pure_pickle(rule)
        except Exception:  # noqa: BLE001 - a config's own function, a lambda, ...
            continue
        if size + len(blob) > MAX_RULES_BYTES:
            continue
        chosen[name] = rule
        size += len(blob)
    if not chosen:
        return None
    return pickle.dumps(chosen, pickle.HIGHEST_PROTOCOL), frozenset(chosen)


class _NotPure(Exception):
    """The rules refer to code outside harness and the standard library."""


# Where harness's own code and the standard library's live: code from anywhere else
# (a user's module, whatever its name) is not sent to a worker.
_STDLIB = tuple(Path(sysconfig.get_paths()[key]).resolve() for key in ("stdlib", "platstdlib"))


def _trusted(obj: Any) -> bool:
    """Whether ``obj``, a class or function, is harness's or the standard library's:
    judged by files, not by names. Both the module pickle will import it from and,
    for a function, the file its code was written in must be trusted (a user's function
    wrapped by ``functools.wraps`` has functools' code but the user's module)."""
    name = getattr(obj, "__module__", None)
    if not name:  # a method of a built-in type ("x".strip, str.lower): judged by the type
        owner = getattr(obj, "__objclass__", None)
        if owner is None and hasattr(obj, "__self__"):
            owner = type(obj.__self__)
        return isinstance(owner, type) and owner is not obj and _trusted(owner)
    module = sys.modules.get(name)
    if module is None:
        return False
    module_file = getattr(module, "__file__", None)
    if module_file is None:  # a built-in module (builtins, _functools)
        return name in sys.builtin_module_names
    files = [module_file]
    code = getattr(obj, "__code__", None)
    if isinstance(code, types.CodeType) and not code.co_filename.startswith("<"):
        files.append(code.co_filename)  # "<frozen posixpath>": the module's file says
    return all(_trusted_file(file) for file in files)


def _trusted_file(filename: str) -> bool:
    """Whether ``filename`` is in harness's source or the standard library's."""
    path = Path(os.path.realpath(filename))
    return path.is_relative_to(HARNESS_DIR) or (
        any(path.is_relative_to(root) for root in _STDLIB) and "site-packages" not in path.parts)


class _PurePickler(pickle.Pickler):
    """A pickler that refuses any object whose class, and any class or function, that
    is not harness's or the standard library's (``reducer_override`` sees each one
    before it is pickled)."""

    def reducer_override(self, obj: Any) -> Any:
        for code in (obj, type(obj)) if callable(obj) or isinstance(obj, type) else (
                type(obj),):
            if not _trusted(code):
                raise _NotPure(f"{code!r} is not harness's or the standard library's")
        return NotImplemented


def _pure_pickle(rule: Rules) -> bytes:
    out = io.BytesIO()
    _PurePickler(out, pickle.HIGHEST_PROTOCOL).dump(rule)
    return out.getvalue()


def timeout(items: list[Item]) -> float:
    """The time limit of a batch of ``items`` in a worker."""
    return BATCH_TIMEOUT + SECONDS_PER_CHAR * sum(len(text or "") for _, text, *_ in items)


def installer(blob: bytes) -> Callable[[], None]:
    """The warm-up that gives a worker the rules ``blob`` holds."""
    return functools.partial(install, blob)


def install(blob: bytes) -> None:
    """Worker side: keep the rules for ``check``."""
    _RULES.update(pickle.loads(blob))


def check(items: list[Item]) -> list[Checked]:
    """Worker side: extract and check each reply with its dataset's installed rules."""
    out: list[Checked] = []
    for dataset, text, finish_reason, row, reference in items:
        try:
            rules = _RULES[dataset]
            found = extract(rules, text, finish_reason, row, reference)
            detail = None
            if not found.failed:
                assert rules.checker is not None
                detail = rules.checker.score_sample(found.prediction, found.reference, row)
            out.append((found, detail))
        except Exception:  # noqa: BLE001 - the loop scores it again and reports why
            out.append(None)
    return out
