"""What a run imports: only what it uses (issue 18: start-up counts in a stored rerun).

Each test runs the CLI in a fresh interpreter against the fake server and lists the
modules it imported, so an eager import added anywhere (a package ``__init__``, a
registry, a stage) that pulls in code the run never calls fails here.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio

from harness.testing import FakeOpenAI

from .helpers import arith_reply, model_and_judge, write_arith, write_judge_config

ROOT = Path(__file__).resolve().parent.parent

#: ``python -c DUMP OUT ARGS…`` runs ``python -m harness ARGS…`` and writes the names of
#: the modules imported by its end to OUT.
DUMP = ("import atexit, runpy, sys\n"
        "out = sys.argv.pop(1)\n"
        "atexit.register(lambda: open(out, 'w').write('\\n'.join(sorted(sys.modules))))\n"
        "sys.argv[0] = 'harness'\n"
        "runpy.run_module('harness', run_name='__main__', alter_sys=True)\n")

#: Modules a run that scores by rules (no code, no math-verify, no likelihoods) with a
#: configured endpoint that answers never calls, each with what does call it.
UNUSED = {
    "harness.sandbox": "code evaluation",
    "harness.evaluators.code": "code evaluation",
    "harness.evaluators.text": "text metrics",
    "harness.postprocessors.math": "math-boxed extraction",
    "harness.postprocessors.bbh": "BBH extraction",
    "harness.postprocessors.options": "option-letter extraction",
    "harness.postprocessors.code": "program extraction",
    "harness.ppl.runner": "likelihood evaluation",
    "harness.embedded": "the embedded model",
    "multiprocessing": "worker processes (math-verify)",
    "tenacity": "retrying a call that failed",
}


async def _run(tmp_path: Path, *args: str) -> set[str]:
    """Run ``python -m harness ARGS`` (exit 0); the modules it imported."""
    out = tmp_path / "modules.txt"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = await anyio.run_process([sys.executable, "-c", DUMP, str(out), *args],
                                     env=env, check=False)
    assert result.returncode == 0, result.stderr.decode()
    return set(out.read_text().split())


def _loaded(modules: set[str], names: dict[str, str]) -> dict[str, str]:
    return {name: why for name, why in names.items() if name in modules}


async def test_a_gsm8k_run_and_its_rerun_import_only_what_they_use(tmp_path):
    async with FakeOpenAI(responder=lambda body: "So the answer is \\boxed{18}.") as srv:
        args = ("run", "gsm8k", "--limit", "3", "-q", "-w", str(tmp_path / "w"),
                "--model-base-url", srv.base_url, "--model", "fake-model")
        first = await _run(tmp_path, *args)
        rerun = await _run(tmp_path, *args)
        assert len(srv.requests) == 3
    assert "harness.postprocessors.numbers" in first  # the one extractor it names
    assert _loaded(first, UNUSED) == {}
    assert _loaded(rerun, UNUSED) == {}


async def test_a_stored_cascade_rerun_renders_no_judge_prompt(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 8)
    async with FakeOpenAI(responder=model_and_judge,
                          models=("fake-model", "judge-model")) as srv:
        cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url)
        args = ("run", str(cfg), "-q", "-w", str(tmp_path / "w"))
        first = await _run(tmp_path, *args)
        asked = len(srv.requests)
        rerun = await _run(tmp_path, *args)
        assert len(srv.requests) == asked  # every verdict and outcome stored
    assert "harness.judge.defuse" in first  # it judged the rule failures
    unused = {**UNUSED, "harness.judge.defuse": "rendering a judge prompt"}
    del unused["harness.evaluators.text"]
    assert _loaded(rerun, unused) == {}


async def test_a_config_naming_one_postprocessor_loads_no_other(tmp_path):
    # A name in a config loads its own module when the config is built, not the others.
    data = write_arith(tmp_path / "a.jsonl", 4)
    cfg = tmp_path / "cfg.py"
    cfg.write_text(
        "from harness import CustomDataset, RawPromptTemplate, ZeroRetriever, GenInferencer\n"
        f"datasets = [dict(abbr='arith', type=CustomDataset, path={str(data)!r},\n"
        "    reader_cfg=dict(input_columns=['question'], output_column='answer'),\n"
        "    infer_cfg=dict(prompt_template=dict(type=RawPromptTemplate, messages=[\n"
        "        dict(role='user', content='{question}')]), retriever=dict(type=ZeroRetriever),\n"
        "        inferencer=dict(type=GenInferencer)),\n"
        "    eval_cfg=dict(evaluator=dict(type='AccEvaluator'),\n"
        "                  pred_postprocessor=dict(type='general'),\n"
        "                  dataset_postprocessor=dict(type='gsm8k-dataset')))]\n")
    async with FakeOpenAI(responder=arith_reply) as srv:
        modules = await _run(tmp_path, "run", str(cfg), "-q", "-w", str(tmp_path / "w"),
                             "--model-base-url", srv.base_url, "--model", "fake-model")
    assert {"harness.postprocessors.general", "harness.postprocessors.numbers",
            "harness.evaluators.rules"} <= modules
    assert _loaded(modules, UNUSED) == {}
