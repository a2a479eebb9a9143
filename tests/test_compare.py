"""``harness compare``: changed samples, fixed/broken counts and the paired interval.

The two work directories come from real runs against the fake server over the same
questions, the second with a different answer-extraction postprocessor.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest

import harness
from harness.compare import (
    clustered_interval,
    compare_dirs,
    compare_verdicts,
    format_text,
    paired_interval,
)
from harness.errors import WorkDirError
from harness.testing import FakeOpenAI

from .helpers import model_cfg, write_arith, write_config

ROOT = Path(__file__).resolve().parent.parent
N = 20

# B's postprocessor reads "N plus a unit" (fixing those replies) but takes the *first*
# number otherwise, which breaks replies that restate the question before the answer.
PLUS_ONE_PP = '''
import re
def plus_one_pp(text):
    match = re.search(r"(\\d+) plus a unit", text)
    if match:
        return str(int(match.group(1)) + 1)
    numbers = re.findall(r"\\d+", text)
    return numbers[0] if numbers else ""
'''


def reply(body: dict) -> str:
    """By ``a % 8``: 1, 5 "N-1 plus a unit" (fixed by B); 2 "a plus b makes N" (broken by
    B); 3, 7 wrong for both; the rest plain and right for both."""
    text = body["messages"][-1]["content"]
    a, b = (int(x) for x in text.removeprefix("What is ").rstrip("?").split(" + "))
    n = a + b
    if a % 4 == 1:
        return f"It is {n - 1} plus a unit."
    if a % 8 == 2:
        return f"{a} plus {b} makes {n}."
    return f"The answer is {n + (a % 4 == 3)}."


FIXED = [a for a in range(N) if a % 4 == 1]       # 1, 5, 9, 13, 17
BROKEN = [a for a in range(N) if a % 8 == 2]      # 2, 10, 18


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("compare")

    async def run() -> None:
        data = write_arith(root / "a.jsonl", N)
        async with FakeOpenAI(responder=reply) as srv:
            models = [model_cfg(srv.base_url)]
            cfg = write_config(root / "a.py", data, models=models)
            await harness.evaluate(cfg, work_dir=root / "A")
            cfg = write_config(root / "b.py", data, models=models, pred_pp="plus_one_pp",
                               extra=PLUS_ONE_PP)
            await harness.evaluate(cfg, work_dir=root / "B")

    anyio.run(run)
    return root / "A", root / "B"


def test_changed_samples_are_the_fixed_and_broken_ones(two_runs):
    (pair,) = compare_dirs(*two_runs)["pairs"]
    assert (pair["model"], pair["dataset"]) == ("fake", "arith")
    changed = {c["index"]: c for c in pair["changed"]}
    assert sorted(changed) == sorted(FIXED + BROKEN)
    assert changed[1] == {"index": 1, "replica": 0, "b_index": 1, "a_pred": "2",
                          "a_correct": False, "b_pred": "3", "b_correct": True}
    assert changed[2] == {"index": 2, "replica": 0, "b_index": 2, "a_pred": "5",
                          "a_correct": True, "b_pred": "2", "b_correct": False}


def test_counts_difference_and_paired_interval(two_runs):
    (pair,) = compare_dirs(*two_runs)["pairs"]
    assert (pair["fixed"], pair["broken"], pair["unchanged"]) == (5, 3, 12)
    assert pair["paired"] == N and pair["unmatched_a"] == pair["unmatched_b"] == 0
    assert pair["accuracy_a"] == pytest.approx(50.0)  # a % 4 in (0, 2)
    assert pair["accuracy_b"] == pytest.approx(60.0)
    assert pair["difference"] == pytest.approx(10.0)
    # A is right on 10 of 20, 3 of them broken by B, so 7 are right in both runs.
    assert pair["ci95"] == paired_interval(5, 3, 7, N)
    assert pair["ci95"][0] < 10.0 < pair["ci95"][1]


def test_paired_interval_stays_in_range_and_holds_the_difference():
    # The case a normal interval got wrong: +83.33 with a CI running to +116.
    low, high = paired_interval(fixed=5, broken=0, both=1, n=6)
    assert -100 <= low < 83.33 < high <= 100
    for fixed, broken, both, n in [(3, 1, 4, 10), (0, 0, 10, 10), (0, 0, 0, 10), (10, 0, 0, 10),
                                   (0, 10, 0, 10), (40, 2, 300, 500), (1, 0, 0, 1)]:
        low, high = paired_interval(fixed, broken, both, n)
        diff = 100 * (fixed - broken) / n
        assert -100 <= low <= diff <= high <= 100
    assert paired_interval(0, 0, 0, 0) is None


def test_paired_interval_narrows_with_more_samples_and_widens_with_more_changes():
    small = paired_interval(4, 1, 45, 100)
    large = paired_interval(40, 10, 450, 1000)
    assert large[1] - large[0] < small[1] - small[0]
    few = paired_interval(4, 1, 45, 100)
    many = paired_interval(24, 21, 25, 100)  # about the same difference, far more churn
    assert many[1] - many[0] > few[1] - few[0]


def test_paired_interval_is_antisymmetric_in_the_two_runs():
    for fixed, broken, both, n in [(3, 1, 4, 10), (40, 2, 300, 500), (5, 0, 1, 6)]:
        low, high = paired_interval(fixed, broken, both, n)
        back_low, back_high = paired_interval(broken, fixed, both, n)
        assert (back_low, back_high) == pytest.approx((-high, -low))


def test_unscored_and_missing_samples_are_left_out():
    a = {(0, 0): ("1", True), (1, 0): ("2", False), (2, 0): ("3", True)}
    b = {(0, 0): ("1", True), (1, 0): ("9", True), (3, 0): ("4", True)}
    result = compare_verdicts(a, b)
    assert result["paired"] == 2 and result["unmatched_a"] == 1 and result["unmatched_b"] == 1
    assert (result["fixed"], result["broken"]) == (1, 0)


def test_replicas_are_matched_separately():
    a = {(0, 0): ("1", True), (0, 1): ("1", True)}
    b = {(0, 0): ("1", True), (0, 1): ("2", False)}
    result = compare_verdicts(a, b)
    assert [(c["index"], c["replica"]) for c in result["changed"]] == [(0, 1)]


def test_text_output_lists_changes(two_runs):
    text = format_text(compare_dirs(*two_runs))
    assert "fake / arith: 20 samples paired by prompt" in text
    assert "difference +10.00 points (95% CI -17.76 to +35.63, paired)" in text
    assert "fixed 5  broken 3  unchanged 12" in text
    assert len([line for line in text.splitlines() if line.endswith(("right", "wrong"))]) == 8
    short = format_text(compare_dirs(*two_runs), max_changed=2)
    assert "… and 6 more" in short


def test_datasets_in_one_run_only_are_named(two_runs, tmp_path):
    other = tmp_path / "C"
    (other / "results" / "fake").mkdir(parents=True)
    (other / "results" / "fake" / "other.json").write_text(json.dumps(
        {"model": "fake", "dataset": "other", "total": 0, "scored": 0, "correct": 0}))
    result = compare_dirs(two_runs[0], other)
    assert result["pairs"] == [] and result["only_in_a"] == ["fake/arith"]
    assert result["only_in_b"] == ["fake/other"]
    assert "no (model, dataset) has results in both" in format_text(result)


def test_a_directory_without_results_is_an_error(two_runs, tmp_path):
    with pytest.raises(WorkDirError):
        compare_dirs(two_runs[0], tmp_path)


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "harness", *args]


async def test_cli_prints_the_comparison_and_exits_0(two_runs):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = await anyio.run_process(cli("compare", *map(str, two_runs)), env=env, check=False)
    assert result.returncode == 0, result.stderr.decode()
    assert "fixed 5  broken 3  unchanged 12" in result.stdout.decode()
    result = await anyio.run_process(cli("compare", "--json", *map(str, two_runs)), env=env,
                                     check=False)
    assert result.returncode == 0
    (pair,) = json.loads(result.stdout)["pairs"]
    assert pair["fixed"] == 5 and len(pair["changed"]) == 8


async def test_cli_missing_directory_exits_2(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = await anyio.run_process(cli("compare", str(tmp_path / "x"), str(tmp_path)),
                                     env=env, check=False)
    assert result.returncode == 2 and b"no such directory" in result.stderr


async def test_cli_with_nothing_in_common_exits_2(two_runs, tmp_path):
    other = tmp_path / "C"
    (other / "results" / "fake").mkdir(parents=True)
    (other / "results" / "fake" / "other.json").write_text(json.dumps(
        {"model": "fake", "dataset": "other", "total": 0, "scored": 0, "correct": 0}))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = await anyio.run_process(cli("compare", str(two_runs[0]), str(other)), env=env,
                                     check=False)
    assert result.returncode == 2
    assert b"no (model, dataset) in common" in result.stderr


async def test_cli_help_shows_a_plain_percent_sign():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = await anyio.run_process(cli("compare", "--help"), env=env, check=False)
    assert b"95%" in result.stdout and b"%%" not in result.stdout


def test_with_replicas_the_interval_is_over_samples_not_rows():
    """Twelve samples, two replicas each that always agree: 2 fixed, 4 broken, 6 right in
    both. Counting the 24 rows as independent samples narrows the interval; it is taken
    over the 12 samples instead."""
    a: dict = {}
    b: dict = {}
    for i, (ok_a, ok_b) in enumerate([(False, True)] * 2 + [(True, False)] * 4
                                     + [(True, True)] * 6):
        for replica in (0, 1):
            a[(i, replica)], b[(i, replica)] = ("x", ok_a), ("y", ok_b)
    result = compare_verdicts(a, b)
    assert result["paired"] == 24 and result["difference"] == pytest.approx(-100 / 6)
    low, high = result["ci95"]
    assert [low, high] == clustered_interval([1.0] * 2 + [-1.0] * 4 + [0.0] * 6)
    rows_low, rows_high = paired_interval(fixed=4, broken=8, both=12, n=24)
    assert high - low > rows_high - rows_low


def test_with_replicas_an_equal_change_everywhere_is_not_a_certainty():
    # Five samples, three replicas: A wrong everywhere, B right on replica 0 only. Every
    # sample's difference is +1/3, and the interval over samples alone was a point.
    a = {(i, r): ("x", False) for i in range(5) for r in range(3)}
    b = {(i, r): ("y", r == 0) for i in range(5) for r in range(3)}
    result = compare_verdicts(a, b)
    assert result["difference"] == pytest.approx(100 / 3)
    low, high = result["ci95"]
    assert [low, high] == paired_interval(fixed=5, broken=0, both=0, n=15)
    assert low < 100 / 3 - 10 and high > 100 / 3 + 10


async def test_an_incomplete_run_is_named_and_the_cli_exits_1(two_runs, tmp_path):
    import shutil

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    a, b = two_runs
    incomplete = tmp_path / "b"
    shutil.copytree(b, incomplete)
    # As a run with a failed call writes it: not complete, a pending count.
    for path in (incomplete / "results").rglob("*.json"):
        data = json.loads(path.read_text())
        data.update(complete=False, pending=1, pending_counts={"model_error": 1})
        path.write_text(json.dumps(data))
    text = format_text(compare_dirs(a, incomplete))
    assert "B is INCOMPLETE (pending: 1 model_error): the figures below are over the " \
           "samples both runs scored, not its result" in text
    result = await anyio.run_process(cli("compare", str(a), str(incomplete)), env=env,
                                     check=False)
    assert result.returncode == 1 and b"B is INCOMPLETE" in result.stdout
    result = await anyio.run_process(cli("compare", str(a), str(b)), env=env, check=False)
    assert result.returncode == 0 and b"INCOMPLETE" not in result.stdout
