"""The shipped cascade configs extract the final answer in the rule layer only.

Each config runs end to end on its first three problems against the fake server, which
answers problem 0 with no answer at all, problem 1 with the right answer boxed and
problem 2 with the right answer written without a box. The rule layer uses math500's
policy (``math_postprocess_v2``), so only the boxed answer is an extraction; the judge
reads the whole reply of every rule failure and can rescue the unboxed answer.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

import harness
from harness.config import load_config
from harness.testing import FakeOpenAI

DATASETS = Path(__file__).resolve().parent.parent / "datasets"
CASCADES = [DATASETS / "math500_cascade.py", DATASETS / "aime_style_cascade.py"]

NO_ANSWER = "The years 2019-2020 were hard."
_PREDICTION = re.compile(r"<Predicted Answer Begin>: \n(.*?)\n<Predicted End>", re.S)
_GOLD = re.compile(r"<Gold Target Begin>: \n(.*?)\n<Gold Target End>", re.S)


def answers(config: Path) -> list[tuple[str, str]]:
    """``(problem, answer)`` of the config's first three rows, in file order."""
    spec = load_config(config).datasets[0]
    lines = spec.reader.path.read_text(encoding="utf-8").splitlines()[:3]
    return [(row["problem"], row["answer"]) for row in map(json.loads, lines)]


def make_reply(rows: list[tuple[str, str]]):
    """The fake server's responder for ``rows``: the model's three kinds of reply, and a
    judge that says A when the gold answer stands in the prediction between dollars."""

    def reply(body: dict) -> str:
        text = body["messages"][-1]["content"]
        if body["model"] == "judge-model":
            gold = _GOLD.search(text).group(1)
            return "A" if f"${gold}$" in _PREDICTION.search(text).group(1) else "B"
        index = next(i for i, (problem, _) in enumerate(rows) if problem in text)
        answer = rows[index][1]
        return [NO_ANSWER,
                f"Putting it together, $\\boxed{{{answer}}}$.",
                f"Working it through, we get ${answer}$ in the end."][index]

    return reply


async def run(config: Path, work: Path) -> tuple[dict, list[dict], list[str]]:
    """Run ``config`` on three problems: the results JSON, the details rows (by index)
    and the prediction blocks of the judge requests."""
    rows = answers(config)
    async with FakeOpenAI(responder=make_reply(rows),
                          models=("fake-model", "judge-model")) as server:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("OC_JUDGE_MODEL", "judge-model")
            env.setenv("OC_JUDGE_API_BASE", server.base_url)
            report = await harness.evaluate(
                config, work_dir=work, limit=3,
                models=[dict(abbr="fake", path="fake-model", openai_api_base=server.base_url)])
        judged = [_PREDICTION.search(r["messages"][-1]["content"]).group(1)
                  for r in server.requests if r["model"] == "judge-model"]
    abbr = report.summaries[0]["dataset"]
    result = json.loads((work / "results" / "fake" / f"{abbr}.json").read_text())
    details = [json.loads(line) for line in
               (work / "details" / "fake" / f"{abbr}.jsonl").read_text().splitlines()]
    return result, sorted(details, key=lambda d: d["index"]), judged


@pytest.fixture(scope="module", params=CASCADES, ids=lambda p: p.stem)
def outcome(request, tmp_path_factory) -> tuple[dict, list[dict], list[str]]:
    """One run per config, shared by the tests below (each run starts math-verify's
    worker processes, which is most of its time); the tests only read what it wrote."""
    work = tmp_path_factory.mktemp(request.param.stem) / "w"
    return asyncio.run(run(request.param, work))


def test_a_reply_without_an_answer_is_an_extraction_failure(outcome):
    result, details, _ = outcome
    empty = details[0]
    assert empty["prediction"] == NO_ANSWER
    assert empty["status"] == "extract_failed"
    assert empty["rule_evaluation"]["pred"] == ""  # not "2019-2020"
    assert empty["correct"] is False
    # Problems 0 and 2 have no boxed answer: one extraction in three.
    assert result["counts"]["extract_failed"] == 2
    assert result["extract_rate"] == pytest.approx(100 / 3)


def test_only_a_boxed_answer_is_rule_correct_and_it_costs_no_judge_request(outcome):
    result, details, judged = outcome
    boxed = details[1]
    assert boxed["status"] == "ok" and boxed["correct"] is True
    assert boxed["rule_evaluation"]["correct"] is True and "llm_evaluation" not in boxed
    assert boxed["prediction"] not in judged
    assert result["cascade_stats"]["rule_correct"] == 1
    assert result["cascade_stats"]["llm_evaluated"] == len(judged) == 2


def test_the_judge_reads_the_whole_reply_and_rescues_an_unboxed_answer(outcome):
    result, details, judged = outcome
    unboxed = details[2]
    assert unboxed["status"] == "extract_failed"  # the rule layer found no answer …
    assert unboxed["rule_evaluation"]["correct"] is False
    assert unboxed["prediction"] in judged  # … the judge saw the reply as written …
    assert unboxed["llm_evaluation"]["verdict"] == "A"
    assert unboxed["cascade_correct"] is True and unboxed["correct"] is True  # … and rescued it
    assert result["cascade_stats"]["llm_correct"] == 1
    assert result["correct"] == 2 and result["scored"] == 3
