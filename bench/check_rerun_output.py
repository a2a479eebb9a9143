"""Whether a change to the rerun path keeps its output byte for byte: a digest of it.

A speed-up of the rerun (extraction, scoring, details writing) must leave every
details row and every result as it was. ``make`` runs a cascade config once against an
in-process fake server, on the arithmetic rows of ``bench_rerun.py`` (replies by
``a % 4``) and every hand-labelled GSM8K reply of ``tests/extraction_corpus`` (hedges,
corrections, units, truncations: the postprocessor's harder paths), and keeps the
finished work directory. ``digest`` reruns a copy of it with the code on
``PYTHONPATH`` (0 requests) and prints the sha256 of each file under ``details/`` and
``results/`` and of ``summary.json``, with the timing field (``elapsed_seconds``)
dropped and the copy's path replaced by ``WORK``. Two digests from two versions of the
code must be equal::

    PYTHONPATH=$PWD python bench/check_rerun_output.py make /tmp/rerun-fixture -n 10000
    PYTHONPATH=$PWD python bench/check_rerun_output.py digest /tmp/rerun-fixture > before.json
    # … change the code …
    PYTHONPATH=$PWD python bench/check_rerun_output.py digest /tmp/rerun-fixture > after.json
    diff before.json after.json
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import benchlib as bl

from harness.testing import FakeOpenAI, echo_last_user

CORPUS = bl.ROOT / "tests" / "extraction_corpus" / "gsm8k.jsonl"
#: Fields that differ from run to run whatever the code does.
TIMING_FIELDS = ("elapsed_seconds",)


def write_data(path: Path, n: int) -> dict[str, str]:
    """``n`` arithmetic rows, then one row per corpus reply; the corpus question → reply."""
    bl.write_arith(path, n)
    replies = {}
    with open(path, "a", encoding="utf-8") as fh:
        for line in CORPUS.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            question = f"[{row['id']}] {row['question']}"  # corpus questions repeat
            replies[question] = row["reply"]
            fh.write(json.dumps({"question": question, "answer": row["reference"]}) + "\n")
    return replies


async def make(fixture: Path, n: int) -> None:
    """Run the config once into ``fixture/work`` (config and data kept beside it)."""
    fixture.mkdir(parents=True)  # noqa: ASYNC240 (set-up before the server starts)
    replies = write_data(fixture / "data.jsonl", n)

    def respond(body: dict[str, Any]) -> str:
        if bl.is_judge(body):
            return bl.fake_judge(body)
        return replies.get(echo_last_user(body)) or bl.cascade_reply(body)

    async with FakeOpenAI(respond, models=("fake-model", bl.JUDGE_MODEL),
                          record=False) as server:
        cfg = bl.write_judge_config(fixture / "cfg.py", fixture / "data.jsonl",
                                    server.base_url)
        proc = await asyncio.create_subprocess_exec(
            *bl.harness_run(cfg, fixture / "work", "-c", "64"), cwd=bl.ROOT)
        if await proc.wait() != 0:
            sys.exit(f"the first run failed (exit {proc.returncode})")


def digest(fixture: Path) -> dict[str, str]:
    """Rerun a copy of ``fixture/work``; sha256 of each output file, timing dropped."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        shutil.copytree(fixture / "work", work)
        subprocess.run(bl.harness_run(fixture / "cfg.py", work), cwd=bl.ROOT, check=True,
                       stdout=sys.stderr)
        files = sorted([*work.glob("details/**/*.jsonl"), *work.glob("results/**/*.json"),
                        work / "summary.json"])
        out = {}
        for path in files:
            # Results name their details file, under this temporary directory.
            data = path.read_bytes().replace(str(work).encode(), b"WORK")
            if path.suffix == ".json":
                parsed = json.loads(data)
                for name in TIMING_FIELDS:
                    parsed.pop(name, None)
                data = json.dumps(parsed, sort_keys=True).encode()
            out[str(path.relative_to(work))] = hashlib.sha256(data).hexdigest()
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["make", "digest"])
    parser.add_argument("fixture", type=Path, help="the fixture directory")
    parser.add_argument("-n", type=int, default=10_000, help="arithmetic rows (make)")
    args = parser.parse_args()
    if args.action == "make":
        asyncio.run(make(args.fixture, args.n))
    else:
        print(json.dumps(digest(args.fixture), indent=1))


if __name__ == "__main__":
    main()
