"""The intervals `estimate` and the adaptive test print: the Neyman belt calibrated on
held-out models (`mdad.practice.calibration`) and the exact interval of uniform random
sampling (`hypergeometric_interval`)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from mdad.data import load_dataset
from mdad.errors import DataError
from mdad.practice.calibration import MISS, REACH, Calibration, tail_rank
from mdad.practice.intervals import hypergeometric_interval


def test_tail_rank_by_hand_and_against_the_binomial():
    # m = 420, tail 2.5%: P(Bin(420, .025) <= 6) = 0.0987 <= 0.1 < P(<= 7) = 0.1751
    assert stats.binom.cdf(6, 420, 0.025) == pytest.approx(0.0987, abs=1e-4)
    assert stats.binom.cdf(7, 420, 0.025) == pytest.approx(0.1751, abs=1e-4)
    assert tail_rank(420, 0.025) == 7
    for m in (20, 84, 336, 1000, 5000):
        k = tail_rank(m, 0.025)
        assert k == 1 or stats.binom.cdf(k - 1, m, 0.025) <= MISS
        assert stats.binom.cdf(k, m, 0.025) > MISS or k == m


def _shrinking(rng: np.random.Generator, truth: np.ndarray) -> np.ndarray:
    """An estimator that pulls toward 0.4 by half and errs more at the ends."""
    noise = rng.normal(size=truth.shape) * (0.02 + 0.2 * np.abs(truth - 0.4))
    return 0.4 + 0.5 * (truth - 0.4) + noise


def test_the_belt_holds_at_every_true_accuracy_where_one_error_does_not():
    rng = np.random.default_rng(0)
    truth = rng.uniform(0.2, 0.6, 2000)
    estimate = _shrinking(rng, truth)
    belt = Calibration.fit(truth, estimate, widen_past=False)
    rmse = np.sqrt(np.mean((estimate - truth) ** 2))
    for level in (0.22, 0.4, 0.58):
        t = np.full(4000, level)
        y = _shrinking(rng, t)
        low, high = belt.interval(y)
        assert np.mean((low <= t) & (t <= high)) >= 0.93, level
        plain = np.mean(np.abs(y - t) <= 1.96 * rmse)
        if level != 0.4:  # the average error misses strong and weak models
            assert plain < 0.9, (level, plain)


@pytest.mark.parametrize("widen_past", [False, True])
@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.005, 0.1), st.floats(-0.6, 0.3))
def test_the_belt_is_an_interval_that_grows_with_the_estimate(widen_past, seed, noise,
                                                               slope):
    rng = np.random.default_rng(seed)
    truth = rng.uniform(0.15, 0.75, 300)
    # a mean error that bends: fitted curves may turn at the ends
    estimate = (truth + slope * (truth - 0.45) - 3 * slope * (truth - 0.45) ** 2
                + rng.normal(0, noise, truth.size))
    belt = Calibration.fit(truth, estimate, widen_past=widen_past)
    y = np.sort(rng.uniform(-0.1, 1.1, 50))
    low, high = belt.interval(y)
    assert np.all((0 <= low) & (low <= high) & (high <= 1))
    explained = ~belt.unexplained(y)  # unexplained ones get the whole range
    assert np.all(np.diff(low[explained]) >= -1e-9)
    assert np.all(np.diff(high[explained]) >= -1e-9)
    assert Calibration.from_list(belt.to_list(), widen_past=widen_past) == belt
    wide_low, wide_high = belt.interval(y, scale=2.0)
    inside = (low > 0) & (high < 1)
    assert np.all(wide_low[inside] <= low[inside] + 1e-9)
    assert np.all(wide_high[inside] >= high[inside] - 1e-9)


def test_an_unbiased_estimator_gets_about_its_own_error_each_side():
    rng = np.random.default_rng(1)
    truth = rng.uniform(0.3, 0.5, 5000)
    estimate = truth + rng.normal(0, 0.03, truth.size)
    low, high = Calibration.fit(truth, estimate, widen_past=False).interval(np.array(0.4))
    # 1.96 x 0.03 = 0.059, a little more for the conservative tail rank
    assert 0.4 - low == pytest.approx(0.06, abs=0.006)
    assert high - 0.4 == pytest.approx(0.06, abs=0.006)


def test_too_few_models_are_refused():
    with pytest.raises(DataError, match="19 held-out models cannot calibrate"):
        Calibration.fit(np.linspace(0, 1, 19), np.linspace(0, 1, 19), widen_past=False)


def test_the_exact_interval_by_hand_and_against_scipy():
    assert hypergeometric_interval(5, 5, 5) == (1.0, 1.0)
    # 0 of 1 item of a pool of 2: K = 2 is impossible, K = 1 has P(X <= 0) = 1/2
    assert hypergeometric_interval(0, 1, 2) == (0.0, 0.5)
    pool, n = 60, 12
    for correct in range(n + 1):
        low, high = hypergeometric_interval(correct, n, pool)
        plausible = [k for k in range(pool + 1)
                     if stats.hypergeom.cdf(correct, pool, k, n) > 0.025
                     and stats.hypergeom.sf(correct - 1, pool, k, n) > 0.025]
        assert (low, high) == (plausible[0] / pool, plausible[-1] / pool)


def test_the_exact_interval_covers_every_model_at_least_95_percent():
    pool, n = 80, 10
    for k in range(pool + 1):
        cover = sum(stats.hypergeom.pmf(x, pool, k, n) for x in range(n + 1)
                    if (lambda lo_hi: lo_hi[0] <= k / pool <= lo_hi[1])(
                        hypergeometric_interval(x, n, pool)))
        assert cover >= 0.95 - 1e-12, (k, cover)


def test_a_heavier_lower_tail_among_strong_models_is_kept():
    """Strong models sometimes look average on a few items: a long lower tail in the
    top third only. One set of tail points for all would miss them."""
    def skewed(rng, truth):
        error = rng.normal(0, 0.02, truth.shape)
        strong = truth > 0.5
        slip = strong & (rng.random(truth.shape) < 0.08)
        return truth + error - np.where(slip, 0.08, 0.0)

    rng = np.random.default_rng(3)
    truth = rng.uniform(0.2, 0.6, 900)
    belt = Calibration.fit(truth, skewed(rng, truth), widen_past=False)
    assert belt.low[2] < belt.low[0] - 0.5  # the top third's own, longer lower tail
    t = np.full(6000, 0.57)
    low, high = belt.interval(skewed(rng, t))
    assert np.mean((low <= t) & (t <= high)) >= 0.94


def test_an_estimate_no_accuracy_explains_gets_the_whole_range():
    rng = np.random.default_rng(4)
    truth = rng.uniform(0.5, 0.6, 300)
    belt = Calibration.fit(truth, truth + rng.normal(0, 0.03, truth.size), widen_past=False)
    assert belt.unexplained(np.array([0.0, 0.55, 1.0])).tolist() == [True, False, True]
    low, high = belt.interval(np.array([0.0, 1.0]))
    reach = REACH * (belt.highest - belt.lowest)
    assert low.tolist() == pytest.approx([belt.lowest - reach] * 2, abs=3e-4)
    assert high.tolist() == pytest.approx([belt.highest + reach] * 2, abs=3e-4)


def test_a_tail_beyond_what_the_models_can_place_is_stretched_as_a_normal_would():
    rng = np.random.default_rng(5)
    truth = rng.uniform(0.2, 0.6, 336)
    estimate = truth + rng.normal(0, 0.03, truth.size)
    usual = Calibration.fit(truth, estimate, widen_past=False)
    strict = Calibration.fit(truth, estimate, 0.999, widen_past=False)
    # 336 models place a 2.5% tail, not a 0.05% one: its extremes are stretched by
    # z(0.9995) / z(1 - (1 - 0.1 ** (1 / 336))) = 3.29 / 2.47
    assert strict.high[1] > usual.high[1] * 1.2 and strict.low[1] < usual.low[1] * 1.2


def test_the_notice_is_for_estimates_past_the_strongest_model_s_band():
    rng = np.random.default_rng(6)
    truth = rng.uniform(0.3, 0.5, 500)
    belt = Calibration.fit(truth, truth + rng.normal(0, 0.02, truth.size), widen_past=False)
    inside = truth + rng.normal(0, 0.02, truth.size)
    assert belt.beyond(inside).mean() < 0.03  # the models it was fitted on: rarely
    assert belt.beyond(np.array([0.62, 0.18, 0.4])).tolist() == [True, True, False]


@pytest.mark.parametrize("widen_past", [False, True])
def test_beyond_the_models_the_belt_spans_a_trend_that_stops(widen_past):
    # fitted on models in [0.2, 0.35] whose estimator shrinks toward 0.3 by 0.7; stronger
    # new models may be read with the trend going on, or with the error it had at the
    # strongest model (-0.035): no held-out model says which, so both are covered, and
    # each continuation alone would miss the other's models
    rng = np.random.default_rng(7)
    truth = rng.uniform(0.2, 0.35, 400)
    belt = Calibration.fit(truth, truth - 0.7 * (truth - 0.3) + rng.normal(0, 0.02, 400),
                           widen_past=widen_past)
    for level in (0.38, 0.42):
        t = np.full(4000, level)
        for y in (t - 0.035 + rng.normal(0, 0.02, t.size),  # the trend stops
                  t - 0.7 * (t - 0.3) + rng.normal(0, 0.02, t.size)):  # it goes on
            low, high = belt.interval(y)
            assert np.mean((low <= t) & (t <= high)) >= 0.93, level


def test_a_mean_error_falling_past_the_range_leaves_the_range_s_band_alone():
    # mu(x) = -0.15 x^2 over [0.2, 0.4]: its tangent at the top falls 1.5 times faster
    # than t rises. Continued as it is, the band's centre would fall past the range
    # (to 0.15 at 0.6) and the running minimum would carry that back: an estimate at the
    # weakest model's level would get an interval up to the reach's end (0.6)
    belt = Calibration((0.0, 0.0, -0.15), (0.01, 0.0, 0.0), 0.001, (-2.0,) * 3,
                       (2.0,) * 3, (0.2, 0.5, 0.8), 0.2, 0.4, 100)
    centre = np.linspace(0.4, 0.6, 50)
    assert np.all(np.diff(centre + belt.mean_at(centre)) >= -1e-12)  # never falls
    low, high = belt.interval(0.2)
    # the lower band edge t - 0.15 x^2 - 0.02 reaches 0.2 at t = 0.2215
    assert float(high) == pytest.approx(0.2215, abs=2e-3) and float(low) < 0.2


def test_beyond_the_models_the_spread_grows_to_the_largest_within_them():
    # sigma(x) = 0.01 + 0.08 x - 0.08 x^2: 0.03 at the middle, 0.01 at both edges of the
    # range [0.2, 0.4]; beyond, it grows linearly to 0.03 at the reach (REACH = 1: 0.6, 0)
    belt = Calibration((0.0, 0.0, 0.0), (0.01, 0.08, -0.08), 0.001, (-2.0, -2.5, -2.0),
                       (2.0, 2.5, 2.0), (0.2, 0.5, 0.8), 0.2, 0.4, 100)
    assert REACH == 1.0
    assert belt.spread_at(np.array([0.2, 0.3, 0.4])) == pytest.approx([0.01, 0.03, 0.01])
    assert belt.spread_at(np.array([0.45, 0.5, 0.6, 0.9, 0.1, 0.0])) == pytest.approx(
        [0.015, 0.02, 0.03, 0.03, 0.02, 0.03])
    # the tail points likewise, from the outer thirds' (2.0) to the widest (2.5)
    assert belt.tails_at(np.array([0.4, 0.5, 0.7]))[1] == pytest.approx([2.0, 2.25, 2.5])
    # so the band half the reach past the strongest model is 0.5 + 2.25 x 0.02 wide above
    _, high = belt.band()
    at = np.searchsorted(np.linspace(0, 1, 4001), 0.5)
    assert high[at] == pytest.approx(0.5 + 2.25 * 0.02, abs=1e-3)
    # a static micro-benchmark's belt (widen_past=False) holds the edge values there
    held = dataclasses.replace(belt, widen_past=False)
    assert held.spread_at(np.array([0.45, 0.6, 0.0])) == pytest.approx([0.01] * 3)
    assert held.tails_at(np.array([0.5, 0.7]))[1] == pytest.approx([2.0, 2.0])
    assert held.band()[1][at] == pytest.approx(0.5 + 2.0 * 0.01, abs=1e-3)
    # within the range the two agree
    inside = np.linspace(0.2, 0.4, 41)
    assert held.spread_at(inside) == pytest.approx(belt.spread_at(inside))
    # a list carries no flag: it is given back
    assert Calibration.from_list(held.to_list(), widen_past=False) == held


def test_a_micro_benchmark_s_belt_holds_its_edges_and_an_adaptive_test_s_grows():
    from mdad.practice.adaptive import start_adaptive_test
    from mdad.practice.bundle import select_microbenchmark

    data = load_dataset("synthetic:gpqa")
    bundle = select_microbenchmark(data, "anchor-points", 10, seed=0)
    assert bundle.calibration() is not None and not bundle.calibration().widen_past
    test = start_adaptive_test(data, budget=5, seed=0)
    assert test.calibration_at(5).widen_past


def test_an_interval_end_at_the_belt_s_reach_is_censored_and_0_or_1_is_not():
    # range [0.2, 0.4], REACH = 1: the belt speaks for 0.0 .. 0.6; 0 is a bound itself
    belt = Calibration((0.0, 0.0, 0.0), (0.01, 0.0, 0.0), 0.001, (-2.0, -2.0, -2.0),
                       (2.0, 2.0, 2.0), (0.2, 0.5, 0.8), 0.2, 0.4, 100)
    assert belt.reach() == pytest.approx((0.0, 0.6))
    low, high = belt.censored(np.array([0.0, 0.3, 0.1]), np.array([0.6, 0.5, 0.5995]))
    assert low.tolist() == [False, False, False] and high.tolist() == [True, False, True]
    # a range [0.5, 0.7] reaches 0.3 .. 0.9: both ends can be censored
    narrow = Calibration((0.0, 0.0, 0.0), (0.01, 0.0, 0.0), 0.001, (-2.0, -2.0, -2.0),
                         (2.0, 2.0, 2.0), (0.2, 0.5, 0.8), 0.5, 0.7, 100)
    low, high = narrow.censored(np.array([0.3, 0.302]), np.array([0.9, 0.85]))
    assert low.tolist() == [True, False] and high.tolist() == [True, False]
    # an estimate near the reach: the band of every accuracy from 0.57 to the reach
    # holds it (spread 0.01, tails 2), so the interval stops at 0.6, censored there
    # only; and being past the strongest model's band (0.42), it reaches down to it
    low, high = belt.interval(0.59)
    assert (low, high) == pytest.approx((0.4, 0.6), abs=1e-3)
    assert belt.censored(low, high) == (False, True)
    # one no accuracy explains gets all the belt speaks for: both ends censored
    assert narrow.censored(*narrow.interval(0.99)) == (True, True)


def test_an_estimate_beyond_the_models_reaches_back_to_the_strongest_or_weakest():
    # range [0.2, 0.4], spread 0.01, tails 2, no mean error: the band of the strongest
    # model ends at 0.42, so 0.5 is beyond it; the band alone would give [0.48, 0.52],
    # but the data say only "not weaker than the strongest model": [0.4, 0.52]
    belt = Calibration((0.0, 0.0, 0.0), (0.01, 0.0, 0.0), 0.001, (-2.0, -2.0, -2.0),
                       (2.0, 2.0, 2.0), (0.2, 0.5, 0.8), 0.2, 0.4, 100)
    low, high = belt.interval(np.array([0.5, 0.1, 0.41, 0.3]))
    assert belt.beyond(np.array([0.5, 0.1, 0.41, 0.3])).tolist() == [True, True, False, False]
    assert low == pytest.approx([0.4, 0.08, 0.39, 0.28], abs=1e-3)
    assert high == pytest.approx([0.52, 0.2, 0.43, 0.32], abs=1e-3)
    # and the ends stay nondecreasing in the estimate across the edge
    y = np.linspace(0.0, 0.6, 601)
    low, high = belt.interval(y)
    assert np.all(np.diff(low) >= 0) and np.all(np.diff(high) >= 0)


def test_the_reach_back_keeps_the_interval_monotone_off_the_grid():
    # the strongest model at 0.40013, between grid points (2.5e-4 apart): an estimate
    # crossing into "beyond" must not lower the interval's low end
    belt = Calibration((0.0, 0.0, 0.0), (0.01, 0.0, 0.0), 0.001, (-2.0, -2.0, -2.0),
                       (2.0, 2.0, 2.0), (0.2, 0.5, 0.8), 0.2, 0.40013, 100)
    y = np.linspace(0.40, 0.45, 2001)
    low, high = belt.interval(y)
    assert belt.beyond(y).any() and not belt.beyond(y).all()
    assert np.all(np.diff(low) >= 0) and np.all(np.diff(high) >= 0)
