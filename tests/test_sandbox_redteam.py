"""The red team's hostile programs (not those of ``test_sandbox_hostile``): ways out of
the sandbox that suite does not try, host exhaustion past the limits, output that could
break the details file, and (the ones that matter for the numbers) wrong programs that
try to be scored ``passed``. Each test asserts about the host or the score afterwards.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sqlite3
import subprocess
import uuid
from pathlib import Path

import pytest

import harness
from harness.sandbox import Limits, run_program
from harness.testing import FakeOpenAI
from tests.test_code_pipeline import BY_PROMPT, DATASETS, HUMANEVAL, _model, good
from tests.test_sandbox_hostile import SMALL, _leftovers, _marker

# A wrong body (every HumanEval task's tests reject ``None``) followed by a way to exit 0
# before, or despite, the tests; each task of the replayed run gets one of them.
CHEATS = {
    "sys.exit(0) after the function": "import sys\nsys.exit(0)\n",
    "os._exit(0) after the function": "import os\nos._exit(0)\n",
    "the model's own unittest.main()": (
        "import unittest\nclass T(unittest.TestCase):\n    def test_nothing(self):\n"
        "        pass\nif __name__ == '__main__':\n    unittest.main()\n"),
    "an atexit hook that exits 0 after the failed assertion": (
        "import atexit, os\natexit.register(os._exit, 0)\n"),
    "an excepthook that exits 0": "import os, sys\nsys.excepthook = lambda *a: os._exit(0)\n",
    "a thread that exits 0 while the tests run": (
        "import os, threading, time\nthreading.Thread(target=lambda: (time.sleep(0.05), "
        "os._exit(0))).start()\ntime.sleep(0.01)\n"),
}


def _cheat(row: dict, trick: str) -> str:
    return f"```python\n{row['prompt']}    return None\n\n{trick}```\n"


async def test_wrong_programs_that_exit_0_early_or_late_are_not_passed(tmp_path, monkeypatch):
    tricks = list(CHEATS.values())
    # Tasks 0..5 cheat; 6 and 7 are canonical, one of them calling sys.exit(0) in an
    # atexit hook (a correct program must still pass: the check did run to the end).
    def replay(body: dict) -> str:
        text = body["messages"][-1]["content"]
        i, row = BY_PROMPT[text.split("Complete the following python code:\n", 1)[1]]
        if i < len(tricks):
            return _cheat(row, tricks[i])
        return good(row) if i == 6 else good(row).replace(
            "```\n", "\nimport atexit, sys\natexit.register(sys.exit, 0)\n```\n")

    async with FakeOpenAI(responder=replay) as srv:
        report = await harness.evaluate(DATASETS / "humaneval.py", work_dir=tmp_path / "w",
                                        models=_model(srv), limit=8)
    summary = report.summaries[0]
    details = [json.loads(x) for x in Path(summary["details"]).read_text().splitlines()]
    assert [d["correct"] for d in details] == [False] * 6 + [True, True], details
    assert summary["correct"] == 2 and summary["complete"] is True
    assert all(d["outcome"] == "failed" for d in details[:6])
    assert all("harness-tests-done" not in d.get("stderr_tail", "") for d in details)


async def test_an_mbpp_program_that_exits_0_before_its_assertions_is_not_passed():
    from harness.evaluators.code import MBPPEvaluator

    row = {"test_list": ["assert add(1, 2) == 3"], "test_imports": []}
    wrong = "```python\ndef add(a, b):\n    return a - b\nraise SystemExit(0)\n```"
    detail = await MBPPEvaluator().ascore_sample(wrong, None, row)
    assert (detail["correct"], detail["outcome"]) == (False, "failed")
    assert detail["reason"] == "exited before its tests finished"
    right = await MBPPEvaluator().ascore_sample(wrong.replace("a - b", "a + b").replace(
        "raise SystemExit(0)\n", ""), None, row)
    assert right["correct"] is True
