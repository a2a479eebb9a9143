"""Bootstrap and Wilson intervals: coverage on a known case, determinism, pairing."""

from __future__ import annotations

import numpy as np
import pytest

from harness.metrics import Statistic
from harness.metrics.intervals import (
    bootstrap_interval,
    paired_bootstrap_interval,
    ratio_of_sums,
)
from harness.results import proportion_interval, wilson_bounds

MEAN = Statistic("f1", "f1", "mean")


def mean_rows(values):
    return np.column_stack([values, np.ones(len(values))])


def test_bootstrap_covers_a_known_mean_about_95_percent_of_the_time():
    # Samples of an exponential with mean 50: the interval should hold 50 in ~95% of runs.
    rng = np.random.default_rng(7)
    hits = 0
    trials = 300
    for trial in range(trials):
        values = rng.exponential(50.0, size=80)
        low, high = bootstrap_interval(mean_rows(values), ratio_of_sums, resamples=400,
                                       seed=trial)
        hits += low <= 50.0 <= high
    assert 0.89 <= hits / trials <= 0.99


def test_bootstrap_matches_the_normal_interval_for_a_large_sample():
    values = np.random.default_rng(1).uniform(0, 100, size=3000)
    low, high = bootstrap_interval(mean_rows(values), ratio_of_sums)
    half = 1.96 * values.std(ddof=1) / np.sqrt(len(values))
    assert low == pytest.approx(values.mean() - half, abs=0.25)
    assert high == pytest.approx(values.mean() + half, abs=0.25)


def test_bootstrap_is_deterministic_for_a_seed():
    rows = mean_rows(np.arange(100.0))
    assert bootstrap_interval(rows, ratio_of_sums) == bootstrap_interval(rows, ratio_of_sums)
    assert bootstrap_interval(rows, ratio_of_sums, seed=1) != bootstrap_interval(rows, ratio_of_sums)


def test_proportion_uses_wilson():
    rows = [[100.0, 1.0]] * 8 + [[0.0, 1.0]] * 2
    value, ci = Statistic("em", "em", "proportion").measure(rows)
    low, high = wilson_bounds(8, 10)
    assert value == pytest.approx(80.0) and ci == pytest.approx((100 * low, 100 * high))


def test_proportion_with_replicas_never_shrinks_to_a_point():
    # Four questions, two replicas each, every one wrong: a normal or bootstrap
    # interval over the samples is [0, 0], as if the accuracy were known exactly. Every
    # sample alike says nothing of the spread: the four samples count as four, with
    # Student's t for three degrees of freedom.
    rows = [[0.0, 2.0]] * 4
    value, ci = Statistic("em", "em", "proportion").measure(rows)
    assert value == 0.0
    assert ci == pytest.approx((0.0, 100 * wilson_bounds(0, 4, z=3.182)[1]))
    assert ci[1] > 70


def test_the_replica_interval_is_wilsons_at_the_effective_sample_size():
    # One judgement per sample: Wilson's interval itself.
    assert proportion_interval([1.0] * 8 + [0.0] * 2, 10) == pytest.approx(wilson_bounds(8, 10))
    # Replicas that always agree: worth about one judgement each (the spread, estimated
    # from ten samples, puts it at nine), with t for nine degrees of freedom.
    agreeing = proportion_interval([1.0] * 8 + [0.0] * 2, 30)
    assert agreeing == pytest.approx(wilson_bounds(0.8 * 9, 9, z=2.262))
    # Replicas that disagree within samples narrow it, at most to every draw's count.
    mixed = proportion_interval([2 / 3, 1 / 3] * 5, 30)
    assert mixed == pytest.approx(wilson_bounds(15, 30, z=2.262))
    assert mixed[1] - mixed[0] < agreeing[1] - agreeing[0]


def test_the_replica_interval_covers_about_95_percent_of_clustered_runs():
    # Per-sample success rates drawn from Beta distributions (near 0, spread, U-shaped),
    # replicas drawn from them: the interval must hold the true mean about 95% of the
    # time, never far less (a normal interval held it 79-89% of the time near 0).
    rng = np.random.default_rng(0)
    for samples, replicas, a, b in [(30, 4, 1, 1), (30, 4, 0.1, 2), (10, 8, 0.1, 1),
                                    (5, 4, 0.5, 0.5)]:
        mean, hits, trials = a / (a + b), 0, 1500
        for _ in range(trials):
            right = rng.binomial(replicas, rng.beta(a, b, size=samples))
            low, high = proportion_interval(list(right / replicas), samples * replicas)
            hits += low <= mean <= high
        assert 0.9 <= hits / trials <= 0.995, (samples, replicas, a, b, hits / trials)


def test_paired_interval_of_a_constant_shift_is_the_shift():
    a = np.random.default_rng(3).uniform(0, 90, size=500)
    low, high = paired_bootstrap_interval(mean_rows(a), mean_rows(a + 5.0), ratio_of_sums)
    assert low == pytest.approx(5.0) and high == pytest.approx(5.0)


def test_paired_interval_is_narrower_than_unpaired_when_runs_agree():
    rng = np.random.default_rng(4)
    a = rng.uniform(0, 100, size=400)
    b = np.clip(a + rng.normal(1.0, 3.0, size=400), 0, 100)
    low, high = paired_bootstrap_interval(mean_rows(a), mean_rows(b), ratio_of_sums)
    la, ha = bootstrap_interval(mean_rows(a), ratio_of_sums)
    assert low < b.mean() - a.mean() < high
    assert high - low < (ha - la) / 3


def test_empty_or_mismatched_input_is_an_error():
    with pytest.raises(ValueError):
        bootstrap_interval(np.empty((0, 2)), ratio_of_sums)
    with pytest.raises(ValueError):
        paired_bootstrap_interval(mean_rows([1.0]), mean_rows([1.0, 2.0]), ratio_of_sums)


def test_pass_at_1_has_accuracys_interval():
    from harness.results import replica_metrics

    # Five samples, three replicas: 2/3, 1/3, 0, 3/3, 1/3 right.
    per_sample = {i: [3, c] for i, c in enumerate([2, 1, 0, 3, 1])}
    per_replica = {r: [5, 2] for r in range(3)}
    metrics = replica_metrics(per_sample, per_replica, 3)
    assert metrics["pass_at_k"]["pass@1"] == pytest.approx(100 * 7 / 15)
    assert metrics["pass_at_k_ci95"]["pass@1"] == metrics["_sample_ci95"]
    # pass@3: one try of three per sample, so no narrower than Wilson over the samples.
    low, high = metrics["pass_at_k_ci95"]["pass@3"]
    w_low, w_high = wilson_bounds(4, 5)
    assert low <= round(100 * w_low, 2) and high >= round(100 * w_high, 2)
