"""What `estimate`'s lists weigh besides the 99.9% interval: the chance, among models
like the reference models, of the other side (`estimate.wrong_side_chance`, from
`intervals.log_likelihood`)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import hypergeom

from mdad.practice.calibration import Calibration
from mdad.practice.estimate import WRONG_SIDE, estimate_score, wrong_side_chance
from mdad.practice.intervals import log_likelihood
from mdad.practice.results import ItemScores

accuracies = st.lists(st.integers(0, 20).map(lambda k: k / 20), min_size=1, max_size=30)


def test_wrong_side_chance_by_hand():
    # weights 1, 1, 2 on accuracies 0.2, 0.3, 0.3: at or below 0.2 is 1/4, at or above
    # 0.3 is 3/4; a tie is on the wrong side both ways
    not_above, not_below = wrong_side_chance(np.array([1.0, 1.0, 2.0]),
                                             np.array([0.2, 0.3, 0.3]))
    np.testing.assert_allclose(not_above, [0.25, 1.0, 1.0])
    np.testing.assert_allclose(not_below, [1.0, 0.75, 0.75])
    # no weight anywhere: nothing can be listed
    assert wrong_side_chance(np.zeros(3), np.array([0.1, 0.2, 0.3]))[0].tolist() == [1, 1, 1]


@given(accuracies, st.data())
def test_wrong_side_chance_is_the_weight_at_or_past_each_accuracy(truth, data):
    truth = np.array(truth)
    weights = np.array(data.draw(st.lists(st.floats(0, 10), min_size=truth.size,
                                          max_size=truth.size)))
    not_above, not_below = wrong_side_chance(weights, truth)
    if weights.sum() <= 0:
        assert (not_above == 1).all() and (not_below == 1).all()
        return
    for j, a in enumerate(truth):  # the brute force, model by model
        assert not_above[j] == pytest.approx(weights[truth <= a].sum() / weights.sum())
        assert not_below[j] == pytest.approx(weights[truth >= a].sum() / weights.sum())


def test_random_sampling_weighs_by_the_hypergeometric_probability(gpqa_data):
    from mdad.practice.bundle import select_microbenchmark

    bundle = select_microbenchmark(gpqa_data, "random", 10, seed=0)
    truth = np.array(bundle.reference_accuracy)
    got = log_likelihood(bundle, 0.8, 10, truth)
    # scipy's: 8 right of 10 drawn from 448 items, K = accuracy x 448 of them right
    expected = hypergeom.logpmf(8, 448, np.rint(truth * 448).astype(int), 10)
    np.testing.assert_allclose(got, expected, rtol=1e-9)


def test_the_belts_density_is_a_density_with_the_bands_tail_points():
    rng = np.random.default_rng(0)
    truth = rng.uniform(0.2, 0.6, 300)
    calibration = Calibration.fit(truth, truth + rng.normal(0.01, 0.05, 300),
                                  widen_past=False)
    y = np.linspace(-0.5, 1.5, 10001)
    for t in (0.25, 0.4, 0.55):
        density = np.exp([calibration.log_density(v, np.array([t]))[0] for v in y])
        cumulative = np.concatenate([[0.0], np.cumsum((density[1:] + density[:-1]) / 2
                                                      * np.diff(y))])
        assert cumulative[-1] == pytest.approx(1.0, abs=1e-3)
        low_tail, high_tail = calibration.tails_at(np.array([t]))
        centre = t + calibration.mean_at(np.array([t]))[0]
        spread = calibration.spread_at(np.array([t]))[0]
        # its 2.5% and 97.5% points are the belt's at this accuracy
        assert np.interp(0.025, cumulative, y) == pytest.approx(
            centre + low_tail[0] * spread, abs=1e-3)
        assert np.interp(0.975, cumulative, y) == pytest.approx(
            centre + high_tail[0] * spread, abs=1e-3)


def test_a_fluke_lists_only_what_the_reference_models_back(gpqa_data):
    # 8 of 10 right on a random micro-benchmark of GPQA, whose models score 20% to
    # 45%: the 99.9% interval alone would list the model above most of them; among
    # GPQA-like models so estimated, a quarter are below 30% (one, at 23.7%, did
    # exactly this in a held-out round trip)
    from mdad.practice.bundle import select_microbenchmark

    bundle = select_microbenchmark(gpqa_data, "random", 10, seed=0)
    scores = np.zeros(10)
    scores[:8] = 1.0
    estimate = estimate_score(bundle, ItemScores("fluke", scores, [], 0))
    truth = np.array(bundle.reference_accuracy)
    listed = np.isin(bundle.reference_models, estimate.above)
    assert estimate.low < 0.5 and (truth < estimate.low).sum() > 100  # the interval's
    log_weight = log_likelihood(bundle, 0.8, 10, truth)
    not_above, _ = wrong_side_chance(np.exp(log_weight - log_weight.max()), truth)
    assert 0 < listed.sum() and (not_above[listed] <= WRONG_SIDE).all()
    assert listed.sum() < (truth < estimate.low).sum() / 4
    assert truth[listed].max(initial=0.0) < 0.237


def test_a_count_no_reference_model_could_give_is_weighed_as_the_nearest(gpqa_data):
    # 250 of 300 right: no GPQA model has that many right items (the best has 203 of
    # 448), so the exact chance is 0 for all; the binomial's ranks them, and the model
    # is listed above all but the strongest few (it was "too close" to every one)
    from mdad.practice.bundle import select_microbenchmark

    bundle = select_microbenchmark(gpqa_data, "random", 300, seed=0)
    truth = np.array(bundle.reference_accuracy)
    assert (np.rint(truth * 448) < 250).all()
    assert np.isfinite(log_likelihood(bundle, 250 / 300, 300, truth)).all()  # the binomial
    scores = np.zeros(300)
    scores[:250] = 1.0
    estimate = estimate_score(bundle, ItemScores("strong", scores, [], 0))
    assert estimate.low > truth.max()
    assert len(estimate.above) >= 400 and estimate.below == []


def test_a_subtask_method_on_one_subtask_gets_the_exact_interval(gpqa_data):
    # GPQA has one subtask: subtask-equal and -proportional draw a simple random sample
    # there, whose interval is exact; a belt from 5 folds would see 5 draws only
    from mdad.practice.bundle import select_microbenchmark
    from mdad.selection import method_class

    assert np.unique(gpqa_data.matrix.subtask_codes).size == 1
    for method in ("subtask-equal", "subtask-proportional"):
        bundle = select_microbenchmark(gpqa_data, method, 25, seed=0)
        assert bundle.error_sd is None and bundle.cv_truth is None
        column = {str(item): k for k, item in enumerate(gpqa_data.matrix.item_ids)}
        scores = gpqa_data.matrix.scores([0])[0][[column[i] for i in bundle.items]]
        estimate = estimate_score(bundle, ItemScores("m", scores.astype(float), [], 0))
        assert estimate.interval_how.startswith("exact")
        assert method_class(method).simple_random(np.array([448]))
        assert not method_class(method).simple_random(np.array([200, 248]))
    assert not method_class("diversity").simple_random(np.array([448]))
