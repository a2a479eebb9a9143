"""The judge's CPU per verdict besides its HTTP call, on realistic replies.

A judged sample costs, besides the request: its judge prompt (the template filled, the
reply defused against injection: ``GenericLLMEvaluator.render``), its verdict key, the
verdict parsed, the result combined, its outcome row and its details row. Each step runs
here on its own, in this process, for every row of the shipped MATH-500 data with the
row's worked ``solution`` as the model's reply (a few hundred characters, LaTeX and
Asymptote code included: brackets and colons, which defusing inspects) and the shipped
``grader`` template, as ``datasets/math500_cascade.py`` judges; a second workload has the
short replies of ``bench_rerun.py``'s cascade (``"It is 41 plus a unit."``). Reported:
CPU µs per verdict for each step, best of ``--repeat``.

``bench_rerun.py --profile first`` measures the same work inside a run (the judge stage
against the model stage); this one shows how it grows with the reply.

    python bench/bench_judge_cpu.py
    python bench/bench_judge_cpu.py --repeat 10 --json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib import common_args, emit  # noqa: E402

from harness import GenericLLMEvaluator, RawPromptTemplate, judge_template  # noqa: E402
from harness.judge.runner import combine  # noqa: E402
from harness.judge.verdict import parse_verdict  # noqa: E402
from harness.keys import request_keys  # noqa: E402
from harness.outcomes import judged_row  # noqa: E402
from harness.records import (  # noqa: E402
    JudgeRequest,
    JudgeTask,
    SampleResult,
    VerdictRecord,
)
from harness.results import details_line  # noqa: E402
from harness.testing.math_pairs import MATH500  # noqa: E402
from harness.testing.workloads import JUDGE_TEMPLATE  # noqa: E402


def workloads() -> dict[str, tuple[GenericLLMEvaluator, list[tuple[dict[str, Any], str]]]]:
    """name → (judge, [(dataset row, reply)])."""
    rows = [json.loads(line) for line in MATH500.read_text().splitlines() if line]
    grader = GenericLLMEvaluator(prompt_template=judge_template("grader"))
    short = GenericLLMEvaluator(prompt_template=dict(
        type=RawPromptTemplate, messages=[dict(role="user", content=JUDGE_TEMPLATE)]))
    arith = [({"question": f"What is {a} + {a + 1}?", "answer": str(2 * a + 1)},
              f"It is {2 * a} plus a unit.") for a in range(len(rows))]
    return {"MATH-500 solutions, grader template": (grader, [(r, r["solution"]) for r in rows]),
            "short replies, bench_rerun's template": (short, arith)}


def steps(judge: GenericLLMEvaluator,
          samples: list[tuple[dict[str, Any], str]]) -> dict[str, Callable[[], None]]:
    """Each step of the judge's per-verdict work over every sample, in pipeline order
    (each step's inputs are made beforehand, by the step before it)."""
    key = request_keys("verdict", "chat", judge={"endpoint": "http://judge/v1", "model": "j"},
                       gen={"temperature": 0.0})
    tasks = []
    for i, (row, reply) in enumerate(samples):
        base = SampleResult("d", "m", i, 0, "ok", ({"role": "user", "content": "q"},), reply,
                            "x", row["answer"], False, None, {"pred": "x", "correct": False},
                            rule_correct=False)
        tasks.append(JudgeTask(base, row, reply, row["answer"], True, outcome_key=f"o{i}"))
    messages = [judge.render(t.row, t.prediction, t.reference) for t in tasks]
    keys = [key(m, 0) for m in messages]
    verdicts = [VerdictRecord(k, "judge", "m", "d", t.result.index, 0, "ok", "A", "A",
                              requests=1) for k, t in zip(keys, tasks, strict=True)]
    results = [combine(t, v, m) for t, v, m in zip(tasks, verdicts, messages, strict=True)]
    requests = [JudgeRequest(t, m, k) for t, m, k in zip(tasks, messages, keys, strict=True)]
    return {
        "render (fill + defuse)": lambda: [judge.render(t.row, t.prediction, t.reference)
                                           for t in tasks] and None,
        "verdict key": lambda: [key(m, 0) for m in messages] and None,
        "parse verdict": lambda: [parse_verdict("A") for _ in tasks] and None,
        "combine": lambda: [combine(t, v, m) for t, v, m in
                            zip(tasks, verdicts, messages, strict=True)] and None,
        "outcome row": lambda: [judged_row(q, r) for q, r in
                                zip(requests, results, strict=True)] and None,
        "details row": lambda: [details_line(r.to_json()) for r in results] and None,
    }


def best_us(step: Callable[[], None], count: int, repeat: int) -> float:
    """The lowest CPU time of ``repeat`` runs of ``step``, in µs per sample."""
    step()  # warm-up: caches (the fold table, compiled patterns) filled
    times = []
    for _ in range(repeat):
        start = time.process_time()
        step()
        times.append(time.process_time() - start)
    return 1e6 * min(times) / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each step (best kept)")
    common_args(parser)
    args = parser.parse_args()
    rows = []
    counts = set()
    for name, (judge, samples) in workloads().items():
        counts.add(len(samples))
        measured = {step: best_us(fn, len(samples), args.repeat)
                    for step, fn in steps(judge, samples).items()}
        chars = sum(len(reply) for _, reply in samples) / len(samples)
        rows.append({"workload": name, "reply chars": round(chars),
                     **{f"{step} µs": us for step, us in measured.items()},
                     "total µs": sum(measured.values())})
    columns = list(rows[0])
    emit("judge_cpu", {"samples": "/".join(map(str, sorted(counts))), "repeat": args.repeat},
         columns, rows, as_json=args.json)


if __name__ == "__main__":
    main()
