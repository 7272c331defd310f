"""Pairwise agreement, binning, Kendall tau and MDAD against hand-computed cases,
properties, scipy, and the independent slow reference (tests/reference_impl.py)."""

from __future__ import annotations

import numpy as np
import pytest
import reference_impl as ref
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import kendalltau

from mdad.errors import ConfigError, DataError
from mdad.metrics import (
    N_BINS,
    agreement,
    bin_edges,
    first_crossing_mdad,
    gap_bins,
    monotone_crossings,
    pair_counts,
    smooth_mdad,
)


def test_agreement_sign_rules_by_hand():
    est = np.array([0.1, -0.1, 0.0, 0.2, -0.2, 0.0])
    ref_gap = np.array([0.3, 0.3, 0.3, 0.0, 0.0, 0.0])
    # same sign agrees; a tie on the micro-benchmark never does, nor a tie on the
    # reference (equal models have no order to recover)
    assert agreement(est, ref_gap).tolist() == [True, False, False, False, False, False]


def test_gap_bins_floor_half_points_like_the_reference():
    gaps = np.array([0.0, 0.0049, 0.005, -0.0101, 0.3 - 0.2, 1.0])
    assert gap_bins(gaps).tolist() == [0, 0, 1, 2, 19, 200]  # 0.3 - 0.2 < 0.1 in floats
    assert bin_edges(np.array([0, 3, 29])).tolist() == [0.0, 0.015, 0.145]
    assert [ref.gap_bin(g) for g in gaps] == bin_edges(gap_bins(gaps)).tolist()


def test_first_crossing_hand_case():
    # bins 0, 0.005, 0.01 with agreement 1/2, 0/1, 1/1: first bin >= 0.8 is 0.01
    pairs, agreeing = np.zeros(N_BINS, int), np.zeros(N_BINS, int)
    pairs[:3], agreeing[:3] = [2, 1, 1], [1, 0, 1]
    res = first_crossing_mdad(pairs, agreeing, rng=np.random.default_rng(0))
    assert res.mdad == 0.01
    assert ref.first_crossing_point([0.0, 0.0, 0.005, 0.01], [1, 0, 0, 1]) == 0.01
    # Bin 0's bootstrap upper quantile is 1 (2 of 2 in a quarter of resamples), so the
    # lower MDAD bound is 0; only bin 0.01 has a lower quantile >= 0.8.
    assert (res.low, res.high) == (0.0, 0.01)


def test_first_crossing_skips_empty_bins_and_censors_when_never_reached():
    pairs, agreeing = np.zeros(N_BINS, int), np.zeros(N_BINS, int)
    pairs[[0, 40]], agreeing[[0, 40]] = [50, 50], [10, 20]
    res = first_crossing_mdad(pairs, agreeing, rng=np.random.default_rng(0), max_gap=0.203)
    assert np.isnan([res.mdad, res.low, res.high]).all() and not res.reached
    assert (res.max_gap, res.n_pairs, res.crossing_pairs) == (0.203, 100, 0)
    assert first_crossing_mdad(pairs, agreeing, rng=np.random.default_rng(0)).max_gap == 0.2
    agreeing[40] = 45
    res = first_crossing_mdad(pairs, agreeing, rng=np.random.default_rng(0))
    assert (res.mdad, res.reached, res.crossing_pairs) == (0.2, True, 50)


def test_first_crossing_unreached_upper_bound_is_unbounded():
    # 40 of 50 agree at 0.2: the mean reaches 0.8 but the lower bootstrap quantile
    # does not, so the interval is [0.2, unbounded)
    pairs, agreeing = np.zeros(N_BINS, int), np.zeros(N_BINS, int)
    pairs[40], agreeing[40] = 50, 40
    res = first_crossing_mdad(pairs, agreeing, rng=np.random.default_rng(0))
    assert (res.mdad, res.low) == (0.2, 0.2) and np.isnan(res.high)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 1)), min_size=1, max_size=300),
       st.floats(0.05, 0.95))
def test_first_crossing_point_matches_reference(records, threshold):
    bins = np.array([b for b, _ in records])
    agrees = np.array([a for _, a in records])
    pairs = np.bincount(bins, minlength=N_BINS)
    agreeing = np.bincount(bins, weights=agrees, minlength=N_BINS).astype(int)
    ours = first_crossing_mdad(pairs, agreeing, threshold=threshold, n_resamples=1,
                               rng=np.random.default_rng(0)).mdad
    theirs = ref.first_crossing_point(bin_edges(bins).tolist(), agrees.tolist(), threshold)
    # gaps stop at 0.2 here, so the reference's 0.5 is its "never reached": censored
    if theirs == 0.5:
        assert np.isnan(ours)
    else:
        assert ours == theirs


def test_binomial_bootstrap_matches_resampling_pairs():
    """Drawing Binomial(n, p-hat) is the same distribution as resampling n 0/1 values
    with replacement: compare both intervals from many resamples of one bin."""
    agrees = np.array([1] * 37 + [0] * 13)
    pairs, agreeing = np.zeros(N_BINS, int), np.zeros(N_BINS, int)
    pairs[0], agreeing[0] = 50, 37
    rng = np.random.default_rng(1)
    draws = rng.binomial(50, 0.74, size=200_000) / 50
    resampled = rng.choice(agrees, size=(200_000, 50)).mean(axis=1)
    assert np.quantile(draws, [0.025, 0.975]) == pytest.approx(
        np.quantile(resampled, [0.025, 0.975]), abs=0.021)  # one count of 50 either way
    assert draws.std() == pytest.approx(resampled.std(), rel=0.01)


def test_first_crossing_interval_agrees_with_reference_bootstrap():
    rng = np.random.default_rng(5)
    bins = rng.integers(0, 30, size=3000)
    agrees = (rng.random(3000) < 0.55 + 0.015 * bins).astype(int)
    pairs = np.bincount(bins, minlength=N_BINS)
    agreeing = np.bincount(bins, weights=agrees, minlength=N_BINS).astype(int)
    ours = [first_crossing_mdad(pairs, agreeing, n_resamples=400,
                                rng=np.random.default_rng(s)) for s in range(5)]
    theirs = [ref.first_crossing_mdad(bin_edges(bins).tolist(), agrees.tolist(),
                                      n_resamples=400, rng=np.random.default_rng(s))
              for s in range(5)]
    assert {r.mdad for r in ours} == {t[0] for t in theirs}
    # Interval ends are random; they must fall within a bin of the reference's.
    for end, index in (("low", 1), ("high", 2)):
        ours_mid = np.median([getattr(r, end) for r in ours])
        theirs_mid = np.median([t[index] for t in theirs])
        assert abs(ours_mid - theirs_mid) <= 0.005


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 12), st.integers(1, 4), st.integers(0, 10_000))
def test_pair_counts_and_tau_match_reference_loops(n_targets, n_runs, seed):
    rng = np.random.default_rng(seed)
    # Accuracies on a coarse grid so that ties in both estimates and references occur.
    estimates = rng.integers(0, 5, size=(n_runs, n_targets)) / 4
    reference = rng.integers(0, 9, size=(n_runs, n_targets)) / 8
    counts = pair_counts(estimates, reference, block=7)
    for run in range(n_runs):
        records = ref.agreement_records(reference[run], reference[run], estimates[run])
        bins = gap_bins(np.array([r.bin_seen for r in records]) + 1e-12)
        expected_pairs = np.bincount(bins, minlength=N_BINS)
        # the reference reads a tie as +0 and may count it as agreeing; we never do
        # (on this grid a nonzero gap is at least 1/8, so bin 0 holds only ties)
        expected_agree = np.bincount(bins, weights=[r.agree_seen * (r.bin_seen != 0)
                                                     for r in records], minlength=N_BINS)
        assert counts.pairs[run].tolist() == expected_pairs.tolist()
        assert counts.agreeing[run].tolist() == expected_agree.astype(int).tolist()
        i, j = np.triu_indices(n_targets, k=1)
        assert counts.tied[run] == np.sum(reference[run][i] == reference[run][j])
        tau = ref.kendall_tau_b(estimates[run], reference[run])
        assert counts.kendall_tau[run] == pytest.approx(tau, nan_ok=True)
        scipy_tau = kendalltau(estimates[run], reference[run]).statistic
        assert counts.kendall_tau[run] == pytest.approx(scipy_tau, nan_ok=True)


@pytest.mark.parametrize("block", [1, 499, 5_000, 1 << 18])
def test_pair_counts_do_not_depend_on_blocks_or_threads(block):
    # 150 targets on a 40-item pool: many tied references, and ties in estimates
    rng = np.random.default_rng(block)
    reference = rng.integers(0, 41, size=(3, 150)) / 40
    estimates = np.clip(reference + rng.normal(0, 0.1, reference.shape), 0, 1).round(1)
    counts = pair_counts(estimates, reference, block=block, threads=2)
    for run in range(3):
        records = ref.agreement_records(reference[run], reference[run], estimates[run])
        bins = gap_bins(np.array([r.bin_seen for r in records]) + 1e-12)
        assert counts.pairs[run].tolist() == np.bincount(bins, minlength=N_BINS).tolist()
        agree = np.bincount(bins, weights=[r.agree_seen * (r.bin_seen != 0) for r in records],
                            minlength=N_BINS)
        assert counts.agreeing[run].tolist() == agree.astype(int).tolist()
        assert counts.kendall_tau[run] == pytest.approx(
            kendalltau(estimates[run], reference[run]).statistic)


def test_a_nan_estimate_never_agrees_and_voids_tau():
    reference = np.array([[0.1, 0.5, 0.3, 0.3]])
    estimates = np.array([[np.nan, 0.5, 0.2, 0.1]])
    counts = pair_counts(estimates, reference)
    # the 3 pairs with the NaN model disagree; of the others, (0.5, 0.3) twice agree,
    # and the reference tie (0.3, 0.3) never does
    assert counts.pairs.sum() == 6 and counts.agreeing.sum() == 2 and counts.tied[0] == 1
    assert np.isnan(counts.kendall_tau[0])
    assert pair_counts(np.empty((0, 3)), np.empty((0, 3))).pairs.shape == (0, N_BINS)


def test_smooth_mdad_on_a_known_monotone_curve():
    # Agreement rises linearly from 0.5 at gap 0 to 1.0 at gap 0.1 (bin 20): it
    # crosses 0.8 at gap 0.06, between bin edges 0.055 and 0.06.
    n_runs, n_per_bin = 20, 1000
    bins = np.arange(21)
    rate = 0.5 + 0.5 * bins / 20
    run_pairs = np.zeros((n_runs, N_BINS), int)
    run_agree = np.zeros((n_runs, N_BINS), int)
    run_pairs[:, :21] = n_per_bin
    run_agree[:, :21] = np.round(rate * n_per_bin).astype(int)
    res = smooth_mdad(run_pairs, run_agree, rng=np.random.default_rng(0))
    assert res.mdad == pytest.approx(0.06, abs=1e-9)
    assert res.low <= res.mdad <= res.high


def test_smooth_mdad_ignores_a_lucky_early_bin_that_first_crossing_takes():
    run_pairs = np.zeros((10, N_BINS), int)
    run_agree = np.zeros((10, N_BINS), int)
    run_pairs[:, :30] = 200
    run_agree[:, :30] = (np.linspace(0.55, 0.95, 30) * 200).astype(int)
    run_pairs[:, 3], run_agree[:, 3] = 2, 2  # two lucky pairs at gap 0.015
    faithful = first_crossing_mdad(run_pairs.sum(0), run_agree.sum(0),
                                   rng=np.random.default_rng(0))
    smooth = smooth_mdad(run_pairs, run_agree, rng=np.random.default_rng(0))
    assert faithful.mdad == 0.015
    assert 0.08 < smooth.mdad < 0.1  # the linear curve crosses 0.8 near bin 18.75


def test_smooth_mdad_interval_resamples_runs():
    rng = np.random.default_rng(3)
    run_pairs = rng.integers(50, 100, size=(30, N_BINS))
    run_pairs[:, 60:] = 0
    rate = np.clip(0.5 + np.arange(N_BINS) / 80, 0, 1)
    run_agree = rng.binomial(run_pairs, rate)
    res = smooth_mdad(run_pairs, run_agree, rng=np.random.default_rng(0))
    assert res.low < res.mdad < res.high
    assert res.mdad == pytest.approx(0.12, abs=0.01)  # 0.5 + g/0.4 = 0.8 at g = 0.12
    # one run: every resample is that run, so its spread says nothing; once [m, m]
    one = smooth_mdad(run_pairs[:1], run_agree[:1], rng=np.random.default_rng(0))
    assert one.reached and one.low == 0.0 and np.isnan(one.high)


def test_tied_models_never_set_an_mdad_of_zero():
    # two identical models and two 20 points apart: the tie sits in bin 0 and never
    # agrees, however the micro-benchmark orders the tied pair
    reference = np.array([[0.3, 0.3, 0.5, 0.5]] * 4)
    estimates = np.array([[0.2, 0.4, 0.6, 0.7]] * 4)
    counts = pair_counts(estimates, reference)
    assert counts.tied.tolist() == [2] * 4
    assert counts.pairs[:, 0].tolist() == [2] * 4 and counts.agreeing[:, 0].tolist() == [0] * 4
    res = first_crossing_mdad(counts.pairs.sum(0), counts.agreeing.sum(0),
                              rng=np.random.default_rng(0), tied_pairs=int(counts.tied.sum()))
    assert res.mdad == 0.2 and res.tied_pairs == 8


def _isotonic_crossing(pairs, agreeing, threshold):
    """One curve's crossing from scipy's isotonic regression (the slow way)."""
    from scipy.optimize import isotonic_regression

    valid = np.flatnonzero(pairs > 0)
    if valid.size == 0:
        return np.nan
    fitted = isotonic_regression(agreeing[valid] / pairs[valid], weights=pairs[valid]).x
    # a block mean of exactly the threshold reaches it (scipy may return 0.4999...)
    above = np.flatnonzero(fitted >= threshold - 1e-9)
    if above.size == 0:
        return np.nan
    k = int(above[0])
    gaps = bin_edges(valid)
    if k == 0:
        return float(gaps[0])
    return float(gaps[k - 1] + (threshold - fitted[k - 1]) / (fitted[k] - fitted[k - 1])
                 * (gaps[k] - gaps[k - 1]))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.sampled_from([0.5, 0.77, 0.8, 0.9]))
def test_monotone_crossings_match_scipy_isotonic_regression(seed, n_bins, threshold):
    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, 6, size=(6, n_bins)) * (rng.random((6, n_bins)) < 0.7)
    agreeing = rng.binomial(pairs, rng.random((6, n_bins)))
    ours, crossing_pairs = monotone_crossings(pairs, agreeing, threshold)
    for row in range(6):
        expected = _isotonic_crossing(pairs[row].astype(float), agreeing[row].astype(float),
                                      threshold)
        assert ours[row] == pytest.approx(expected, abs=1e-9, nan_ok=True)
        assert (crossing_pairs[row] > 0) == np.isfinite(expected)


def test_smooth_mdad_censors_a_curve_that_never_reaches_the_threshold():
    run_pairs = np.zeros((10, N_BINS), int)
    run_pairs[:, :20] = 50
    run_agree = run_pairs // 2  # flat at 0.5
    res = smooth_mdad(run_pairs, run_agree, rng=np.random.default_rng(0))
    assert np.isnan([res.mdad, res.low, res.high]).all() and not res.reached
    assert res.max_gap == 0.095 and res.n_pairs == 10_000


@pytest.mark.parametrize(("kwargs", "error", "parameter"), [
    ({"threshold": 1.5}, ConfigError, "threshold"),
    ({"threshold": 0.0}, ConfigError, "threshold"),
    ({"threshold": float("nan")}, ConfigError, "threshold"),
    ({"threshold": True}, ConfigError, "threshold"),
    ({"n_resamples": 0}, ConfigError, "n_resamples"),
    ({"n_resamples": 2.5}, ConfigError, "n_resamples"),
    ({"tied_pairs": -1}, ConfigError, "tied_pairs"),
    ({"rng": 0}, ConfigError, "rng"),
    ({"pairs": [2.5, 1, 1]}, DataError, "pairs"),
    ({"pairs": [2, -1, 1]}, DataError, "pairs"),
    ({"agreeing": [3, 0, 1]}, DataError, "agreeing"),
    ({"agreeing": [1, 0]}, DataError, "pairs"),
])
@pytest.mark.parametrize("smooth", [False, True])
def test_mdad_functions_refuse_bad_input_naming_the_parameter(kwargs, error, parameter,
                                                              smooth):
    # once threshold=1.5 gave NaN and n_resamples=0 a raw IndexError
    arguments = {"pairs": [2, 1, 1], "agreeing": [1, 0, 1], "rng": np.random.default_rng(0),
                 **kwargs}
    pairs, agreeing = arguments.pop("pairs"), arguments.pop("agreeing")
    if smooth:  # one run: the same counts as a (1, n_bins) table
        pairs, agreeing = np.atleast_2d(pairs), np.atleast_2d(agreeing)
        function = smooth_mdad
    else:
        pairs, agreeing, function = np.asarray(pairs), np.asarray(agreeing), first_crossing_mdad
    with pytest.raises(error) as raised:
        function(pairs, agreeing, **arguments)
    assert parameter in raised.value.parameters and parameter in str(raised.value)
    assert "\n" not in str(raised.value)
