"""No config mistake is silent: every key is understood or rejected (exit 2, file, field
path and a "did you mean") before any request; OpenCompass keys that mean something work,
and the ones that mean nothing for an HTTP endpoint are accepted."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness.config import load_config
from harness.testing import FakeOpenAI
from harness.testing.workloads import model_and_judge, write_judge_config

from .helpers import model_cfg, write_arith, write_config
from .test_cli import cli, env

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "tests" / "seed_configs"
SHIPPED = sorted((ROOT / "datasets").glob("*.py"))

Edit = Callable[[Path, Path, str], Path]


def edited(old: str, new: str, **model: Any) -> Edit:
    """A config writer: the arithmetic config with ``old`` replaced by ``new``."""

    def write(cfg: Path, data: Path, base_url: str) -> Path:
        path = write_config(cfg, data, models=[model_cfg(base_url, **model)])
        text = path.read_text()
        assert old in text, old
        path.write_text(text.replace(old, new, 1))
        return path

    return write


def judged(**options: Any) -> Edit:
    """A config writer: the cascade config of ``write_judge_config``."""

    def write(cfg: Path, data: Path, base_url: str) -> Path:
        return write_judge_config(cfg, data, base_url, **options)

    return write


async def run(cfg: Path, work: Path) -> Any:
    return await anyio.run_process(cli("run", str(cfg), "-w", str(work), "-q"), env=env(),
                                   check=False)


# (config writer, the field path the error names, the suggestion it makes)
MISSPELLED = {
    "eval_cfg": (edited("pred_postprocessor=", "pred_postprocesor="),
                 "datasets[0].eval_cfg.pred_postprocesor", "pred_postprocessor"),
    "dataset": (edited("n=1,", "nn=1,"), "datasets[0].nn", "n"),
    "reader_cfg": (edited("output_column='answer'", "output_column='answer', test_rnage='[0:2]'"),
                   "datasets[0].reader_cfg.test_rnage", "test_range"),
    "infer_cfg": (edited("prompt_template=", "prompt_templat="),
                  "datasets[0].infer_cfg.prompt_templat", "prompt_template"),
    "prompt_template": (edited("messages=", "mesages="),
                        "datasets[0].infer_cfg.prompt_template.mesages", "messages"),
    "retriever": (edited("dict(type=ZeroRetriever)", "dict(type=ZeroRetriever, ice_nmu=1)"),
                  "datasets[0].infer_cfg.retriever.ice_nmu", None),
    "inferencer-max_out_length": (edited("max_out_len=32", "max_out_length=32"),
                                  "datasets[0].infer_cfg.inferencer.max_out_length",
                                  "max_out_len"),
    "inferencer-temprature": (edited("max_out_len=32", "max_out_len=32, temprature=0.5"),
                              "datasets[0].infer_cfg.inferencer.temprature", "temperature"),
    "evaluator": (edited("dict(type=AccEvaluator)", "dict(type=AccEvaluator, timout=5)"),
                  "datasets[0].eval_cfg.evaluator.timout", "timeout"),
    "postprocessor-kwarg": (edited("dict(type=gsm8k_postprocess)",
                                   "dict(type='first-option', option='AB')"),
                            "datasets[0].eval_cfg.pred_postprocessor.option", "options"),
    "model-temprature": (edited("", "", temprature=0.5), "models[0].temprature", "temperature"),
    "model-query_per_secnd": (edited("", "", query_per_secnd=0.5),
                              "models[0].query_per_secnd", "query_per_second"),
    "judge_cfg": (judged(judge=dict(temprature=0.0)),
                  "datasets[0].eval_cfg.evaluator.llm_evaluator.judge_cfg.temprature",
                  "temperature"),
    "judge_cfg-constrain": (judged(judge=dict(constrian="grammar")),
                            "datasets[0].eval_cfg.evaluator.llm_evaluator.judge_cfg.constrian",
                            "constrain"),
    "rule_evaluator": (judged(rule="dict(type=AccEvaluator, pred_postprocesor='gsm8k')"),
                       "datasets[0].eval_cfg.evaluator.rule_evaluator.pred_postprocesor",
                       "pred_postprocessor"),
    "cascade": (judged(mode="parallel", rule="dict(type=AccEvaluator), paralel=False"),
                "datasets[0].eval_cfg.evaluator.paralel", "parallel"),
}


async def rejected(server: FakeOpenAI, tmp_path: Path, write: Edit, field: str) -> str:
    """Run the config ``write`` makes; check it exits 2 naming the file and ``field``
    before any request, with no traceback; return the error's text."""
    cfg = write(tmp_path / "cfg.py", write_arith(tmp_path / "a.jsonl", 4), server.base_url)
    result = await run(cfg, tmp_path / "w")
    assert result.returncode == 2, result.stdout.decode()
    err = result.stderr.decode()
    assert f"cfg.py field '{field}': " in err and "Traceback" not in err
    assert server.stats.total == 0
    return err


@pytest.mark.parametrize("write,field,suggestion", MISSPELLED.values(), ids=MISSPELLED.keys())
async def test_misspelled_key_exits_2_with_field_and_suggestion(server, tmp_path, write, field,
                                                                suggestion):
    err = await rejected(server, tmp_path, write, field)
    assert f"unknown key '{field.rsplit('.', 1)[-1]}'" in err
    if suggestion:
        assert f"did you mean '{suggestion}'?" in err


WRONG_TYPE = {
    "input_columns": (edited("input_columns=['question']", "input_columns=5"),
                      "datasets[0].reader_cfg.input_columns", "must be a list of strings"),
    "test_range-int": (edited("output_column='answer'", "output_column='answer', test_range=5"),
                       "datasets[0].reader_cfg.test_range", "must be a string such as '[0:100]'"),
    "test_range-list": (edited("output_column='answer'",
                               "output_column='answer', test_range=[0, 2]"),
                        "datasets[0].reader_cfg.test_range", "must be a string"),
    "max_out_len": (edited("max_out_len=32", "max_out_len='many'"),
                    "datasets[0].infer_cfg.inferencer.max_out_len", "must be an integer"),
    "model-timeout": (edited("", "", timeout="ten"), "models[0].timeout", "must be a number"),
    "model-type": (edited("'type': 'OpenAISDK'", "'type': 'HuggingFaceCausalLM'"),
                   "models[0].type",
                   "harness evaluates OpenAI-compatible endpoints"),
    "model-api": (edited("", "", api="chat-completions"), "models[0].api",
                  "api must be 'chat', 'completions' or 'auto'"),
    "max_reasks": (judged(judge=dict(max_reasks="two")),
                   "datasets[0].eval_cfg.evaluator.llm_evaluator.judge_cfg.max_reasks",
                   "must be a whole number"),
}


@pytest.mark.parametrize("write,field,message", WRONG_TYPE.values(), ids=WRONG_TYPE.keys())
async def test_wrong_type_exits_2_naming_the_field(server, tmp_path, write, field, message):
    assert message in await rejected(server, tmp_path, write, field)


async def test_a_retriever_that_adds_examples_is_rejected(server, tmp_path):
    def write(cfg: Path, data: Path, base_url: str) -> Path:
        path = edited("dict(type=ZeroRetriever)", "dict(type=FixKRetriever)")(cfg, data, base_url)
        path.write_text("class FixKRetriever:\n    pass\n" + path.read_text())
        return path

    err = await rejected(server, tmp_path, write, "datasets[0].infer_cfg.retriever.type")
    assert "only ZeroRetriever" in err


USER_EVALUATOR = '''
from harness import BaseEvaluator

class Within(BaseEvaluator):
    def __init__(self, tolerance=0, **kwargs):
        super().__init__(**kwargs)
        self.tolerance = tolerance

    def score_sample(self, prediction, reference, test_item=None):
        ok = abs(float(prediction or 0) - float(reference)) <= self.tolerance
        return {"pred": prediction, "answer": reference, "correct": ok}
'''


WITHIN_FUNCTION = '''
def within(pred, ref, item, tolerance=0):
    return abs(float(pred) - float(ref)) <= tolerance
'''


def users_evaluator(source: str, evaluator: str) -> Edit:
    """A config writer: the arithmetic config scored by a user's evaluator it defines."""

    def write(cfg: Path, data: Path, base_url: str) -> Path:
        path = edited("dict(type=AccEvaluator)", evaluator)(cfg, data, base_url)
        path.write_text(source + path.read_text())
        return path

    return write


@pytest.mark.parametrize("source,kind", [(USER_EVALUATOR, "Within"),
                                         (WITHIN_FUNCTION, "within")], ids=["class", "function"])
async def test_unknown_kwarg_of_a_users_evaluator_is_rejected(server, tmp_path, source, kind):
    write = users_evaluator(source, f"dict(type={kind}, tolerence=1)")
    err = await rejected(server, tmp_path, write, "datasets[0].eval_cfg.evaluator.tolerence")
    assert "did you mean 'tolerance'?" in err


async def test_a_users_evaluator_function_receives_the_kwargs_it_accepts(server, tmp_path):
    cfg = users_evaluator(WITHIN_FUNCTION, "dict(type=within, tolerance=1)")(
        tmp_path / "cfg.py", write_arith(tmp_path / "a.jsonl", 4), server.base_url)
    result = await run(cfg, tmp_path / "w")
    assert result.returncode == 0, result.stderr.decode()
    saved = json.loads((tmp_path / "w" / "results" / "fake" / "arith.json").read_text())
    assert saved["correct"] == 4  # arith_reply's wrong answer is off by one


async def test_stopping_criteria_is_sent_as_stop(server, tmp_path):
    cfg = edited("max_out_len=32", "max_out_len=32, stopping_criteria=['\\n\\n'], batch_size=8")(
        tmp_path / "cfg.py", write_arith(tmp_path / "a.jsonl", 2), server.base_url)
    result = await run(cfg, tmp_path / "w")
    assert result.returncode == 0, result.stderr.decode()
    assert server.requests[0]["stop"] == ["\n\n"]
    assert server.requests[0]["max_tokens"] == 32 and "batch_size" not in server.requests[0]


async def test_extra_body_of_a_model_is_sent_with_every_request(server, tmp_path):
    cfg = edited("", "", extra_body={"top_k": 20, "chat_template_kwargs": {"thinking": False}})(
        tmp_path / "cfg.py", write_arith(tmp_path / "a.jsonl", 2), server.base_url)
    result = await run(cfg, tmp_path / "w")
    assert result.returncode == 0, result.stderr.decode()
    for body in server.requests:
        assert body["top_k"] == 20 and body["chat_template_kwargs"] == {"thinking": False}


async def test_prompt_template_ice_token_is_removed_as_zero_shot(server, tmp_path):
    cfg = edited("prompt_template=dict(type=RawPromptTemplate,\n"
                 "                             messages=[dict(role='user', content='{question}')])",
                 "prompt_template=dict(type=PromptTemplate, ice_token='</E>',\n"
                 "                     template='</E>{question}')")(
        tmp_path / "cfg.py", write_arith(tmp_path / "a.jsonl", 2), server.base_url)
    cfg.write_text("from harness import PromptTemplate\n" + cfg.read_text())
    result = await run(cfg, tmp_path / "w")
    assert result.returncode == 0, result.stderr.decode()
    prompts = {body["messages"][-1]["content"] for body in server.requests}
    assert prompts == {"What is 0 + 1?", "What is 1 + 2?"}


INERT = {
    "model": edited("", "", batch_size=8, run_cfg={"num_gpus": 0}, tokenizer_path="gpt-4o",
                    max_seq_len=4096, meta_template=None, verbose=True, rpm_verbose=False),
    "reader_cfg": edited("output_column='answer'",
                         "output_column='answer', train_split='train', train_range='[0:2]', "
                         "test_split='test'"),
    "inferencer": edited("max_out_len=32", "max_out_len=32, batch_size=16, save_every=1"),
}


@pytest.mark.parametrize("write", INERT.values(), ids=INERT.keys())
async def test_opencompass_keys_without_meaning_here_are_accepted(server, tmp_path, write):
    cfg = write(tmp_path / "cfg.py", write_arith(tmp_path / "a.jsonl", 2), server.base_url)
    result = await run(cfg, tmp_path / "w")
    assert result.returncode == 0, result.stderr.decode()
    assert server.stats.total == 2


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_every_shipped_config_still_loads(path):
    assert load_config(path).datasets


def seed_copy(name: str, tmp_path: Path) -> Path:
    """A seed config in ``tmp_path`` with the sibling models module and data it reads."""
    shutil.copy(SEEDS / name, tmp_path / name)
    (tmp_path / "seed_models.py").write_text(
        "judge_models = [dict(abbr='judge', path='judge-model', openai_api_base="
        "'http://127.0.0.1:9/v1', key='sk-judge')]\n"
        "models = [dict(abbr='m', path='fake-model', openai_api_base='http://127.0.0.1:9/v1', "
        "key='sk-model')]\n")
    for folder in ("opencompass/aime2026", "path/to/your/dataset"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "your_dataset.jsonl").write_text(
            '{"problem": "1 + 1?", "answer": "2"}\n')
    return tmp_path / name


@pytest.mark.parametrize("name", sorted(p.name for p in SEEDS.glob("*.py")))
def test_every_seed_config_still_loads(name, tmp_path):
    sys.modules.pop("seed_models", None)
    try:
        assert load_config(seed_copy(name, tmp_path)).datasets
    finally:
        # The config imports its sibling seed_models; do not leave this test's copy in
        # the module cache for the next config that imports one.
        sys.modules.pop("seed_models", None)


async def test_judge_cfg_model_keys_and_inert_keys_are_accepted(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 4)
    async with FakeOpenAI(responder=model_and_judge, models=("fake-model", "judge-model")) as srv:
        cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url,
                                 judge=dict(rpm=6000, tpm=10**6, concurrency=2, max_reasks=1,
                                            query_per_second=100, batch_size=4))
        result = await run(cfg, tmp_path / "w")
    assert result.returncode == 0, result.stderr.decode()
