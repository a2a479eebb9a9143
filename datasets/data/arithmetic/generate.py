"""Writes test.jsonl: 40 one-digit sums, differences and products, the same every time.

    python datasets/data/arithmetic/generate.py
"""

import json
import random
from pathlib import Path

rng = random.Random(20261203)
rows = []
for i in range(40):
    op = "+-*"[i % 3]
    a, b = rng.randint(1, 9), rng.randint(1, 9)
    if op == "-" and a < b:
        a, b = b, a
    rows.append({"question": f"{a} {op} {b} =", "answer": str(eval(f"{a}{op}{b}"))})
with open(Path(__file__).with_name("test.jsonl"), "w", encoding="utf-8") as out:
    for row in rows:
        out.write(json.dumps(row, ensure_ascii=False) + "\n")
