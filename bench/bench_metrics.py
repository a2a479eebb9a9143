"""Time ``metric_values`` (aggregate + 1,000-resample bootstrap) on NTREX and NQ-open outputs.

    PYTHONPATH=$PWD python bench/bench_metrics.py [N]

Scores N outputs (default: the whole set) with BleuEvaluator and NQEvaluator, then times
the aggregation of the stored details rows: the corpus score plus its interval, which
is what the results stage pays per (model, dataset). Prints best-of-3 wall seconds.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from harness.evaluators import build_evaluator
from harness.metrics.aggregate import metric_values

DATA = Path(__file__).resolve().parent.parent / "datasets" / "data"


def rows_for(evaluator, preds, refs):
    out = []
    for i, (p, r) in enumerate(zip(preds, refs, strict=True)):
        detail = evaluator.score_sample(p, r)
        out.append({"index": i, "replica": 0, "status": "ok", "reference": r, **detail})
    return out


def best_of(fn, repeats=3):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else None
    mt = [json.loads(x) for x in (DATA / "ntrex128" / "newstest2019.eng-deu.jsonl")
          .read_text(encoding="utf-8").splitlines()][:limit]
    qa = [json.loads(x) for x in (DATA / "nq_open" / "NQ-open.dev.jsonl")
          .read_text(encoding="utf-8").splitlines()][:limit]
    for name, cfg, preds, refs in [
            ("BleuEvaluator", dict(type="BleuEvaluator"),
             [" ".join(r["reference"].split()[:-1]) for r in mt], [r["reference"] for r in mt]),
            ("NQEvaluator", dict(type="NQEvaluator"),
             [r["answer"][0] if i % 2 else "no idea" for i, r in enumerate(qa)],
             [r["answer"] for r in qa])]:
        ev = build_evaluator(cfg)
        start = time.perf_counter()
        rows = rows_for(ev, preds, refs)
        per_sample = (time.perf_counter() - start) / len(rows)
        seconds = best_of(lambda ev=ev, rows=rows: metric_values(ev, rows))
        values = metric_values(ev, rows)
        shown = ", ".join(f"{k}={v.cell()}" for k, v in values.items())
        print(f"{name}: {len(rows)} samples, score_sample {1e6 * per_sample:.0f} µs each, "
              f"metric_values {seconds:.3f} s  ({shown})")


if __name__ == "__main__":
    main()
