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
batch. Only datasets whose rules pickle and whose evaluator needs nothing but a plain
``score_sample`` are offloaded (not math-verify, which has its own per-check worker
calls and time limits, nor code execution); a config's own functions defined in the
config file do not pickle, so their datasets are scored on the loop as before.
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Callable, Mapping
from typing import Any

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
#: Largest pickled rules sent to a worker: a warm-up is written to an empty pipe
#: without waiting, which a pipe buffer's worth never blocks.
MAX_RULES_BYTES = 32 * 1024
#: Seconds a worker may take over one batch (microseconds per reply are expected) before
#: it is killed and the batch is scored on the loop instead.
BATCH_TIMEOUT = 60.0

#: One reply to check: (dataset, text, finish_reason, row, reference).
Item = tuple[str, str | None, str | None, Mapping[str, Any], Any]
#: What a worker made of one reply: its extraction and the evaluator's detail (None
#: when nothing was extracted), or None when that raised (the loop scores it again,
#: so the error is reported as it would be there).
Checked = tuple[Extraction, dict[str, Any] | None] | None

_RULES: dict[str, Rules] = {}


def offloadable(rules: Mapping[str, Rules]) -> tuple[bytes, frozenset[str]] | None:
    """The pickled rules of the datasets a worker can score, and their names; None if
    there are none or they do not pickle small."""
    chosen = {}
    for name, rule in rules.items():
        evaluator = rule.evaluator
        if (evaluator is None or evaluator.needs_worker or evaluator.executes
                or evaluator.quiet_timeout() is not None):
            continue
        try:
            pickle.dumps(rule, pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - a config's own function, a lambda, ...
            continue
        chosen[name] = rule
    if not chosen:
        return None
    blob = pickle.dumps(chosen, pickle.HIGHEST_PROTOCOL)
    return (blob, frozenset(chosen)) if len(blob) <= MAX_RULES_BYTES else None


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
                assert rules.evaluator is not None
                detail = rules.evaluator.score_sample(found.prediction, found.reference, row)
            out.append((found, detail))
        except Exception:  # noqa: BLE001 - the loop scores it again and reports why
            out.append(None)
    return out
