"""A backlog of replies scored in a worker process gets exactly the verdicts the event
loop would give (``harness.stages.offload``), and what cannot go there stays on the loop.
"""

from __future__ import annotations

import importlib
import json
import os
import pickle
import re
import subprocess
import sys
import types
from copy import deepcopy
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

import harness
from harness.config import load_config
from harness.progress import Progress
from harness.records import Completion, Sample
from harness.stages import offload
from harness.stages.extract import Rules
from harness.stages.score import Scorer
from harness.testing import FakeOpenAI, Fault
from harness.testing.workloads import arith_reply, echo_last_user

from .helpers import expected_correct, model_cfg, write_arith, write_config, write_judge_config

# Replies every rule path sees: stated, boxed, cut for length, reasoning, none, empty.
REPLIES = [
    ("The answer is {a}.", "stop"),
    ("Let me add. 3 + 4 = 7, so the total is \\boxed{{{a}}} dollars.", "stop"),
    ("{a} apples, and then we add", "length"),
    ("So {a} plus 1 makes {b}", "length"),
    ("So {a} plus 1 makes {b}", "stop"),
    ("Step one. The answer is {a}. Let me check", "length"),
    ("<think>maybe {a}</think>So it is {b}.", "stop"),
    ("<think>still thinking about {a}", "length"),
    ("I do not know.", "stop"),
    ("", "stop"),
    ("The answer is {a}. Wait, that's wrong: it is {b}.", "stop"),
]


def completions(dataset: str, count: int) -> list[Completion]:
    out = []
    for i in range(count):
        text, finish = REPLIES[i % len(REPLIES)]
        reference = f"#### {i}"
        sample = Sample(dataset, "m", i, 0, {"question": f"q{i}", "answer": reference},
                        reference, (), key=f"k{i}")
        out.append(Completion(sample, "ok", text.format(a=i, b=i + 1), finish))
    return out


@pytest.fixture(autouse=True)
def spawnable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever runs the tests, their main module is safe to spawn workers under."""
    monkeypatch.setattr(offload, "can_spawn", lambda: True)


def hot(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every reply counts as a backlog: the first one scored inline sends the rest to
    the score stage, which sends every batch to the worker once it is ready."""
    monkeypatch.setattr(offload, "HOT_SHARE", 0.0)
    monkeypatch.setattr(offload, "WINDOW", 0.0)
    monkeypatch.setattr(offload, "MIN_BATCH", 1)


def body_index(body: dict[str, Any]) -> int:
    """The question's first number (``write_arith`` rows count up from 0)."""
    found = re.search(r"What is (\d+)", echo_last_user(body))
    assert found is not None
    return int(found.group(1))


def spec(tmp_path: Path, pred_pp: str, extra: str = "") -> Any:
    data = write_arith(tmp_path / "a.jsonl", 4)
    cfg = write_config(tmp_path / "cfg.py", data, pred_pp=pred_pp, extra=extra)
    return load_config(cfg).datasets[0]


async def offloaded_and_inline(scorer: Scorer, batch: list[Completion]
                               ) -> tuple[list, list, int]:
    """The batch scored by the worker (once it is ready) and by the loop, and how many
    replies of it the worker scored."""
    async with anyio.create_task_group() as tg:
        scorer.start(tg)
        try:
            with anyio.fail_after(60):  # the worker's start-up: imports, then the rules
                while scorer.progress.rules.offloaded == 0:
                    await scorer.score_batch(batch)
                    await anyio.sleep(0.05)
            before = scorer.progress.rules.offloaded
            scored = await scorer.score_batch(batch)
            inline = [await scorer.score_keyed(c) for c in batch]
        finally:
            await scorer.aclose()
    return scored, inline, scorer.progress.rules.offloaded - before


async def test_a_backlog_scored_in_a_worker_gets_the_loops_verdicts(tmp_path):
    scorer = Scorer({"arith": spec(tmp_path, "gsm8k_postprocess")}, "eval", 1, Progress())
    batch = completions("arith", 64)
    scored, inline, offloaded = await offloaded_and_inline(scorer, batch)
    assert scored == inline
    # The worker scored every reply with text; the loop the empty ones.
    assert offloaded == sum(bool(c.text) for c in batch)
    assert {r.status for r, _ in scored} == {"ok", "extract_failed", "empty_reply"}
    assert 0 < sum(bool(r.correct) for r, _ in scored) < len(scored)


async def test_a_trickle_is_scored_on_the_spot(tmp_path):
    scorer = Scorer({"arith": spec(tmp_path, "gsm8k_postprocess")}, "eval", 1, Progress())
    async with anyio.create_task_group() as tg:
        scorer.start(tg)
        for _ in range(3):
            await scorer.score_batch(completions("arith", offload.MIN_BATCH - 1))
        await scorer.aclose()
    assert scorer.progress.rules.offloaded == 0


def test_replies_go_to_the_stage_only_while_scoring_is_the_loops_bottleneck(
        tmp_path, monkeypatch):
    monkeypatch.setattr(offload, "WINDOW", 0.0)
    scorer = Scorer({"arith": spec(tmp_path, "gsm8k_postprocess")}, "eval", 1, Progress())
    assert scorer.scores_here and not scorer.inline  # a score stage stands by
    scorer.note_inline(0.0)  # a window with no time spent scoring
    assert scorer.scores_here
    scorer.note_inline(10.0)  # scoring took more than the whole window
    assert not scorer.scores_here
    scorer.note_batch(offload.MIN_BATCH)  # the stage's batches show a backlog
    assert not scorer.scores_here
    scorer.note_batch(1)  # they no longer do
    assert scorer.scores_here


async def test_a_configs_own_postprocessor_stays_on_the_loop(tmp_path):
    # Defined in the config file, it cannot be pickled for a worker process.
    dataset = spec(tmp_path, "mine", extra="def mine(text):\n    return text.split()[-1]\n")
    scorer = Scorer({"arith": dataset}, "eval", 1, Progress())
    assert not scorer.batches and scorer.inline
    scorer.note_inline(10.0)
    assert scorer.scores_here


class Unreadable:
    """A reference no postprocessor can read: reading it raises, wherever it runs."""

    def __str__(self) -> str:
        raise ValueError("an unreadable reference")


async def test_an_error_in_a_worker_is_reported_as_on_the_loop(tmp_path):
    # The worker hands the failing reply back; the loop scores it and records the error.
    scorer = Scorer({"arith": spec(tmp_path, "gsm8k_postprocess")}, "eval", 1, Progress())
    batch = completions("arith", 2 * offload.MIN_BATCH)
    sample = batch[0].sample
    batch[0] = Completion(Sample(sample.dataset, "m", 0, 0, sample.row, Unreadable(), (),
                                 key="k0"), "ok", "The answer is 1.", "stop")
    scored, inline, offloaded = await offloaded_and_inline(scorer, batch)
    assert offloaded == sum(bool(c.text) for c in batch) - 1
    assert scored[0][0].status == inline[0][0].status == "eval_error"
    assert "an unreadable reference" in (scored[0][0].error or "")
    assert scored[1:] == inline[1:]


async def test_a_run_with_a_backlog_scores_as_without_one(tmp_path, monkeypatch):
    hot(monkeypatch)
    n = 600
    data = write_arith(tmp_path / "a.jsonl", n)
    progress = Progress()
    async with FakeOpenAI(responder=arith_reply, latency=0.005) as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(srv.base_url)])
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w", concurrency=8,
                                        progress=progress)
    assert progress.rules.offloaded > 0
    assert report.result("arith")["correct"] == expected_correct(n)
    rows = [json.loads(line) for line in
            (tmp_path / "w/details/fake/arith.jsonl").read_text().splitlines()]
    assert [r["index"] for r in rows] == list(range(n))


async def test_cut_replies_in_a_backlog_are_read_as_cut(tmp_path, monkeypatch):
    hot(monkeypatch)
    n = 256
    data = write_arith(tmp_path / "a.jsonl", n)
    progress = Progress()
    # Cut for length, every time: "Let me add 3 and 4. The answer is 7." committed to 7;
    # "Let me add 3 and 4" concluded nothing.
    replies = [arith_reply, lambda body: arith_reply(body).split(".")[0]]
    async with FakeOpenAI(responder=lambda body: replies[body_index(body) % 2](body),
                          latency=0.005,
                          faults=lambda body, attempt: Fault("length", keep=1000)) as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(srv.base_url)])
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w", concurrency=32,
                                        progress=progress)
    assert progress.rules.offloaded > 0
    result = report.result("arith")
    assert result["counts"] == {"ok": n // 2, "extract_failed": n // 2}


async def test_a_batch_the_worker_cannot_take_is_scored_on_the_loop(tmp_path, monkeypatch):
    # A row value that does not pickle: the batch cannot be sent, so the loop scores it,
    # and the rest of the run, with the same verdicts.
    scorer = Scorer({"arith": spec(tmp_path, "gsm8k_postprocess")}, "eval", 1, Progress())
    batch = completions("arith", 2 * offload.MIN_BATCH)
    sample = batch[0].sample
    batch[0] = Completion(Sample(sample.dataset, "m", 0, 0, {**sample.row, "f": lambda: 0},
                                 sample.reference, (), key="k0"), "ok", "The answer is 0.",
                          "stop")
    monkeypatch.setattr(offload, "WINDOW", 0.0)
    scorer.note_inline(10.0)  # scoring is the loop's bottleneck
    assert not scorer.scores_here
    async with anyio.create_task_group() as tg:
        scorer.start(tg)
        try:
            with anyio.fail_after(60):
                while scorer.batches:
                    scored = await scorer.score_batch(batch)
                    await anyio.sleep(0.05)
            inline = [await scorer.score_keyed(c) for c in batch]
        finally:
            await scorer.aclose()
    assert scorer.progress.rules.offloaded == 0
    assert scored == inline
    assert scored[0][0].status == "ok" and scored[0][0].correct
    # And callers score inline again, even after a window in which scoring was hot.
    assert scorer.scores_here


def test_a_user_modules_evaluator_stays_on_the_loop(tmp_path, monkeypatch):
    # A worker would import the module afresh, without the state the run gave it
    # (here a tolerance the config sets): only harness's own code is offloaded.
    (tmp_path / "tolerant.py").write_text(
        "import harness\nTOLERANCE = 0\n"
        "class Tolerant(harness.AccEvaluator):\n"
        "    def score_sample(self, prediction, reference, test_item=None):\n"
        "        detail = super().score_sample(prediction, reference, test_item)\n"
        "        detail['tolerance'] = TOLERANCE\n"
        "        return detail\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    data = write_arith(tmp_path / "a.jsonl", 4)
    cfg = write_config(tmp_path / "cfg.py", data, evaluator="Tolerant",
                       extra="import tolerant\nfrom tolerant import Tolerant\n"
                             "tolerant.TOLERANCE = 1\n")
    scorer = Scorer({"arith": load_config(cfg).datasets[0]}, "eval", 1, Progress())
    assert not scorer.batches


def test_a_cascade_sends_its_rule_layer_to_the_worker_not_its_judge(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 4)
    cfg = write_judge_config(tmp_path / "cfg.py", data, "http://127.0.0.1:9/v1")
    scorer = Scorer({"arith": load_config(cfg).datasets[0]}, "eval", 1, Progress())
    found = offload.offloadable(scorer.rules)
    assert found is not None and found[1] == {"arith"}
    assert b"sk-judge" not in found[0] and b"judge-model" not in found[0]


def test_beside_math_verify_workers_nothing_is_offloaded(tmp_path):
    # Their checks would wait one batch at a time in the score stage.
    (tmp_path / "m").mkdir()
    (tmp_path / "g").mkdir()
    math = spec(tmp_path / "m", "math_postprocess_v2")
    scorer = Scorer({"math": replace(math, evaluator=harness.MATHVerifyEvaluator()),
                     "arith": spec(tmp_path / "g", "gsm8k_postprocess")}, "eval", 1,
                    Progress())
    assert not scorer.batches and not scorer.scores_here


def test_a_script_as_main_module_never_spawns_an_offload_worker(tmp_path):
    # A spawned worker would run an unguarded script again; `python -m pkg` is safe.
    script = tmp_path / "run.py"
    script.write_text("from harness.stages import offload\nprint(offload.can_spawn())\n"
                      "offload.started_by_cli()\nprint(offload.can_spawn())\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         check=True)
    # The CLI's own entry point (its script is guarded) says so.
    assert out.stdout.split() == ["False", "True"]


def test_code_is_judged_by_its_file_not_its_modules_name(tmp_path, monkeypatch):
    # A user's package named like a standard module ("sched") is still the user's.
    fake = types.ModuleType("sched")
    fake.__file__ = str(tmp_path / "sched" / "__init__.py")
    monkeypatch.setitem(sys.modules, "sched", fake)
    mine = type("Tolerant", (harness.AccEvaluator,), {"__module__": "sched"})
    assert offload.offloadable({"a": Rules.of(None, None, mine())}) is None
    assert offload.offloadable({"a": Rules.of(None, None, harness.AccEvaluator())})


def test_a_user_function_in_a_stdlib_wrapper_stays_on_the_loop(tmp_path, monkeypatch):
    # singledispatch's wrapper has functools' code, but pickle imports the user's module.
    (tmp_path / "userpp.py").write_text(
        "import functools\nTOL = 0\n"
        "@functools.singledispatch\ndef pp(text):\n    return f'{text}{TOL}'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    userpp = importlib.import_module("userpp")
    rules = Rules.of(None, userpp.pp, harness.AccEvaluator())
    assert offload.offloadable({"a": rules}) is None
    # Methods of built-in types and frozen standard modules are the standard library's.
    for function in (str.strip, "x".strip, os.path.basename):
        assert offload.offloadable({"a": Rules.of(None, function, harness.AccEvaluator())})


@pytest.mark.parametrize("evaluator", [harness.BleuEvaluator(tokenize="char"),
                                       harness.RougeEvaluator(use_stemmer=True)],
                         ids=["bleu", "rouge"])
def test_text_metrics_go_to_a_worker_as_their_options(evaluator):
    # Their sacrebleu and rouge-score objects are rebuilt there, scoring the same.
    assert offload.offloadable({"a": Rules.of(None, None, evaluator)}) is not None
    copy = pickle.loads(pickle.dumps(evaluator))
    pred, refs = "the cat sat on a mat", ["the cat sat on the mat", "a cat on a mat"]
    assert copy.score_sample(pred, refs) == evaluator.score_sample(pred, refs)
    assert copy.metric_options() == evaluator.metric_options()


def test_a_copied_text_metric_keeps_its_settings():
    # Only the metric library's objects are left out of the state, and built again.
    evaluator = harness.BleuEvaluator(pred_postprocessor=dict(type="strip-think"), timeout=5)
    clone = deepcopy(evaluator)
    assert len(clone.prediction_postprocessors()) == 1 and clone.timeout == 5
    assert clone.score_sample("a cat", ["a cat sat"]) == evaluator.score_sample(
        "a cat", ["a cat sat"])
