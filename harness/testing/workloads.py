"""A small arithmetic workload with known answers, for tests and benchmarks.

``write_arith`` writes "What is a + b?" rows; ``arith_reply`` and ``cascade_reply`` answer
them as a model would (some right, some wrong, some right in a form rules cannot read);
``fake_judge`` grades exactly; ``write_judge_config`` writes a cascade, parallel or
judge-only config in the seed vocabulary. Counts are known in advance
(``expected_cascade``), so a run's numbers can be checked exactly.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .gullible import gullible_judge  # noqa: F401  (re-exported: tests and scripts use it)
from .replies import echo_last_user

#: The model name the judge answers to in ``write_judge_config`` and ``model_and_judge``.
JUDGE_MODEL = "judge-model"

_QUESTION = re.compile(r"What is (\d+) \+ (\d+)\?")


def write_arith(path: Path, n: int, start: int = 0) -> Path:
    """``n`` rows ``{"question": "What is a + b?", "answer": "#### a+b"}``."""
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(start, start + n):
            fh.write(json.dumps({"question": f"What is {i} + {i + 1}?",
                                 "answer": f"#### {2 * i + 1}"}) + "\n")
    return path


def arith_reply(body: dict[str, Any], wrong_every: int = 4) -> str:
    """Answer the arithmetic question of a request (chat or completions); every
    ``wrong_every``-th a is wrong."""
    text = echo_last_user(body)
    match = _QUESTION.search(text)
    if not match:
        return "I do not know."
    a, b = int(match.group(1)), int(match.group(2))
    answer = a + b + (1 if wrong_every and a % wrong_every == wrong_every - 1 else 0)
    return f"Let me add {a} and {b}. The answer is {answer}."


def expected_correct(n: int, wrong_every: int = 4, start: int = 0) -> int:
    """How many of ``write_arith(n)`` rows ``arith_reply`` gets right."""
    return sum(1 for a in range(start, start + n)
               if not (wrong_every and a % wrong_every == wrong_every - 1))


JUDGE_TEMPLATE = ("Question: {question}\nGold: {reference}\n<Predicted Answer Begin>\n"
                  "{prediction}\n<Predicted End>\nReply A if correct, B if not.")
_GOLD = re.compile(r"Gold: (\S+)")
_PRED = re.compile(r"<Predicted Answer Begin>\n(.*)\n<Predicted End>", re.DOTALL)


def cascade_reply(body: dict[str, Any], all_right: bool = False) -> str:
    """Model replies by ``a % 4``: 0, 2 plain and right; 1 right in a form rules miss
    ("N-1 plus a unit"); 3 wrong. ``all_right``: every reply plain and right."""
    match = _QUESTION.search(echo_last_user(body))
    if not match:
        return "I do not know."
    a, b = int(match.group(1)), int(match.group(2))
    n = a + b
    if all_right:
        return f"The answer is {n}."
    if a % 4 == 1:
        return f"It is {n - 1} plus a unit."
    return f"The answer is {n + (a % 4 == 3)}."


def fake_judge(body: dict[str, Any]) -> str:
    """A judge that reads gold and prediction from ``JUDGE_TEMPLATE`` and grades exactly
    (asked on chat, or on completions with the whole prompt)."""
    text = echo_last_user(body)
    if text.startswith("Your reply could not be read"):
        text = body["messages"][0]["content"]
    gold, pred = _GOLD.search(text), _PRED.search(text)
    if not gold or not pred:
        return "B"
    g, p = gold.group(1), pred.group(1)
    plus = re.search(r"(\d+) plus a unit", p)
    value = str(int(plus.group(1)) + 1) if plus else (re.findall(r"\d+", p) or [""])[-1]
    return "A" if value == g else "B"


def model_and_judge(body: dict[str, Any]) -> str:
    """One fake server for both roles: requests for ``judge-model`` are judged."""
    return fake_judge(body) if body["model"] == JUDGE_MODEL else cascade_reply(body)


def expected_cascade(n: int) -> dict[str, int]:
    """Counts ``cascade_reply`` + ``fake_judge`` give on ``write_arith(n)``."""
    kinds = [a % 4 for a in range(n)]
    return {"rule_correct": sum(k in (0, 2) for k in kinds),
            "rule_failures": sum(k in (1, 3) for k in kinds),
            "rescued": sum(k == 1 for k in kinds),
            "final": sum(k in (0, 1, 2) for k in kinds)}


def arith_datasets(data: Path, eval_cfg: str, *, abbr: str = "arith", max_out_len: int = 32,
                   n: int = 1) -> str:
    """Config source defining ``datasets``: one arithmetic dataset at ``data`` with the
    ``eval_cfg`` source given, in the seed vocabulary (the caller writes the imports)."""
    return (
        "datasets = [dict(\n"
        f"    abbr={abbr!r}, type=CustomDataset, path={str(data)!r}, n={n},\n"
        "    reader_cfg=dict(input_columns=['question'], output_column='answer'),\n"
        "    infer_cfg=dict(\n"
        "        prompt_template=dict(type=RawPromptTemplate,\n"
        "                             messages=[dict(role='user', content='{question}')]),\n"
        "        retriever=dict(type=ZeroRetriever),\n"
        f"        inferencer=dict(type=GenInferencer, max_out_len={max_out_len})),\n"
        f"    eval_cfg={eval_cfg})]\n")


def write_judge_config(path: Path, data: Path, model_url: str, *, mode: str = "cascade",
                       judge: dict[str, Any] | None = None,
                       template: str = JUDGE_TEMPLATE, rule: str | None = None,
                       judge_url: str | None = None, n: int = 1) -> Path:
    """A config whose evaluator is a CascadeEvaluator (``mode='cascade'``/``'parallel'``)
    or a plain GenericLLMEvaluator (``mode='judge'``), judged by ``judge-model``; ``n``
    replicas of each row."""
    judge_cfg = {"abbr": "judge", "path": JUDGE_MODEL,
                 "openai_api_base": judge_url or model_url,
                 "key": "sk-judge-not-a-secret", **(judge or {})}
    llm = (f"dict(type=GenericLLMEvaluator, prompt_template=dict(type=RawPromptTemplate, "
           f"messages=[dict(role='user', content={template!r})]), judge_cfg={judge_cfg!r}, "
           f"dict_postprocessor=dict(type=generic_llmjudge_postprocess))")
    rule = rule or "dict(type=AccEvaluator, pred_postprocessor=dict(type='gsm8k'))"
    if mode == "judge":
        evaluator = llm
    else:
        evaluator = (f"dict(type=CascadeEvaluator, rule_evaluator={rule}, llm_evaluator={llm}, "
                     f"parallel={mode == 'parallel'})")
    # Imports what the config uses, as a user's config would (each costs start-up).
    math = ", MATHVerifyEvaluator" if "MATHVerifyEvaluator" in evaluator else ""
    path.write_text(
        "from harness import (CustomDataset, RawPromptTemplate, ZeroRetriever, GenInferencer,\n"
        f"                     AccEvaluator{math}, CascadeEvaluator,\n"
        "                     GenericLLMEvaluator, generic_llmjudge_postprocess)\n"
        + arith_datasets(data, f"dict(evaluator={evaluator}, "
                               "dataset_postprocessor=dict(type='gsm8k-dataset'))", n=n)
        + f"models = [dict(abbr='fake', path='fake-model', openai_api_base={model_url!r}, "
          "key='sk-model-not-a-secret')]\n")
    return path

