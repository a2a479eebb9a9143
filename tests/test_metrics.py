"""Metrics: pass@k, replica averages, confidence intervals — against hand-checked values."""

from __future__ import annotations

import math

import pytest

import harness
from harness.results import pass_at_k, replica_metrics, wilson_interval
from harness.testing import FakeOpenAI

from .helpers import model_cfg, write_arith, write_config


def test_pass_at_k_hand_checked():
    # n=5, c=2: pass@1 = 2/5; pass@2 = 1 - C(3,2)/C(5,2) = 1 - 3/10 = 0.7
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert pass_at_k(5, 0, 3) == 0.0
    assert pass_at_k(5, 3, 3) == 1.0  # n - c = 2 < k


def test_wilson_interval_known_case():
    # 8 successes of 10: Wilson 95% interval is [0.4902, 0.9433].
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(49.02, abs=0.01) and high == pytest.approx(94.33, abs=0.01)
    assert wilson_interval(0, 0) is None


def test_clustered_interval_known_case():
    from harness.compare import clustered_interval

    differences = [1.0, 0.0, 1.0, 1.0]
    mean, sd = 0.75, math.sqrt(0.25)
    half = 1.959963984540054 * sd / 2
    assert clustered_interval(differences) == [round(100 * (mean - half), 4), 100.0]
    assert clustered_interval([-1.0, -1.0, 0.0])[0] == -100.0  # a difference's floor


def test_replica_metrics():
    per_sample = {0: [2, 2], 1: [2, 1], 2: [2, 0]}
    per_replica = {0: [3, 2], 1: [3, 1]}
    m = replica_metrics(per_sample, per_replica, 2)
    assert m["avg@2"] == pytest.approx(50.0)
    assert m["replica_accuracy"] == [pytest.approx(66.6667), pytest.approx(33.3333)]
    assert m["avg_stderr"] == pytest.approx(100 / 6)  # sd of (66.7, 33.3) / sqrt(2)
    assert m["pass_at_k"]["pass@1"] == pytest.approx(50.0)
    assert m["pass_at_k"]["pass@2"] == pytest.approx(200 / 3)


def test_replica_accuracy_is_in_replica_order_whatever_order_results_arrived_in():
    per_sample = {0: [3, 1], 1: [3, 1]}
    per_replica = {2: [2, 0], 1: [2, 0], 0: [2, 2]}  # replica 2's first result came first
    m = replica_metrics(per_sample, per_replica, 3)
    assert m["replica_accuracy"] == [100.0, 0.0, 0.0]


async def test_replica_run_reports_avg_and_pass_at_k(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 6)
    calls = {}

    def flaky(body):
        # Each sample's first replica request is right; later ones right only for even a.
        text = body["messages"][-1]["content"]
        calls[text] = calls.get(text, 0) + 1
        a = int(text.split()[2])
        ok = calls[text] == 1 or a % 2 == 0
        return f"The answer is {2 * a + 1 if ok else 0}."

    async with FakeOpenAI(responder=flaky) as srv:
        cfg = write_config(tmp_path / "cfg.py", data, models=[model_cfg(srv.base_url)], n=3)
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w", concurrency=1)
    r = report.result("arith")
    # even a: 3/3 right; odd a: 1/3 right → avg 2/3; pass@3 = 100; pass@1 = avg
    assert r["avg@3"] == pytest.approx(200 / 3)
    assert r["pass_at_k"]["pass@1"] == pytest.approx(200 / 3)
    assert r["pass_at_k"]["pass@3"] == pytest.approx(100.0)
    assert len(r["replica_accuracy"]) == 3
    assert r["accuracy_ci95"][0] < r["accuracy"] < r["accuracy_ci95"][1]
