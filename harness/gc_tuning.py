"""Cyclic garbage collection tuned for a process harness owns (the CLI, rule workers).

CPython collects its youngest generation every 700 net allocations of container
objects, and every collection walks all young objects still alive. Two of harness's
processes allocate at a rate where that adds up:

- a CLI run with hundreds of requests in flight keeps their objects alive across
  collections, so the default thresholds walk them again and again;
- a math-verify worker builds and drops sympy expressions by the thousand.

The count of net allocations never goes below zero, so after a collection the objects
of the calls then in flight are freed without counting, while their successors count.
With more objects in flight than the threshold, the young generation is then collected
every ``threshold`` allocations whatever the real growth, and each collection walks
(and promotes) every call in flight: the cost grows with the concurrency. The CLI's
threshold therefore stays above what its calls in flight keep alive
(:func:`young_threshold`).

Objects made before the work starts (imported modules, sympy's tables, the config) are
frozen, so no collection walks them again. Memory stays flat: reference counting frees
almost everything, and the cycles that remain are collected, only in larger batches.
A program that embeds ``harness.api`` keeps its own settings: only processes harness
owns call :func:`tune_gc`. The measured costs are in ``bench/README.md``.
"""

from __future__ import annotations

import gc

#: Net allocations between two young-generation collections (CPython's default: 700).
YOUNG_THRESHOLD = 10_000

#: Container objects a model call in flight keeps alive (its task, request, response,
#: connection and pipeline records), with room to spare: 50 to 100 were measured.
OBJECTS_PER_CALL = 200


def young_threshold(concurrency: int = 0) -> int:
    """The young-generation threshold for a process with ``concurrency`` calls in
    flight: ``YOUNG_THRESHOLD``, or more when their objects would exceed it."""
    return max(YOUNG_THRESHOLD, OBJECTS_PER_CALL * concurrency)


def tune_gc(concurrency: int = 0) -> None:
    """Freeze what exists now and collect the young generation less often (see
    :func:`young_threshold`; ``concurrency`` is the calls the process keeps in flight)."""
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(young_threshold(concurrency), older, oldest)
