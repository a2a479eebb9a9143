"""Cyclic garbage collection tuned for a process harness owns (the CLI, rule workers).

CPython collects its youngest generation every 700 net allocations of container
objects, and every collection walks all young objects still alive. Two of harness's
processes allocate at a rate where that adds up:

- a CLI run with hundreds of requests in flight keeps their objects alive across
  collections, so the default thresholds walk them again and again;
- a math-verify worker builds and drops sympy expressions by the thousand.

The measured cost of both is in ``bench/README.md``.

Objects made before the work starts (imported modules, sympy's tables, the config) are
frozen, so no collection walks them again. Memory stays flat: reference counting frees
almost everything, and the cycles that remain are collected, only in larger batches.
A program that embeds ``harness.api`` keeps its own settings: only processes harness
owns call :func:`tune_gc`.
"""

from __future__ import annotations

import gc

#: Net allocations between two young-generation collections (CPython's default: 700).
YOUNG_THRESHOLD = 10_000


def tune_gc() -> None:
    """Freeze what exists now and collect the young generation less often."""
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)
