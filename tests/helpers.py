"""Test data: arithmetic datasets, a responder that answers them, config files."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any, Iterable

_QUESTION = re.compile(r"What is (\d+) \+ (\d+)\?")


def write_arith(path: Path, n: int, start: int = 0) -> Path:
    """``n`` rows ``{"question": "What is a + b?", "answer": "#### a+b"}``."""
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(start, start + n):
            fh.write(json.dumps({"question": f"What is {i} + {i + 1}?",
                                 "answer": f"#### {2 * i + 1}"}) + "\n")
    return path


def arith_reply(body: dict[str, Any], wrong_every: int = 4) -> str:
    """Answer the arithmetic question of a request; every ``wrong_every``-th a is wrong."""
    text = body["messages"][-1]["content"]
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


def write_config(path: Path, data: Path, *, models: Iterable[dict[str, Any]] | None = None,
                 evaluator: str = "AccEvaluator", pred_pp: str | None = "gsm8k_postprocess",
                 ref_pp: str | None = "gsm8k_dataset_postprocess", n: int = 1,
                 extra: str = "") -> Path:
    """A config in the seed vocabulary, importing from ``harness``."""
    pp = f"pred_postprocessor=dict(type={pred_pp})," if pred_pp else ""
    rp = f"dataset_postprocessor=dict(type={ref_pp})," if ref_pp else ""
    import harness

    names = ["CustomDataset", "RawPromptTemplate", "ZeroRetriever", "GenInferencer",
             evaluator, pred_pp, ref_pp]
    imports = ", ".join(x for x in names if x and x in harness.__all__)
    models_src = f"models = {list(models)!r}" if models is not None else ""
    path.write_text(f"from harness import {imports}\n{extra}\n" + textwrap.dedent(f"""
        reader_cfg = dict(input_columns=['question'], output_column='answer')
        datasets = [dict(
            abbr='arith', type=CustomDataset, path={str(data)!r}, reader_cfg=reader_cfg,
            infer_cfg=dict(
                prompt_template=dict(type=RawPromptTemplate,
                                     messages=[dict(role='user', content='{{question}}')]),
                retriever=dict(type=ZeroRetriever),
                inferencer=dict(type=GenInferencer, max_out_len=32)),
            eval_cfg=dict(evaluator=dict(type={evaluator}), {pp} {rp} pred_role='BOT'),
            n={n})]
        {models_src}
    """))
    return path


def model_cfg(base_url: str, **kw: Any) -> dict[str, Any]:
    """An OpenCompass-style model dict for the fake server."""
    return dict(abbr="fake", type="OpenAISDK", path="fake-model", openai_api_base=base_url,
                key="sk-test-not-a-secret", temperature=0.0, **kw)
