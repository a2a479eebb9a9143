"""Every pair of MATH-500 answers the math fast path decides, held to math-verify's detail.

``tests/test_math_fast.py`` checks the fast path on each answer against itself, on
realistic replies and rewritings, and on a sample of cross pairs; this script checks
it on the whole cross product (one answer as the prediction, another as the gold,
both orders, the distinct answers only): every pair ``math_fast.fast_detail`` decides
is scored by ``MATHVerifyEvaluator(fast=False).score_sample`` in one worker per core,
and any detail that differs is printed. Too slow for CI (math-verify needs a few
milliseconds a pair); run it after changing ``math_fast`` or ``math_values``::

    python bench/check_math_fast.py                  # all pairs, one worker per core
    python bench/check_math_fast.py --limit 20000    # the first 20,000 decided pairs
    python bench/check_math_fast.py --fuzz 20000     # also 20,000 random answers
    python bench/check_math_fast.py --fuzz 20000 --seed 2 --fuzz-only

``--fuzz N`` adds ``harness.testing.math_pairs.random_answers(N)``: each against the
next, and against a MATH-500 answer, in both orders.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402

_EVALUATOR: Any = None


def _start() -> None:
    global _EVALUATOR
    from harness.evaluators.math_verify import MATHVerifyEvaluator

    _EVALUATOR = MATHVerifyEvaluator(fast=False)


def _check(chunk: list[tuple[str, str, dict[str, Any]]]) -> list[str]:
    wrong = []
    for pred, gold, fast in chunk:
        slow = _EVALUATOR.score_sample(pred, gold)
        if slow != fast:
            wrong.append(f"pred={pred!r} gold={gold!r}: fast {fast} != math-verify {slow}")
    return wrong


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--limit", type=int, default=0, help="check only this many pairs")
    parser.add_argument("--fuzz", type=int, default=0, help="random answers to add")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fuzz-only", action="store_true",
                        help="leave out the pairs of MATH-500 answers")
    bl.common_args(parser)
    args = parser.parse_args()

    from harness.evaluators.math_fast import fast_detail
    from harness.testing.math_pairs import math500_answers, random_answers

    answers = list(dict.fromkeys(math500_answers()))
    pairs = [] if args.fuzz_only else [(pred, gold) for gold in answers
                                       for pred in answers if pred != gold]
    fuzz = random_answers(args.fuzz, args.seed)
    for i, answer in enumerate(fuzz):
        other, known = fuzz[(i + 1) % len(fuzz)], answers[i % len(answers)]
        pairs += [(answer, other), (other, answer), (answer, known), (known, answer)]
    decided = [(pred, gold, fast) for pred, gold in pairs
               if (fast := fast_detail(pred, gold)) is not None]
    if args.limit:
        decided = decided[:args.limit]
    start = time.perf_counter()
    chunks = [decided[i:i + 200] for i in range(0, len(decided), 200)]
    with ProcessPoolExecutor(args.workers, initializer=_start) as pool:
        wrong = [w for found in pool.map(_check, chunks) for w in found]
    for line in wrong:
        print(line)
    bl.emit("check-math-fast", {"answers": len(answers), "fuzz": args.fuzz,
                                "seed": args.seed, "workers": args.workers},
            ["pairs", "decided by the fast path", "details differing", "wall s"],
            [{"pairs": len(pairs), "decided by the fast path": len(decided),
              "details differing": len(wrong), "wall s": time.perf_counter() - start}],
            as_json=args.json)
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
