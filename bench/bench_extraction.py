"""Extraction fidelity: shipped configs against the hand-labelled corpus.

Every row of ``tests/extraction_corpus/*.jsonl`` (a model reply and whether a careful
grader counts it correct) is scored by every shipped benchmark config of its task,
through the pipeline's own rule stage (``harness.testing.corpus``). Printed per config:
agreement with the labels, false positives (a wrong reply credited) and false negatives
(a right reply refused), overall and per category; ``--show`` lists the rows where a
config disagrees, with what it extracted.

    python bench/bench_extraction.py
    python bench/bench_extraction.py --show          # and every disagreement
    python bench/bench_extraction.py --json
    python bench/bench_extraction.py --corpus /path/to/other/labelled/set
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib import common_args, emit  # noqa: E402

from harness.testing.corpus import (  # noqa: E402
    CORPUS,
    STRICT_CATEGORIES,
    agreement,
    grouped,
    load_corpus,
    score_corpus,
    shipped_configs,
)


def main() -> None:
    """Score the corpus and print the tables."""
    parser = common_args(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument("--show", action="store_true", help="list every disagreement")
    parser.add_argument("--config", help="only configs whose name contains this")
    parser.add_argument("--corpus", type=Path, default=CORPUS,
                        help="a folder of corpus files (default: tests/extraction_corpus)")
    args = parser.parse_args()

    rows = load_corpus(args.corpus)
    configs = [c for c in shipped_configs() if not args.config or args.config in c.name]
    verdicts = anyio.run(score_corpus, configs, rows)

    table = []
    for (name, task), counts in grouped(verdicts, "config", "task").items():
        mine = [v for v in verdicts if v.config == name]
        strict = agreement(v for v in mine if v.row.category in STRICT_CATEGORIES)
        table.append({"config": name, "task": task, "rows": counts.rows,
                      "agree %": 100 * counts.rate, "FP": counts.false_positives,
                      "FN": counts.false_negatives,
                      "FP injection/hedge/truncated": strict.false_positives})
    categories = [{"config": name, "category": category, "rows": c.rows,
                   "agree %": 100 * c.rate, "FP": c.false_positives, "FN": c.false_negatives}
                  for (name, category), c in grouped(verdicts, "config", "category").items()]
    params = {"rows": len(rows)}
    emit("extraction", params,
         ["config", "task", "rows", "agree %", "FP", "FN", "FP injection/hedge/truncated"],
         table, as_json=args.json, extra={"categories": categories},
         digits={"agree %": 1})
    if args.json:
        return
    print()
    emit("extraction-categories", params, ["config", "category", "rows", "agree %", "FP", "FN"],
         categories, as_json=False, digits={"agree %": 1})
    if args.show:
        print()
        for v in verdicts:
            if not v.agrees:
                kind = "FP" if v.credited else "FN"
                print(f"{kind} {v.config} {v.row.id} [{v.row.kind}] ref={v.row.reference!r} "
                      f"extracted={v.extracted!r} status={v.status}")
                print("    " + v.row.reply.replace("\n", "\n    ")[:600])


if __name__ == "__main__":
    main()
