"""PPL with ``listed_options=True``: each row is scored over the option letters it lists,
not over every label of the template (a question with options (A)-(E) has no (F))."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import harness
from harness.errors import ConfigError, DatasetError
from harness.testing import FakeOpenAI
from harness.testing.logprobs import VOCABULARY, Scorer

from .test_ppl import details, mc_config

LISTED = "dict(type=PPLInferencer, listed_options=True)"
DATASETS = Path(__file__).resolve().parent.parent / "datasets"


def write_rows(path: Path, rows: list[tuple[str, str]]) -> None:
    """One row per ``(gold, C's option text)``; options A and B always have a text."""
    path.write_text("".join(
        json.dumps({"question": f"q{i}", "A": "x", "B": "y", "C": c, "answer": gold}) + "\n"
        for i, (gold, c) in enumerate(rows)))


def prefers_c() -> Scorer:
    """A model that finds C the likeliest letter after "Answer:", then the gold A."""
    def logprob(context: str, token: str) -> float:
        if context.endswith("Answer:") and token.strip() in "ABC":
            return {"C": -0.1, "A": -1.0}.get(token.strip(), -4.0)
        return -1.0

    return Scorer(logprob)


@pytest.mark.parametrize("method", ["echo", "next_token"])
async def test_a_row_is_scored_over_the_options_it_lists(tmp_path, method):
    write_rows(tmp_path / "mc.jsonl", [("A", ""), ("A", "  "), ("A", "z")])
    async with FakeOpenAI(scorer=prefers_c()) as srv:
        cfg = mc_config(tmp_path / "cfg.py", srv.base_url,
                        inferencer=f"dict(type=PPLInferencer, method={method!r}, "
                                   "listed_options=True)")
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    rows = details(tmp_path / "w")
    assert [sorted(r["ppl"]["candidates"]) for r in rows] == [["A", "B"], ["A", "B"],
                                                              ["A", "B", "C"]]
    assert [r["prediction"] for r in rows] == ["A", "A", "C"]
    assert report.result("mc")["correct"] == 2
    # echo: the probe and one request per listed option; next token: one per row.
    assert srv.stats.total == 1 + (2 + 2 + 3 if method == "echo" else 3)


async def test_without_listed_options_every_row_is_scored_over_every_label(tmp_path):
    # OpenCompass's behaviour, kept for ported configs: the template's labels are the
    # candidates of every row.
    write_rows(tmp_path / "mc.jsonl", [("A", "")])
    async with FakeOpenAI(scorer=prefers_c()) as srv:
        await harness.evaluate(mc_config(tmp_path / "cfg.py", srv.base_url),
                               work_dir=tmp_path / "w")
    (row,) = details(tmp_path / "w")
    assert sorted(row["ppl"]["candidates"]) == ["A", "B", "C"] and row["prediction"] == "C"


async def test_a_gold_the_row_does_not_list_is_reported_before_any_request(tmp_path):
    write_rows(tmp_path / "mc.jsonl", [("A", "z"), ("C", "")])
    async with FakeOpenAI() as srv:
        cfg = mc_config(tmp_path / "cfg.py", srv.base_url, inferencer=LISTED)
        with pytest.raises(DatasetError) as caught:
            await harness.evaluate(cfg, work_dir=tmp_path / "w")
    assert srv.stats.total == 0
    text = str(caught.value)
    assert "mc.jsonl:2" in text and "'C'" in text and "options the row lists (A, B;" in text


async def test_a_row_listing_fewer_than_two_options_is_reported_before_any_request(tmp_path):
    path = tmp_path / "mc.jsonl"
    path.write_text(json.dumps({"question": "q0", "A": "x", "B": "", "C": "", "answer": "A"})
                    + "\n")
    async with FakeOpenAI() as srv:
        cfg = mc_config(tmp_path / "cfg.py", srv.base_url, inferencer=LISTED)
        with pytest.raises(DatasetError, match=r"mc\.jsonl:1.*lists 0 of the candidate"):
            await harness.evaluate(cfg, work_dir=tmp_path / "w")
    assert srv.stats.total == 0


@pytest.mark.parametrize("inferencer,template,field", [
    ("dict(type=PPLInferencer, listed_options='yes')", None, "listed_options"),
    (LISTED, "{'yes': 'Q: {question} yes', 'no': 'Q: {question} no'}",
     "inferencer.listed_options"),
])
def test_bad_listed_options_configs_name_the_field(tmp_path, inferencer, template, field):
    write_rows(tmp_path / "mc.jsonl", [("A", "z")])
    cfg = mc_config(tmp_path / "cfg.py", "http://127.0.0.1:9/v1", inferencer=inferencer,
                    template=template)
    with pytest.raises(ConfigError) as caught:
        harness.load_config(cfg)
    assert field in str(caught.value)


async def test_the_shipped_bbh_ppl_config_scores_only_the_options_a_question_lists(tmp_path):
    # Date row 12 lists (A)-(E), geometric-shapes row 0 (A)-(J): a model that favours
    # "F" and "K" answers F where F is listed, never a letter the question does not offer.
    scorer = Scorer(lambda context, token: -0.1 if token.strip()[-1:] in "FK" else -5.0,
                    vocabulary=(*VOCABULARY, " F", " K"))
    async with FakeOpenAI(scorer=scorer) as srv:
        await harness.evaluate(
            DATASETS / "bbh_ppl.py", work_dir=tmp_path / "w", limit=13,
            models=[dict(abbr="fake", path="fake-model", openai_api_base=srv.base_url,
                         api="completions")])

    def rows(task: str) -> dict[int, dict]:
        path = tmp_path / "w" / "details" / "fake" / f"bbh-{task}-ppl.jsonl"
        return {r["index"]: r for r in map(json.loads, path.read_text().splitlines())}

    for task, index, chosen in (("date_understanding", 12, "A"), ("date_understanding", 0, "F"),
                                ("geometric_shapes", 0, "F")):
        row = rows(task)[index]
        listed = re.findall(r"^\(([A-Z])\)", row["prompt"][-1]["content"], re.MULTILINE)
        assert sorted(row["ppl"]["candidates"]) == listed, (task, index)
        assert row["prediction"] == chosen, (task, index)  # A: all alike, the first wins
    assert len(rows("date_understanding")[0]["ppl"]["candidates"]) == 6
