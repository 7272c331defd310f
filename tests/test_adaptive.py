"""Adaptive testing (mdad.irt.cat and the `adaptive` study methods): against a slow
per-examinee reference loop, a 3-item case worked by hand, and the study protocol."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq, minimize_scalar
from scipy.special import expit

from mdad.irt.cat import administer, fisher_information, posterior_ability, sigmoid
from mdad.selection import get_method
from mdad.selection.base import SeenPool


def reference_cat(answers_row: np.ndarray, a: np.ndarray, b: np.ndarray, n_steps: int,
                  draws: list[int] | None = None, top: int = 1):
    """One examinee, one item at a time: information by the textbook formula, the
    MAP ability by a bounded scalar optimiser, `draws[step]` picking among the top
    items (sorted by index) when `top` > 1."""
    used: list[int] = []
    theta = 0.0
    for step in range(n_steps):
        p = expit(a * theta - b)
        info = [a[j] ** 2 * p[j] * (1 - p[j]) if j not in used else -np.inf
                for j in range(a.size)]
        if top == 1:
            chosen = int(np.argmax(info))
        else:
            k = min(top, a.size - step)
            best = sorted(np.argsort(info, kind="stable")[::-1][:k])
            chosen = int(best[draws[step]])
        used.append(chosen)
        y, ai, bi = answers_row[used], a[used], b[used]

        def negative_log_posterior(t: float, y=y, ai=ai, bi=bi) -> float:
            z = ai * t - bi
            return -float(np.sum(y * z - np.logaddexp(0, z))) + 0.5 * t * t

        theta = minimize_scalar(negative_log_posterior, bounds=(-20, 20), method="bounded",
                                options={"xatol": 1e-12}).x
    p = expit(a * theta - b)
    p[used] = answers_row[used]
    return p.mean(), theta, used


def test_three_items_by_hand():
    """a = (1, 2, 1), b = (0, 0, 1). At theta = 0 the informations are 1/4, 1 and
    e/(1+e)^2: item 1 first. After a right answer the MAP ability solves
    2 (1 - s(2t)) = t; there item 2 (information s(t-1)(1-s(t-1))) just beats item 0
    (s(t)(1-s(t))). After a wrong answer on item 2 the ability solves
    2 (1 - s(2t)) - s(t - 1) = t, and the estimate is (1 + 0 + s(t)) / 3."""
    a, b = np.array([1.0, 2.0, 1.0]), np.array([0.0, 0.0, 1.0])
    answers = np.array([[0.0, 1.0, 0.0]])
    np.testing.assert_allclose(fisher_information(np.zeros(1), a, b)[0],
                               [0.25, 1.0, np.e / (1 + np.e) ** 2])
    t1 = brentq(lambda t: 2 * (1 - expit(2 * t)) - t, -5, 5)
    assert t1 == pytest.approx(0.52130, abs=1e-5)
    assert expit(t1 - 1) * (1 - expit(t1 - 1)) > expit(t1) * (1 - expit(t1))
    t2 = brentq(lambda t: 2 * (1 - expit(2 * t)) - expit(t - 1) - t, -5, 5)
    run = administer(answers, a, b, 2)
    assert run.items.tolist() == [[1, 2]]
    assert run.ability[0, 0] == pytest.approx(t2, abs=1e-9)
    assert run.estimates[0] == pytest.approx((1 + 0 + expit(t2)) / 3, abs=1e-9)
    # the posterior information at the mode: the prior's 1 plus each item's
    expected_se = 1 / np.sqrt(1 + 4 * expit(2 * t2) * (1 - expit(2 * t2))
                              + expit(t2 - 1) * (1 - expit(t2 - 1)))
    assert run.standard_error[0] == pytest.approx(expected_se, abs=1e-9)
    third = administer(answers, a, b, 3)
    assert third.items.tolist() == [[1, 2, 0]]
    assert third.estimates[0] == pytest.approx(1 / 3, abs=1e-12)  # every item answered


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_items=st.integers(2, 30), data=st.data())
def test_vectorised_cat_equals_the_per_examinee_loop(seed, n_items, data):
    rng = np.random.default_rng(seed)
    n_examinees = data.draw(st.integers(1, 6))
    n_steps = data.draw(st.integers(0, n_items))
    a = rng.uniform(0.2, 2.5, n_items)
    b = rng.normal(0, 1.5, n_items)
    answers = (rng.random((n_examinees, n_items)) < 0.5).astype(float)
    run = administer(answers, a, b, n_steps)
    for i in range(n_examinees):
        estimate, theta, used = reference_cat(answers[i], a, b, n_steps)
        assert run.items[i].tolist() == used
        assert run.ability[i, 0] == pytest.approx(theta, abs=1e-6)
        assert run.estimates[i] == pytest.approx(estimate, abs=1e-7)


def test_randomesque_draws_among_the_five_best_as_the_loop_does():
    rng = np.random.default_rng(3)
    n_examinees, n_items, n_steps = 4, 25, 12
    a, b = rng.uniform(0.3, 2.0, n_items), rng.normal(0, 1, n_items)
    answers = (rng.random((n_examinees, n_items)) < 0.4).astype(float)
    run = administer(answers, a, b, n_steps, top=5, rng=np.random.default_rng(11))
    # the same generator, drawn as the vectorised test draws: one vector per step
    draws = np.random.default_rng(11)
    per_step = [draws.integers(5, size=n_examinees) for _ in range(n_steps)]
    for i in range(n_examinees):
        estimate, _, used = reference_cat(answers[i], a, b, n_steps,
                                          draws=[int(d[i]) for d in per_step], top=5)
        assert run.items[i].tolist() == used
        assert run.estimates[i] == pytest.approx(estimate, abs=1e-7)
    assert len({tuple(row) for row in run.items}) > 1  # not every examinee sees the same


def test_posterior_ability_is_the_mode_and_the_prior_without_items():
    theta, covariance = posterior_ability(np.empty((3, 0, 2)), np.empty((3, 0)), np.empty((3, 0)))
    assert theta.tolist() == [[0.0, 0.0]] * 3
    assert np.array_equal(covariance, np.stack([np.eye(2)] * 3))
    a = np.array([[[1.5], [0.5], [2.0]]])
    b = np.array([[0.2, -1.0, 1.0]])
    y = np.array([[1.0, 1.0, 1.0]])  # every answer right: still finite, by the prior
    theta, _ = posterior_ability(a, b, y)  # D = 1: the offset D b is b
    grad = float((a[..., 0] * (y - expit(theta[:, :1] * a[..., 0] - b))).sum() - theta[0, 0])
    assert abs(grad) < 1e-9 and 0 < theta[0, 0] < 5


def test_multidimensional_map_is_the_mode_of_the_log_posterior():
    """Two dimensions: the gradient of the log posterior vanishes at the returned
    ability, and the covariance inverts its negative Hessian there."""
    rng = np.random.default_rng(8)
    a = rng.normal(0, 1, (3, 12, 2))
    c = rng.normal(0, 1, (3, 12))
    y = (rng.random((3, 12)) < 0.5).astype(float)
    theta, covariance = posterior_ability(a, c / 2, y)  # difficulties: the offset is 2 b
    p = expit(np.einsum("nkd,nd->nk", a, theta) - c)
    gradient = np.einsum("nk,nkd->nd", y - p, a) - theta
    assert np.abs(gradient).max() < 1e-9
    hessian = np.einsum("nk,nkd,nke->nde", p * (1 - p), a, a) + np.eye(2)
    np.testing.assert_allclose(np.einsum("nde,nef->ndf", covariance, hessian),
                               np.stack([np.eye(2)] * 3), atol=1e-10)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=50))
def test_sigmoid_is_scipys_expit_to_the_last_bits(values):
    """The tests' logistic is within 2.3e-16 of expit, in [0, 1], and symmetric."""
    z = np.array(values)
    p = sigmoid(z)
    assert p.shape == z.shape and np.all((p >= 0) & (p <= 1))
    np.testing.assert_allclose(p, expit(z), rtol=0, atol=2.3e-16)
    np.testing.assert_allclose(p + sigmoid(-z), 1.0, rtol=0, atol=4.5e-16)
    assert sigmoid(values[0]).shape == () and sigmoid(values[0]) == pytest.approx(
        expit(values[0]), abs=2.3e-16)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), dims=st.sampled_from([1, 2, 3, 5]),
       n_items=st.integers(1, 8), spread=st.floats(0.5, 4.0))
def test_newton_reaches_the_mode_from_anywhere(seed, dims, n_items, spread):
    """From the prior mean, with few and strongly discriminating items, the ability
    returned is the mode: the gradient of the log posterior vanishes there, for numpy's
    steps and a session's compiled ones alike. (Damped Newton steps without a line
    search circled the mode for ever in up to a fifth of such cases in 5-D.)"""
    rng = np.random.default_rng(seed)
    a = rng.normal(0, spread, (20, n_items, dims))
    b = rng.normal(0, 2, (20, n_items))
    y = (rng.random((20, n_items)) < 0.5).astype(float)
    theta, covariance = posterior_ability(a, b, y)
    for ability in (_session_ability(a, b, y), theta):
        p = expit(np.einsum("nkd,nd->nk", a, ability) - dims * b)
        gradient = np.einsum("nk,nkd->nd", y - p, a) - ability
        assert np.abs(gradient).max() < 1e-6
    # numpy's covariance is the inverse posterior information at its mode
    hessian = np.einsum("nk,nkd,nke->nde", p * (1 - p), a, a) + np.eye(dims)
    np.testing.assert_allclose(np.einsum("nde,nef->ndf", covariance, hessian),
                               np.broadcast_to(np.eye(dims), hessian.shape), atol=1e-8)


def _session_ability(a: np.ndarray, b: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Each row's MAP ability by a session of its own on its own items (a (n, k, D),
    b and y (n, k)), recorded in one batch from the prior mean."""
    from mdad.irt.cat import AdaptiveSession

    out = np.empty((a.shape[0], a.shape[2]))
    for i in range(a.shape[0]):
        session = AdaptiveSession(a[i], b[i], 1)
        session.record(np.arange(a.shape[1])[None], y[i:i + 1])
        out[i] = session.ability[0]
    return out


def test_compiled_steps_solve_one_item_by_hand():
    """One item a = (3, 4) (|a| = 5), offset 1, answered right: the mode lies along a,
    theta = t a / 5 with t = 5 (1 - s(5 t - 1)), and the information there is
    I + s (1 - s) a a'. A session's compiled steps (D > 1) find both."""
    from mdad.irt.cat import AdaptiveSession

    t = brentq(lambda t: 5 * (1 - expit(5 * t - 1)) - t, -10, 10)
    session = AdaptiveSession(np.array([[3.0, 4.0]]), np.array([0.5]), 1)  # offset 2 b
    session.record(np.array([[0]]), np.array([[1.0]]))
    np.testing.assert_allclose(session.ability[0], t * np.array([0.6, 0.8]), atol=1e-10)
    s = expit(5 * t - 1)
    precision = np.eye(2) + s * (1 - s) * np.outer([3.0, 4.0], [3.0, 4.0])
    # the covariance where the last step started, within 1e-5 of the mode
    np.testing.assert_allclose(session.covariance[0], np.linalg.inv(precision), atol=1e-5)
    np.testing.assert_allclose(session.result().covariance[0], np.linalg.inv(precision),
                               atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), dims=st.sampled_from([1, 2, 3, 5]),
       n_items=st.integers(1, 40), batch=st.integers(1, 8))
def test_compiled_steps_reach_numpys_mode(seed, dims, n_items, batch):
    """A session's compiled Newton steps (D > 1) end at the mode numpy's steps find
    (`posterior_ability`), to 1e-8, after each batch of answers, from where the session
    stood."""
    from mdad.irt.cat import AdaptiveSession

    rng = np.random.default_rng(seed)
    a, b = rng.normal(0, 1, (n_items, dims)), rng.normal(0, 1, n_items)
    scores = (rng.random((3, n_items)) < 0.5).astype(float)
    session = AdaptiveSession(a, b, 3)
    rows = np.arange(3)[:, None]
    while session.n_steps < n_items:
        chosen = session.choose_batch(min(batch, n_items - session.n_steps))
        session.record(chosen, scores[rows, chosen])
        theta, _ = posterior_ability(a[session.items], b[session.items], session.answers)
        np.testing.assert_allclose(session.ability, theta, atol=1e-8)
        assert np.all(np.isfinite(session.covariance))


@pytest.mark.parametrize("dims", [1, 3])
def test_a_session_of_no_examinees_is_empty_and_wrong_items_are_refused(dims):
    """No examinee: every step and result is empty (it raised a reshape error). Items
    and answers are one row per examinee (a flat array is refused, not reshaped), and
    an item outside the pool or given already is refused before anything changes."""
    from mdad.irt.cat import AdaptiveSession

    a, b = np.ones((4, dims)), np.array([-1.0, 0.0, 0.5, 1.0])
    run = administer(np.zeros((0, 4)), a, b, 3)
    assert run.estimates.shape == (0,) and run.items.shape == (0, 3)
    assert run.ability.shape == (0, dims) and run.covariance.shape == (0, dims, dims)
    session = AdaptiveSession(a, b, 2)
    with pytest.raises(ValueError, match=r"must have shape \(2, m\); got \(2,\) and \(2,\)"):
        session.record(np.array([0, 1]), np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match=r"got \(2, 1\) and \(1, 2\)"):  # transposed
        session.record(np.array([[0], [1]]), np.array([[1.0, 0.0]]))
    session.record(np.array([[0], [1]]), np.array([[1.0], [0.0]]))
    for wrong in ([[1], [1]], [[4], [2]], [[-1], [2]], [[2, 2], [2, 3]]):
        with pytest.raises(ValueError, match=r"indices in 0\.\.3 that each examinee has not"):
            session.record(np.array(wrong), np.zeros((2, len(wrong[0]))))
    assert session.n_steps == 1 and session.available.sum() == 6


def test_a_session_s_past_answers_stay_put_and_its_copy_is_its_own():
    """What a session returned is not changed by its later steps, and a copy advances
    apart from it, as the tests a study's sizes resume need."""
    from mdad.irt.cat import AdaptiveSession

    rng = np.random.default_rng(8)
    a, b = rng.normal(0, 1, (60, 3)), rng.normal(0, 1, 60)
    scores = (rng.random((4, 60)) < 0.5).astype(float)
    session = AdaptiveSession(a, b, 4)
    session.advance(scores, 10)
    run, items, answers = session.result(), session.items, session.answers
    kept = [run.items.copy(), items.copy(), answers.copy(), run.estimates.copy()]
    twin = session.copy()
    twin.advance(scores, 30)  # past every buffer's room
    session.advance(scores, 20)
    for now, before in zip([run.items, items, answers, run.estimates], kept, strict=True):
        np.testing.assert_array_equal(now, before)
    np.testing.assert_array_equal(twin.items[:, :30], session.items)
    assert twin.n_steps == 40 and session.n_steps == 30
    again = AdaptiveSession(a, b, 4)
    again.advance(scores, 40)
    np.testing.assert_array_equal(twin.items, again.items)
    np.testing.assert_array_equal(twin.result().estimates, again.result().estimates)


def test_multidimensional_selection_maximises_the_determinant_gain():
    """The chosen item is the one whose information matrix raises det(posterior
    information) the most, checked by computing every determinant."""
    rng = np.random.default_rng(4)
    a = rng.normal(0, 1, (15, 3))
    b = rng.normal(0, 1, 15)
    answers = (rng.random((2, 15)) < 0.5).astype(float)
    run = administer(answers, a, b, 4)
    for i in range(2):
        for step in range(1, 4):
            given = run.items[i, :step]
            partial = administer(answers[i:i + 1], a, b, step)
            theta = partial.ability[0]
            p = expit(a @ theta - 3 * b)
            base = np.eye(3) + (a[given].T * (p[given] * (1 - p[given]))) @ a[given]
            dets = [np.linalg.det(base + p[j] * (1 - p[j]) * np.outer(a[j], a[j]))
                    if j not in given else -np.inf for j in range(15)]
            assert run.items[i, step] == int(np.argmax(dets))


def _pool(seed: int, n_sources: int = 60, n_items: int = 40) -> SeenPool:
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=n_sources)
    p = expit(1.3 * ability[:, None] - rng.normal(0, 1, n_items)[None, :])
    correct = (rng.random((n_sources, n_items)) < p).astype(np.uint8)
    return SeenPool(correct, correct.astype(np.float32), np.zeros(n_items, dtype=np.int64),
                    seed=np.random.SeedSequence(seed))


def test_study_method_reads_only_the_administered_answers():
    pool = _pool(0)
    micro = get_method("adaptive").select(pool, 8, rng=np.random.default_rng(0))
    targets = (np.random.default_rng(1).random((5, pool.n_items)) < 0.5).astype(float)
    estimates, exposure = micro.estimate_with_exposure(targets)
    run = administer(targets, micro.discrimination, micro.difficulty, 8)
    np.testing.assert_array_equal(estimates, run.estimates)
    # answers the test never gives cannot change an estimate
    hidden = np.ones_like(targets, dtype=bool)
    hidden[np.arange(5)[:, None], run.items] = False
    changed = targets.copy()
    changed[hidden] = 1 - changed[hidden]
    np.testing.assert_array_equal(micro.estimate(changed), estimates)
    used = np.unique(run.items)
    assert exposure.distinct_items == used.size
    assert exposure.top_share == 1.0  # every target starts with the same item


def test_randomesque_spreads_exposure_and_is_seeded_by_the_pool():
    pool = _pool(2)
    method = get_method("adaptive-randomesque")
    targets = (np.random.default_rng(4).random((30, pool.n_items)) < 0.5).astype(float)
    first = method.select(pool, 6, rng=np.random.default_rng(5))
    again = method.select(pool, 6, rng=np.random.default_rng(5))
    np.testing.assert_array_equal(first.estimate(targets), again.estimate(targets))
    _, exposure = first.estimate_with_exposure(targets)
    assert exposure.top_share < 1.0


def test_saved_and_loaded_adaptive_test_gives_the_same_estimates():
    pool = _pool(1)
    cls = type(get_method("adaptive-randomesque"))
    micro = cls().select(pool, 7, rng=np.random.default_rng(9))
    loaded = cls.load_estimator(cls.save_estimator(micro), pool.n_items)
    targets = (np.random.default_rng(2).random((4, pool.n_items)) < 0.5).astype(float)
    np.testing.assert_array_equal(loaded.estimate(targets), micro.estimate(targets))


@pytest.mark.parametrize("name", ["adaptive", "adaptive-randomesque", "adaptive-md"])
def test_sizes_that_resume_a_shorter_test_equal_a_test_from_the_start(name):
    """A study's sizes share the tests under way on a pool: size 12 after size 5 gives
    bit for bit what size 12 gives alone, and a larger size never reuses a longer test."""
    targets = (np.random.default_rng(6).random((9, 40)) < 0.5).astype(float)
    method = get_method(name)
    shared_pool = _pool(3)
    for size in (5, 20, 17, 35, 3):  # 20 and 35 grow a resumed test's buffers
        resumed = method.select(shared_pool, size, rng=np.random.default_rng(0))
        alone = method.select(_pool(3), size, rng=np.random.default_rng(0))
        got, got_exposure = resumed.estimate_with_exposure(targets)
        expected, expected_exposure = alone.estimate_with_exposure(targets)
        np.testing.assert_array_equal(got, expected)
        assert got_exposure == expected_exposure
