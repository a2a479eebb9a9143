"""The report's data: categories, breakdowns, filter counts, the cap and escaping.

Work directories come from real runs against the fake server: a cascade (rule + judge)
run and a rule-only run over the same 24 arithmetic questions, where one reply is
hostile markup, one has no answer and one call fails for good.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import harness
from harness.errors import WorkDirError
from harness.models import ModelOverrides
from harness.report import gather, render_html, write_report
from harness.report.data import categorize, flags_of, gather_section, share_cap
from harness.report.render import script_json
from harness.report.workdir import load_summaries
from harness.testing import FakeOpenAI, Fault

from .helpers import (
    cascade_reply,
    fake_judge,
    model_cfg,
    write_arith,
    write_config,
    write_judge_config,
)

N = 24
HOSTILE = ('</script><script>window.__pwned = 1</script><img src=x '
           'onerror="window.__pwned = 2"> & <!-- <b>bold</b>')


def hostile_model(body: dict) -> str:
    """``cascade_reply``, except: index 5 answers with markup, index 9 with no number."""
    if body["model"] == "judge-model":
        return fake_judge(body)
    text = body["messages"][-1]["content"]
    if "What is 5 " in text:
        return HOSTILE
    if "What is 9 " in text:
        return "No idea at all."
    return cascade_reply(body)


def fail_index_7(body: dict, attempt: int) -> Fault | None:
    return Fault("server_error") if "What is 7 " in str(body) else None


async def make_runs(root: Path) -> tuple[Path, Path]:
    """``(cascade work dir, rule-only work dir)`` from real runs over ``N`` questions."""
    data = write_arith(root / "a.jsonl", N)
    once = ModelOverrides(max_attempts=1)
    async with FakeOpenAI(responder=hostile_model, faults=fail_index_7,
                          models=("fake-model", "judge-model")) as srv:
        cfg = write_judge_config(root / "cascade.py", data, srv.base_url, mode="cascade")
        await harness.evaluate(cfg, work_dir=root / "cascade", overrides=once)
        cfg = write_config(root / "rule.py", data, models=[model_cfg(srv.base_url)])
        await harness.evaluate(cfg, work_dir=root / "rule", overrides=once)
    return root / "cascade", root / "rule"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    import anyio

    return anyio.run(make_runs, tmp_path_factory.mktemp("report"))


def bars(section: dict) -> dict[str, int]:
    return {b["key"]: b["count"] for b in section["breakdown"]}


def filters(section: dict) -> dict[str, int]:
    return {f["key"]: f["total"] for f in section["filters"]}


def test_cascade_breakdown_counts_each_sample_once(runs):
    section = gather(runs[0])["sections"][0]
    # a % 4: 0, 2 rule-correct (12); 1 rescued except 5 and 9 (4); 3 wrong except 7,
    # plus 5 and 9 (7); 7 failed (1).
    assert bars(section) == {"rule_correct": 12, "judge_rescued": 4, "wrong": 7,
                             "unparsed": 0, "error": 1}
    assert section["total_samples"] == N


def test_cascade_breakdown_agrees_with_the_summary(runs):
    report = gather(runs[0])
    summary, section = report["summaries"][0], report["sections"][0]
    stats = summary["cascade_stats"]
    assert bars(section)["rule_correct"] == stats["rule_correct"]
    assert bars(section)["judge_rescued"] == stats["final_correct"] - stats["rule_correct"]
    assert summary["total"] - summary["scored"] == bars(section)["error"]


def test_cascade_filter_counts(runs):
    section = gather(runs[0])["sections"][0]
    assert filters(section) == {"all": N, "wrong": 7, "rescued": 4, "disagree": 4,
                                "extract": 1, "unparsed": 0, "errors": 1}
    assert all(f["count"] == f["total"] for f in section["filters"])  # under the cap


def test_rule_only_breakdown_and_filters(runs):
    section = gather(runs[1])["sections"][0]
    # "It is N plus a unit." extracts N: wrong for a % 4 == 1 without a judge.
    assert bars(section) == {"correct": 12, "wrong": 10, "extract_failed": 1, "error": 1}
    assert filters(section) == {"all": N, "wrong": 11, "extract": 1, "errors": 1}


def test_sample_view_shows_prompt_reply_answer_reference_and_judge(runs):
    samples = gather(runs[0])["sections"][0]["samples"]
    rescued = next(s for s in samples if s["index"] == 1)
    assert rescued["prompt"] == [{"role": "user", "content": "What is 1 + 2?"}]
    assert rescued["reply"] == "It is 2 plus a unit." and rescued["pred"] == "2"
    assert rescued["reference"] == "3" and rescued["cat"] == "judge_rescued"
    assert rescued["rule"] == {"correct": False, "pred": "2"}
    assert rescued["judge"]["verdict"] == "A" and rescued["judge"]["reply"] == "A"
    failed = next(s for s in samples if s["index"] == 7)
    assert failed["cat"] == "error" and "server_error" in failed["error"]


def test_judge_cost_counts_each_endpoint_once_and_reads_the_store(runs):
    judges = gather(runs[0])["judges"]
    assert len(judges) == 1
    judge = judges[0]
    judged = 4 + 7  # every rule failure but the failed call
    assert judge["requests"] == judged and judge["cache_hits"] == 0
    assert judge["stored"]["verdicts"] == judged and judge["stored"]["requests"] == judged
    assert judge["stored"]["prompt_tokens"] == judge["prompt_tokens"] > 0


def test_hostile_reply_never_reaches_the_page_as_markup(runs):
    html = render_html(gather(runs[0]))
    assert HOSTILE not in html
    assert "<img" not in html
    static = html.split('<script type="application/json"', 1)[0]
    assert "window.__pwned" not in static  # the reply is only in the JSON island
    # Our own two scripts are the only script elements.
    assert len(re.findall(r"<script\b", html, re.IGNORECASE)) == 2
    island = re.search(r'<script type="application/json" id="report-data">(.*?)</script>',
                       html, re.DOTALL).group(1)
    assert "<" not in island and ">" not in island and "&" not in island
    data = json.loads(island)
    replies = [s["reply"] for s in data["sections"][0]["samples"]]
    assert HOSTILE in replies  # intact after JSON.parse


def test_script_json_escapes_and_round_trips():
    text = script_json({"a": "</script><!--&", "b": float("nan")})
    assert text == '{"a":"\\u003c/script\\u003e\\u003c!--\\u0026","b":null}'
    assert json.loads(text) == {"a": "</script><!--&", "b": None}


def test_hostile_dataset_and_model_names_are_escaped(tmp_path):
    summary = {"model": "<b>m</b>", "dataset": "<i>d</i>", "mode": "all", "total": 0,
               "scored": 0, "correct": 0, "counts": {}, "accuracy": None}
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "x.json").write_text(json.dumps(summary))
    html = render_html(gather(tmp_path))
    assert "<b>m</b>" not in html and "&lt;b&gt;m&lt;/b&gt;" in html
    assert "<i>d</i>" not in html


def write_details(work: Path, rows: list[dict], model: str = "m", dataset: str = "d") -> dict:
    summary = {"model": model, "dataset": dataset, "mode": "all", "total": len(rows),
               "scored": len(rows), "correct": sum(bool(r["correct"]) for r in rows),
               "counts": {"ok": len(rows)}, "accuracy": 0.0}
    path = work / "details" / model / f"{dataset}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (work / "results" / model).mkdir(parents=True, exist_ok=True)
    (work / "results" / model / f"{dataset}.json").write_text(json.dumps(summary))
    return summary


def row(index: int, correct: bool, status: str = "ok", **extra) -> dict:
    return {"index": index, "replica": 0, "status": status, "correct": correct,
            "prompt": [{"role": "user", "content": f"q{index}"}], "prediction": f"r{index}",
            "pred": str(index), "reference": "0", "error": None, **extra}


def test_cap_keeps_wrong_samples_first_and_counts_all(tmp_path):
    rows = [row(i, correct=i % 10 != 3) for i in range(100)]  # 10 wrong
    summary = write_details(tmp_path, rows)
    section = gather_section(tmp_path, summary, cap=15)
    kept = [s["index"] for s in section["samples"]]
    assert section["embedded"] == 15 and section["total_samples"] == 100
    assert set(range(3, 100, 10)) <= set(kept)  # every wrong one survives the cap
    assert kept == sorted(kept)  # shown in sample order
    assert bars(section) == {"correct": 90, "wrong": 10, "extract_failed": 0, "error": 0}
    wrong = next(f for f in section["filters"] if f["key"] == "wrong")
    assert (wrong["count"], wrong["total"]) == (10, 10)
    everything = next(f for f in section["filters"] if f["key"] == "all")
    assert (everything["count"], everything["total"]) == (15, 100)


def test_cap_is_shared_so_no_kind_of_failure_is_crowded_out(tmp_path):
    rescued = {"rule_evaluation": {"correct": False},
               "llm_evaluation": {"status": "ok", "verdict": "A", "llm_correct": True}}
    rows = [row(i, correct=True, **rescued) for i in range(60)]  # 60 rescued
    rows += [row(i, correct=False) for i in range(60, 100)]      # 40 wrong
    rows += [row(i, correct=True) for i in range(100, 110)]      # 10 correct
    rows += [row(110, correct=None, status="model_error")]       # 1 error
    summary = {**write_details(tmp_path, rows), "judge_mode": "cascade"}
    section = gather_section(tmp_path, summary, cap=21)
    kept = {f["key"]: f["count"] for f in section["filters"]}
    assert kept["errors"] == 1 and kept["rescued"] == 10 and kept["wrong"] == 10
    assert section["embedded"] == 21


def test_share_cap_gives_unused_shares_to_the_others():
    assert share_cap([60, 1, 40, 10], 21) == [10, 1, 10, 0]
    assert share_cap([2, 0, 3, 100], 20) == [2, 0, 3, 15]
    assert share_cap([5, 5, 5, 5], 0) == [0, 0, 0, 0]


def test_cap_is_said_on_the_page(tmp_path):
    write_details(tmp_path, [row(i, correct=True) for i in range(30)])
    html = render_html(gather(tmp_path, cap=10))
    assert "embeds 10 of 30 samples (cap 10 per dataset)" in html


def test_long_texts_are_cut(tmp_path):
    write_details(tmp_path, [row(0, True, prediction="x" * 25_000)])
    reply = gather(tmp_path)["sections"][0]["samples"][0]["reply"]
    assert reply.startswith("x" * 10_000) and "15,000 more characters not shown" in reply


def test_parallel_disagreement_both_ways():
    rule_yes_judge_no = row(0, True, rule_evaluation={"correct": True},
                            llm_evaluation={"status": "ok", "verdict": "B",
                                            "llm_correct": False})
    category = categorize(rule_yes_judge_no, "cascade")
    assert category == "rule_correct"
    assert flags_of(rule_yes_judge_no, category) == ["disagree"]


def test_a_rule_correct_sample_with_an_unreadable_verdict_is_under_the_unparsed_filter():
    # Parallel mode: correct by the rule, but the judge's verdict was unreadable. The
    # CLI's cascade_stats counts it as unparsed, so the report's filter lists it too
    # (as it lists a judge error on such a sample under "errors").
    unparsed = row(0, True, rule_evaluation={"correct": True},
                   llm_evaluation={"status": "unparsed", "verdict": None})
    category = categorize(unparsed, "cascade")
    assert category == "rule_correct"
    assert flags_of(unparsed, category) == ["unparsed"]


def test_unparsed_and_judge_errors_are_their_own_bars():
    unparsed = row(0, False, rule_evaluation={"correct": False},
                   llm_evaluation={"status": "unparsed", "verdict": None})
    judge_error = row(1, False, rule_evaluation={"correct": False},
                      llm_evaluation={"status": "error", "verdict": None})
    assert categorize(unparsed, "cascade") == "unparsed"
    assert categorize(judge_error, "cascade") == "error"
    assert categorize(row(2, None, status="judge_unparsed"), "judge") == "unparsed"
    assert categorize(row(3, False, status="timeout"), "rule") == "error"


def test_missing_details_are_reported_not_fatal(runs, tmp_path):
    summary = load_summaries(runs[1])[0]
    section = gather_section(tmp_path, summary)
    assert section["has_details"] is False and section["samples"] == []
    assert "--no-dump-eval-details" in render_html({**gather(runs[1]), "sections": [section]})


def test_not_a_work_dir_is_a_clear_error(tmp_path):
    with pytest.raises(WorkDirError, match="no results found"):
        gather(tmp_path)


def test_write_report_defaults_into_the_work_dir(runs):
    path = write_report(runs[1])
    assert path == runs[1] / "report.html"
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and "http://" not in text.split("<main>")[0]


async def test_an_empty_reply_shows_its_reasoning_and_counts_as_no_answer(tmp_path):
    from harness.testing import Reply

    def replies(body: dict) -> Reply:
        if "What is 0 " in body["messages"][-1]["content"]:
            return Reply("", reasoning="Let me think: 0 + 1 = 1.")
        return Reply(cascade_reply(body))

    data = write_arith(tmp_path / "a.jsonl", 4)
    async with FakeOpenAI(responder=replies) as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(srv.base_url)])
        await harness.evaluate(cfg, work_dir=tmp_path / "w",
                               overrides=ModelOverrides(max_attempts=1))
    section = gather(tmp_path / "w")["sections"][0]
    empty = next(s for s in section["samples"] if s["index"] == 0)
    assert empty["status"] == "empty_reply" and empty["cat"] == "extract_failed"
    assert empty["reasoning"] == "Let me think: 0 + 1 = 1." and "extract" in empty["flags"]
    assert "Reasoning (sent apart from the reply; never scored)" in render_html(
        gather(tmp_path / "w"))


async def test_an_incomplete_result_shows_bounds_not_an_accuracy(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 8)
    judge_down = lambda body, attempt: (  # noqa: E731
        Fault("server_error") if body["model"] == "judge-model" else None)
    async with FakeOpenAI(responder=hostile_model, faults=judge_down,
                          models=("fake-model", "judge-model")) as srv:
        cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url,
                                 judge={"max_attempts": 1})
        await harness.evaluate(cfg, work_dir=tmp_path / "w")
    page = render_html(gather(tmp_path / "w"))
    # Indices 0, 2, 4, 6 are rule-correct; the other four wait for the judge.
    assert "incomplete: 50.00–100.00%" in page and "4 pending" in page


async def test_model_calls_are_the_latest_run_s_beside_a_result_kept_from_an_earlier_one(
        server, tmp_path):
    # Run 1 scores 'arith' (10 calls). Run 2 adds 'z' and, with a limit, gets less far on
    # 'arith', whose run-1 result is kept: the table showed run 1's 10 calls as the last.
    work = tmp_path / "w"
    cfg = write_config(tmp_path / "cfg.py", write_arith(tmp_path / "a.jsonl", 10),
                       models=[model_cfg(server.base_url)])
    await harness.evaluate(cfg, work_dir=work)
    z = write_arith(tmp_path / "z.jsonl", 3, start=100)
    cfg.write_text(cfg.read_text() + "datasets = [*datasets, dict(datasets[0], abbr='z', "
                   f"path={str(z)!r})]\n")
    report = await harness.evaluate(cfg, work_dir=work, limit=2)
    assert ("fake", "arith") in report.kept
    stats = {d: json.loads((work / "results" / "fake" / f"{d}.json").read_text())["call_stats"]
             for d in ("arith", "z")}
    assert stats["arith"]["requests"] == 10 and stats["z"]["requests"] == 2
    assert gather(work)["models"] == [{"model": "fake", **stats["z"]}]
