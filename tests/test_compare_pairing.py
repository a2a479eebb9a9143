"""``compare`` pairs samples by what was asked, not by row position.

Each test makes two real runs against the fake server, into two work directories,
over data files that differ the way a user's do between runs: a row added at the top,
the first row removed, a duplicated question, a corrected answer, a new prompt template.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

import harness
from harness.compare import compare_dirs, format_text
from harness.report.pairing import pair_details

from .helpers import model_cfg, write_config
from .test_cli import cli, env

#: The first operands of the questions of the base data file; ``arith_reply`` gets
#: those with ``a % 4 == 3`` wrong (3 and 7).
BASE = list(range(8))


def write_rows(path: Path, operands: list[int], answers: dict[int, str] | None = None) -> Path:
    """The arithmetic questions ``What is a + (a+1)?`` of ``operands``, in that order,
    with the right answer unless ``answers`` gives another."""
    with open(path, "w", encoding="utf-8") as fh:
        for a in operands:
            answer = (answers or {}).get(a, str(2 * a + 1))
            fh.write(json.dumps({"question": f"What is {a} + {a + 1}?",
                                 "answer": f"#### {answer}"}) + "\n")
    return path


async def run(server, tmp_path: Path, name: str, operands: list[int], *,
              template: str = "{question}", model: str = "fake-model",
              evaluator: str = "AccEvaluator",
              answers: dict[int, str] | None = None) -> Path:
    """A real run over ``operands`` into the work directory ``tmp_path/name``."""
    data = write_rows(tmp_path / f"{name}.jsonl", operands, answers)
    cfg = write_config(tmp_path / f"{name}.py", data, evaluator=evaluator,
                       models=[{**model_cfg(server.base_url), "path": model}])
    cfg.write_text(cfg.read_text().replace("content='{question}'", f"content={template!r}"))
    await harness.evaluate(cfg, work_dir=tmp_path / name)
    return tmp_path / name


def details(work: Path) -> Path:
    return work / "details" / "fake" / "arith.jsonl"


async def test_a_row_added_at_the_top_changes_no_verdict(server, tmp_path):
    a = await run(server, tmp_path, "a", BASE)
    b = await run(server, tmp_path, "b", [100, *BASE])
    (pair,) = compare_dirs(a, b)["pairs"]
    assert (pair["fixed"], pair["broken"], pair["unchanged"]) == (0, 0, len(BASE))
    assert pair["difference"] == 0 and pair["changed"] == []
    assert pair["pairing"]["by"] == "prompt" and pair["pairing"]["moved"] == len(BASE)
    assert pair["pairing"]["samples_only_in_b"] == 1
    assert pair["pairing"]["indices_only_in_b"] == [0]


async def test_a_row_removed_at_the_top_leaves_the_accuracies_of_the_rest(server, tmp_path):
    a = await run(server, tmp_path, "a", BASE)
    b = await run(server, tmp_path, "b", BASE[1:])
    (pair,) = compare_dirs(a, b)["pairs"]
    assert pair["paired"] == len(BASE) - 1
    assert pair["accuracy_a"] == pair["accuracy_b"] == pytest.approx(500 / 7)
    assert pair["difference"] == 0
    text = format_text(compare_dirs(a, b))
    assert "fake / arith: 7 samples paired by prompt" in text
    assert "samples in one run only (left out): 1 in A (index 0); 0 in B" in text
    assert "difference +0.00 points" in text


async def test_repeated_questions_pair_in_order_of_index(server, tmp_path):
    a = await run(server, tmp_path, "a", [0, 1, 0, 2])
    b = await run(server, tmp_path, "b", [100, 0, 1, 0, 2])
    pairing = pair_details(details(a), details(b))
    assert pairing.rows == {(0, 0): (1, 0), (1, 0): (2, 0), (2, 0): (3, 0), (3, 0): (4, 0)}


async def test_another_model_on_the_same_data_pairs_every_sample(server, tmp_path):
    a = await run(server, tmp_path, "a", BASE)
    b = await run(server, tmp_path, "b", BASE, model="other-model")
    (pair,) = compare_dirs(a, b)["pairs"]
    assert pair["pairing"]["by"] == "prompt" and pair["paired"] == len(BASE)
    assert pair["pairing"]["moved"] == pair["pairing"]["samples_only_in_a"] == 0


async def test_a_corrected_answer_still_pairs_its_question_and_is_counted(server, tmp_path):
    a = await run(server, tmp_path, "a", BASE, answers={3: "8"})  # the model's wrong sum
    b = await run(server, tmp_path, "b", BASE)
    (pair,) = compare_dirs(a, b)["pairs"]
    assert pair["paired"] == len(BASE) and pair["pairing"]["reference_changed"] == 1
    assert [(c["index"], c["a_correct"], c["b_correct"]) for c in pair["changed"]] == [
        (3, True, False)]
    assert "paired samples with another reference in B: 1 (same prompt)" in format_text(
        compare_dirs(a, b))


async def test_a_new_prompt_template_on_the_same_rows_pairs_by_index(server, tmp_path):
    a = await run(server, tmp_path, "a", BASE)
    b = await run(server, tmp_path, "b", BASE, template="Answer briefly. {question}")
    (pair,) = compare_dirs(a, b)["pairs"]
    assert pair["pairing"]["by"] == "index" and pair["paired"] == len(BASE)
    assert (pair["fixed"], pair["broken"]) == (0, 0)
    assert ("fake / arith: 8 samples paired by index: no prompt is the same in both runs "
            "(a changed prompt template?)") in format_text(compare_dirs(a, b))


async def test_a_new_template_over_moved_rows_is_not_compared(server, tmp_path):
    a = await run(server, tmp_path, "a", BASE)
    b = await run(server, tmp_path, "b", [100, *BASE], template="Answer briefly. {question}")
    (pair,) = compare_dirs(a, b)["pairs"]
    assert pair["pairing"]["by"] is None and pair["paired"] == 0
    assert pair["difference"] is None and pair["changed"] == []
    text = format_text(compare_dirs(a, b))
    assert ("fake / arith: NOT COMPARED: no prompt is the same in both runs, and the "
            "references differ at index 0") in text
    assert "accuracy A" not in text and "fixed" not in text
    # A script must not pass a comparison that compared nothing.
    done = await anyio.run_process(cli("compare", str(a), str(b)), env=env(), check=False)
    assert done.returncode == 1 and b"NOT COMPARED" in done.stdout


async def test_a_metric_compares_the_same_samples_after_a_row_was_added(server, tmp_path):
    a = await run(server, tmp_path, "a", BASE, evaluator="NQEvaluator")
    b = await run(server, tmp_path, "b", [100, *BASE], evaluator="NQEvaluator")
    (pair,) = compare_dirs(a, b)["pairs"]
    assert pair["primary_metric"] != "accuracy" and pair["paired"] == len(BASE)
    assert pair["unmatched_a"] == 0 and pair["unmatched_b"] == 1
    for name, metric in pair["metrics"].items():
        assert metric["difference"] == 0, name
