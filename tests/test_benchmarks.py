"""The built-in benchmark configs: what each one contains, and a run against the fake server.

``test_shipped_configs.py`` already loads and runs every ``datasets/*.py`` with one
canned reply. Here each benchmark config is checked for its own choices (postprocessors,
evaluator, prompt) and run with a fake model that answers every sample correctly, in
the styles real models use, so a wrong wiring (a postprocessor on the wrong side, the
dataset row not reaching ``bbh_mcq_postprocess``) shows up as a lost point.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import harness
from harness import (
    AccEvaluator,
    MATHVerifyEvaluator,
    bbh_freeform_postprocess,
    bbh_mcq_postprocess,
    gsm8k_dataset_postprocess,
    gsm8k_postprocess,
    math_postprocess_v2,
)
from harness.config import DatasetSpec, load_config
from harness.testing import FakeOpenAI

DATASETS = Path(__file__).resolve().parent.parent / "datasets"
BBH_DATA = DATASETS / "data" / "bbh"
MCQ_TASKS = ["date_understanding", "logical_deduction_three_objects", "geometric_shapes"]
FREEFORM_TASKS = ["object_counting", "multistep_arithmetic_two"]
ALL_TASKS = MCQ_TASKS + FREEFORM_TASKS
QUESTION = "QUESTION-PLACEHOLDER?"


def rows(path: Path) -> int:
    """How many samples a data file holds."""
    if path.suffix == ".json":
        return len(json.loads(path.read_text(encoding="utf-8"))["examples"])
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


def by_abbr(config: str) -> dict[str, DatasetSpec]:
    return {spec.abbr: spec for spec in load_config(DATASETS / config).datasets}


def prompt_of(spec: DatasetSpec) -> str:
    (message,) = spec.template.render({"input": QUESTION})
    assert message["role"] == "user"
    return message["content"]


# --- what each config contains --------------------------------------------------------


def test_gsm8k_is_the_full_test_set_with_gsm8k_extraction() -> None:
    (spec,) = load_config(DATASETS / "gsm8k.py").datasets
    assert spec.abbr == "gsm8k"
    assert spec.test_range == slice(None) and rows(spec.reader.path) == 1319
    assert spec.pred_postprocessor.func is gsm8k_postprocess
    assert spec.dataset_postprocessor.func is gsm8k_dataset_postprocess
    assert isinstance(spec.evaluator, AccEvaluator)
    assert "\\boxed{}" in spec.template.render({"question": "Q"})[0]["content"]


def test_math500_is_boxed_extraction_and_math_verify_without_judge() -> None:
    (spec,) = load_config(DATASETS / "math500.py").datasets
    assert spec.abbr == "math500" and rows(spec.reader.path) == 500
    assert spec.pred_postprocessor.func is math_postprocess_v2
    assert spec.dataset_postprocessor is None  # golds are bare LaTeX answers already
    assert type(spec.evaluator) is MATHVerifyEvaluator


@pytest.mark.parametrize("config,suffix", [("bbh.py", ""), ("bbh_zeroshot.py", "-0shot")])
def test_bbh_configs_define_the_five_tasks(config: str, suffix: str) -> None:
    specs = by_abbr(config)
    assert sorted(specs) == sorted(f"bbh-{t}{suffix}" for t in ALL_TASKS)
    for task in ALL_TASKS:
        spec = specs[f"bbh-{task}{suffix}"]
        assert spec.reader.path == BBH_DATA / f"{task}.json"
        assert rows(spec.reader.path) == 250
        assert spec.input_columns == ("input",) and spec.output_column == "target"
        assert isinstance(spec.evaluator, AccEvaluator)
        assert spec.gen_params["max_tokens"] == 512


@pytest.mark.parametrize("config", ["bbh.py", "bbh_zeroshot.py"])
@pytest.mark.parametrize("task", ALL_TASKS)
def test_bbh_postprocessors_on_both_sides(config: str, task: str) -> None:
    spec = next(s for s in load_config(DATASETS / config).datasets if task in s.abbr)
    expected = bbh_mcq_postprocess if task in MCQ_TASKS else bbh_freeform_postprocess
    assert spec.pred_postprocessor.func is expected
    assert spec.dataset_postprocessor.func is expected
    # Both read the row: multiple choice for the options' texts, free form for whether
    # the gold is a number.
    assert spec.pred_postprocessor.wants_item and spec.dataset_postprocessor.wants_item


@pytest.mark.parametrize("task", ALL_TASKS)
def test_bbh_prompt_is_the_three_shot_cot_prompt_then_the_question(task: str) -> None:
    prompt = prompt_of(by_abbr("bbh.py")[f"bbh-{task}"])
    official = (BBH_DATA / "cot-prompts" / f"{task}.txt").read_text(encoding="utf-8")
    body = official.split("-----\n", 1)[1].strip()
    assert "canary" not in prompt and "-----" not in prompt
    assert prompt == ("Follow the given examples and answer the question.\n" + body
                      + f"\n\nQ: {QUESTION}\nA: Let's think step by step.")
    examples = prompt.split("\n\nQ: ")[1:-1]
    assert len(examples) == 3
    for example in examples:
        question, answer = example.split("\nA: Let's think step by step.\n")
        assert question.strip() and re.search(r"So the answer is \S+\.$", answer)


@pytest.mark.parametrize("task", ALL_TASKS)
def test_bbh_zeroshot_prompt_has_no_examples_and_states_the_answer_format(task: str) -> None:
    prompt = prompt_of(by_abbr("bbh_zeroshot.py")[f"bbh-{task}-0shot"])
    assert prompt.count("Q: ") == 1
    assert prompt.count("Let's think step by step.") == 1
    assert prompt.endswith(f"\n\nQ: {QUESTION}\nA: Let's think step by step.")
    assert "canary" not in prompt
    if task in MCQ_TASKS:
        assert 'So the answer is (X).' in prompt
    else:
        assert 'So the answer is N.' in prompt


# --- end to end: a fake model that answers right, in several styles -------------------

_NUMBER_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve "
                 "thirteen fourteen fifteen sixteen seventeen eighteen").split()


def _bbh_gold() -> dict[str, str]:
    gold = {}
    for task in ALL_TASKS:
        for ex in json.loads((BBH_DATA / f"{task}.json").read_text(encoding="utf-8"))["examples"]:
            gold[ex["input"]] = ex["target"]
    return gold


BBH_GOLD = _bbh_gold()


def _question(body: dict[str, Any]) -> str:
    prompt = body["messages"][-1]["content"]
    return prompt.rsplit("\n\nQ: ", 1)[1].rsplit("\nA: Let's think step by step.", 1)[0]


def bbh_reply(body: dict[str, Any]) -> str:
    """A right answer, in the style chosen by the question: letter, option text, bold,
    number words; each after reasoning that mentions other options or numbers."""
    question = _question(body)
    target = BBH_GOLD[question]
    style = len(question) % 3
    if target.startswith("("):
        options = dict(re.findall(r"^\(([A-Z])\) (.+)$", question, re.MULTILINE))
        letter = target[1]
        other = next(L for L in options if L != letter)
        reasoning = (f"Let's look at the options. ({other}) {options[other]} does not fit "
                     f"the description, so ({other}) is wrong.\n")
        if style == 0:
            return reasoning + f"So the answer is ({letter})."
        if style == 1:
            return reasoning + f"So the answer is {options[letter]}."
        return reasoning + f"\n**Answer: ({letter}) {options[letter]}**"
    value = int(target)
    reasoning = "Adding up: 1 + 2 = 3, then 3 * 4 = 12, and we keep going.\n"
    if style == 0 and 0 <= value < len(_NUMBER_WORDS):
        return reasoning + f"So the answer is {_NUMBER_WORDS[value]}."
    if style == 1:
        return reasoning + f"So the answer is **{target}**."
    return reasoning + f"So the answer is {target}."


async def _run(config: str, responder: Any, tmp_path: Path, limit: int) -> tuple[Any, FakeOpenAI]:
    async with FakeOpenAI(responder=responder) as srv:
        report = await harness.evaluate(
            DATASETS / config, work_dir=tmp_path / "w", limit=limit,
            models=[dict(abbr="fake", path="fake-model", openai_api_base=srv.base_url)])
    return report, srv


@pytest.mark.parametrize("config", ["bbh.py", "bbh_zeroshot.py"])
async def test_bbh_runs_and_scores_right_answers_in_every_style(config: str,
                                                                tmp_path: Path) -> None:
    report, srv = await _run(config, bbh_reply, tmp_path, limit=6)
    assert len(report.summaries) == 5
    for summary in report.summaries:
        assert summary["total"] == 6, summary["dataset"]
        assert summary["correct"] == summary["scored"] == 6, summary["dataset"]
        assert summary["extract_rate"] == 100.0
    prompts = [b["messages"][-1]["content"] for b in srv.requests]
    shots = 3 if config == "bbh.py" else 0
    assert all(p.count("\n\nQ: ") == shots + 1 for p in prompts)


async def test_bbh_mcq_wrong_option_text_scores_wrong(tmp_path: Path) -> None:
    def wrong(body: dict[str, Any]) -> str:
        question = _question(body)
        letter = BBH_GOLD[question][1]
        options = dict(re.findall(r"^\(([A-Z])\) (.+)$", question, re.MULTILINE))
        other = next(L for L in options if L != letter)
        return f"So the answer is {options[other]}."

    report, _ = await _run("bbh.py", wrong, tmp_path, limit=3)
    for summary in report.summaries:
        if any(t in summary["dataset"] for t in MCQ_TASKS):
            assert summary["scored"] == 3 and summary["correct"] == 0
            assert summary["extract_rate"] == 100.0  # a named option is an answer, a wrong one


@pytest.mark.parametrize("config", ["bbh.py", "bbh_zeroshot.py"])
async def test_bbh_reply_without_an_answer_is_not_extracted(config: str, tmp_path: Path) -> None:
    # On counting and arithmetic (number golds) a short reply with no number used to
    # count as extracted ("let me think step by step" as the prediction).
    report, _ = await _run(config, lambda body: "Let me think step by step.", tmp_path, limit=2)
    assert len(report.summaries) == 5
    for summary in report.summaries:
        assert summary["correct"] == 0 and summary["extract_rate"] == 0.0, summary["dataset"]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


GSM8K = {row["question"]: row["answer"].rsplit("####", 1)[1].strip()
         for row in _jsonl(DATASETS / "data" / "gsm8k" / "test.jsonl")}
MATH500 = {row["problem"]: row["answer"]
           for row in _jsonl(DATASETS / "data" / "math500" / "test.jsonl")}


def gsm8k_reply(body: dict[str, Any]) -> str:
    question = body["messages"][-1]["content"].split("\nPlease reason step by step")[0]
    answer = GSM8K[question]
    return (f"First, 16 - 3 - 4 = 9. Then 9 * 2 = 18 is an intermediate step.\n"
            f"Putting it together, the result is {answer}.\n\n\\boxed{{{answer}}}")


def math500_reply(body: dict[str, Any]) -> str:
    problem = body["messages"][-1]["content"].split("\nPlease reason step by step")[0]
    return (f"We compute $x = 2$ first, then simplify.\n\n"
            f"The final answer is $\\boxed{{{MATH500[problem]}}}$.")


@pytest.mark.parametrize("config,responder,abbr", [
    ("gsm8k.py", gsm8k_reply, "gsm8k"),
    ("math500.py", math500_reply, "math500"),
], ids=["gsm8k", "math500"])
async def test_math_benchmarks_run_and_score_right_answers(config: str, responder: Any,
                                                           abbr: str, tmp_path: Path) -> None:
    report, _ = await _run(config, responder, tmp_path, limit=4)
    summary = report.result(abbr)
    assert summary["total"] == 4
    assert summary["correct"] == summary["scored"] == 4
