"""The adaptive test that chooses its own model (mdad.irt.cat_cv, `adaptive-cv`):
the path by hand, the error against an independent per-fold computation, the choice
as an argmin, the same choice whatever budgets were asked before, and the `best_items`
partition against a whole stable sort."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mdad.errors import ConfigError, DataError
from mdad.irt.cat import AdaptiveSession, best_items, item_gain
from mdad.irt.cat_cv import AdaptiveChoice, CrossValidatedTests, series
from mdad.selection import get_method
from mdad.selection.base import SeenPool


def test_the_series_by_hand():
    assert series(250).tolist() == [1, 2, 3, 4, 5, 6, 10, 16, 20, 25, 40, 50, 63, 100, 160,
                                     200, 250]
    assert series(7).tolist() == [1, 2, 3, 4, 5, 6]
    assert series(1000)[-3:].tolist() == [500, 630, 1000]


def _fake_fits(n_items: int, seed: int = 0):
    """Fixed item parameters per (fold, dims): what a fit on the other folds returns."""
    cache: dict = {}

    def fit(fold: int, dims: int):
        if (fold, dims) not in cache:
            rng = np.random.default_rng([seed, fold, dims])
            cache[fold, dims] = (np.abs(rng.normal(1, 0.5, (n_items, dims))),
                                 rng.normal(0, 1, n_items))
        return cache[fold, dims]
    return fit


def _answers(n_models: int, n_items: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=(n_models, 1))
    return (rng.random((n_models, n_items)) < 1 / (1 + np.exp(-(ability - rng.normal(
        size=n_items))))).astype(float)


def test_the_error_is_each_fold_s_batched_test_scored_independently():
    """Each candidate's error at each checkpoint equals the root mean square error of
    sessions run here directly, fold by fold, in the same batches."""
    scores = _answers(30, 40)
    folds = [np.arange(0, 30, 2), np.arange(1, 30, 2)]
    fit = _fake_fits(40)
    cv = CrossValidatedTests(scores, folds, fit, dims=(1, 2), prior_scales=(0.5, 1.0))
    budget = 12  # off the path: scored on a copy resumed at 10
    points = cv.checkpoints(budget)
    assert points.tolist() == [1, 2, 3, 4, 5, 6, 10, 12]
    truth = scores.mean(axis=1)
    for dims in (1, 2):
        for scale in (0.5, 1.0):
            squared = np.zeros(points.size)
            for k, held in enumerate(folds):
                a, b = fit(k, dims)
                session = AdaptiveSession(a * scale, b, held.size)
                for m, point in enumerate(points):
                    chosen = session.choose_batch(int(point) - session.n_steps)
                    session.record(chosen, scores[held][np.arange(held.size)[:, None], chosen])
                    squared[m] += ((session.accuracy() - truth[held]) ** 2).sum()
            np.testing.assert_allclose(cv.error(dims, scale, budget), np.sqrt(squared / 30),
                                       rtol=1e-12)


def test_the_choice_is_a_coordinate_search_s_least_error_and_the_later_stop_on_ties():
    """Dimensions at the first prior scale, then the other scales at the best
    dimension; each candidate at its least error, the choice the least of them."""
    scores = _answers(24, 30, seed=1)
    cv = CrossValidatedTests(scores, [np.arange(12), np.arange(12, 24)], _fake_fits(30, 1),
                             dims=(1, 2, 3), prior_scales=(1.0, 0.5, 2.0))
    choice = cv.choose(25)
    points = cv.checkpoints(25)
    grid = {(d, s): cv.error(d, s, 25) for d in (1, 2, 3) for s in (1.0, 0.5, 2.0)}
    stops = {key: cv.best_stop(*key, 25) for key in grid}
    best_dims = min((1, 2, 3), key=lambda d: stops[d, 1.0][1])
    assert [c[:2] for c in choice.candidates] == [(1, 1.0), (2, 1.0), (3, 1.0),
                                                  (best_dims, 0.5), (best_dims, 2.0)]
    for dims, scale, stop, error in choice.candidates:
        assert (stop, error) == stops[dims, scale]
        assert error == grid[dims, scale][list(points).index(stop)]
    assert choice.error == min(c[3] for c in choice.candidates)
    assert (choice.dims, choice.prior_scale, choice.stop) == min(
        choice.candidates, key=lambda c: c[3])[:3]
    assert AdaptiveChoice.from_json(choice.to_json()) == choice


@pytest.mark.parametrize(("squared", "stop"), [
    # an earlier checkpoint errs less, clearly: the test stops there
    ([[9, 9, 9, 9], [1, 1, 1, 1.1], [4, 4, 4, 4.2]], 4),
    # less on average, but within twice the standard error of the difference: the budget
    ([[9, 9, 9, 9], [0, 0, 0, 6], [4, 4, 4, 4]], 8),
    # ties: the later checkpoint; 0 answers never
    ([[0, 0, 0, 0], [1, 1, 1, 1], [1, 1, 1, 1]], 8),
])
def test_a_test_stops_early_only_when_that_clearly_errs_less(squared, stop):
    """Checkpoints 0, 4 and the budget 8, four held-out models; by hand: in the first
    case the difference at 4 is (-3, -3, -3, -3.1), mean -3.025, far below twice its
    standard error (0.05); in the second (-4, -4, -4, 2): mean -2.5, standard error
    1.5, -2.5 + 3 > 0."""
    cv = CrossValidatedTests(np.ones((4, 10)), [np.arange(2), np.arange(2, 4)],
                             _fake_fits(10), dims=(1,), prior_scales=(1.0,), path=[0, 4])
    cv.squared_errors = lambda dims, scale, budget: np.array(squared, dtype=float)
    assert cv.best_stop(1, 1.0, 8)[0] == stop
    assert cv.choose(8).stop == stop


@settings(max_examples=15, deadline=None)
@given(budgets=st.lists(st.integers(1, 60), min_size=2, max_size=4))
@example(budgets=[60, 8])  # off the path, below where the session went for 60
def test_the_choice_does_not_depend_on_the_budgets_asked_before(budgets):
    scores = _answers(20, 60, seed=2)
    folds = [np.arange(10), np.arange(10, 20)]

    def fresh():
        return CrossValidatedTests(scores, folds, _fake_fits(60, 2), dims=(1, 2),
                                   prior_scales=(1.0,))
    asked = fresh()
    for budget in budgets:
        asked.choose(budget)
    for budget in budgets:
        assert asked.choose(budget) == fresh().choose(budget)


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), dims=st.sampled_from([1, 3]),
       n_items=st.integers(2, 120), duplicates=st.booleans())
def test_best_items_is_the_stable_sort_s_first_k(seed, dims, n_items, duplicates):
    """The partition keeps the whole sort's answer, ties (duplicate items) to the
    lowest index."""
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(n_items, dims)), rng.normal(size=n_items)
    if duplicates:
        half = n_items // 2
        a[half:2 * half], b[half:2 * half] = a[:half], b[:half]
    n = int(rng.integers(1, 20))
    ability = rng.normal(size=(n, dims))
    covariance = np.broadcast_to(np.eye(dims), (n, dims, dims)).copy()
    available = rng.random((n, n_items)) > 0.3
    available[:, 0] = True
    k = int(rng.integers(1, available.sum(axis=1).min() + 1))
    gain = item_gain(ability, covariance, a, b)
    gain[~available] = -np.inf
    expected = np.argsort(-gain, axis=1, kind="stable")[:, :k]
    np.testing.assert_array_equal(best_items(ability, covariance, available, a, b, k),
                                  expected)


def test_the_study_method_gives_the_chosen_test():
    """`adaptive-cv` gives each target the test its cross-validation chose, up to the
    chosen stop, and reads only the sources to choose."""
    rng = np.random.default_rng(3)
    scores = (rng.random((60, 50)) < 0.5).astype(float)
    pool = SeenPool(scores[:40], np.zeros((40, 50)), np.zeros(50, dtype=int),
                    np.random.SeedSequence(4))
    method = get_method("adaptive-cv")
    bench = method.select(pool, 20, rng=np.random.default_rng(0))
    choice = pool._cache["adaptive-cv"].choose(20)
    assert bench.length == choice.stop <= 20
    assert bench.discrimination.shape[:1] == (50,)
    assert (bench.discrimination.ndim == 1) == (choice.dims == 1)
    estimates, exposure = bench.estimate_with_exposure(scores[40:])
    assert estimates.shape == (20,) and 0 < exposure.distinct_items <= 50


def test_a_study_with_too_few_sources_is_refused_naming_the_minimum(tmp_path):
    from helpers import assert_user_error, mdad_cli

    proc = mdad_cli("run", "synthetic:gpqa", "--models", "40", "--methods", "adaptive-cv",
                    "--sources", "5", "--targets", "10", "--runs", "1", "--out",
                    tmp_path / "study")
    assert_user_error(proc, "method adaptive-cv needs at least 6 source models; got --sources 5")


@pytest.mark.parametrize("budget", [5, 25])
def test_practice_candidates_are_the_fixed_methods_held_out_tests(gpqa_data, budget):
    """adaptive-cv's candidates (1, 1.0) and (3, 1.0) are adaptive's and adaptive-md's
    held-out tests: each fold fitted on the other folds with the fixed method's seed,
    its models tested by `run_batches` here directly; their root mean square error
    after each batch is the fixed methods' `cv_error`, and the candidates' errors are
    those at their stops."""
    from mdad import streams
    from mdad.practice.adaptive import _fold_fit, run_batches, start_adaptive_test
    from mdad.practice.calibration import cross_validation_folds
    from mdad.selection.threads import one_thread

    models = np.arange(0, 420, 7)
    scores = gpqa_data.matrix.scores()[models].astype(float)
    chosen = start_adaptive_test(gpqa_data, budget=budget, batch=5, method="adaptive-cv",
                                 models=models)
    assert chosen.choice is not None and chosen.budget == chosen.choice.stop <= budget
    assert chosen.discrimination.shape == (448, chosen.choice.dims)
    best = {c[:2]: c[2:] for c in chosen.choice.candidates}
    for method, dims in (("adaptive", 1), ("adaptive-md", 3)):
        estimates = np.empty((budget // 5 + 1, models.size))
        # one BLAS thread, as start_adaptive_test fits: with two, OpenBLAS's Haswell
        # kernels round some products otherwise
        with one_thread():
            for k, held in enumerate(cross_validation_folds(0, models.size)):
                a, b = _fold_fit(scores, dims, streams.rng(0, "cross-validation", "fit", k),
                                 held)
                counts, estimates[:, held] = run_batches(a, b, scores[held], budget, 5)
        error = np.sqrt(((estimates - scores.mean(axis=1)) ** 2).mean(axis=1))
        fixed = start_adaptive_test(gpqa_data, budget=budget, batch=5, method=method,
                                    models=models)
        assert fixed.cv_answered == counts
        np.testing.assert_allclose(fixed.cv_error, error, rtol=1e-12)
        stop, candidate = best[dims, 1.0]
        assert candidate == pytest.approx(error[counts.index(stop)], rel=1e-12)
    assert chosen.choice.error == min(error for _, error in best.values())


@pytest.mark.slow
def test_starts_sharing_a_cache_give_the_same_tests_and_fit_nothing_twice(gpqa_data,
                                                                         monkeypatch):
    """Two budgets' adaptive-cv starts that share a cache: the second fits only what the
    first did not (a chosen dimension's fit on every model and its folds beyond) and
    gives the state an uncached start gives; a third with the first's budget fits
    nothing and gives the first's state. A cache from other models is not reused."""
    from mdad.practice import adaptive

    models = np.arange(0, 420, 7)
    fitted = []
    real = adaptive._standardised_fit
    monkeypatch.setattr(adaptive, "_standardised_fit",
                        lambda *args: fitted.append(args[1]) or real(*args))

    def start(budget, cache, rows=models):
        fitted.clear()
        return adaptive.start_adaptive_test(gpqa_data, budget=budget, batch=5,
                                            method="adaptive-cv", models=rows,
                                            cache=cache).to_json()

    cache: dict = {}
    first, second = start(10, cache), start(40, cache)
    dims = {first["choice"]["dims"], second["choice"]["dims"]}
    assert len(fitted) == (0 if len(dims) == 1 else 1 + 2 * (second["choice"]["dims"] > 1))
    assert start(10, cache) == first and fitted == []
    assert start(40, None) == second
    start(10, cache, rows=models + 1)
    assert len(fitted) >= 20  # 5 folds x 4 dimensions, and the final fits
    with pytest.raises(ConfigError, match="cache must be a dict or None"):
        start(10, [])


@pytest.fixture(scope="module")
def cv_state(gpqa_data) -> dict:
    from mdad.practice.adaptive import start_adaptive_test

    return start_adaptive_test(gpqa_data, budget=20, batch=5, method="adaptive-cv",
                               models=np.arange(0, 420, 6)).to_json()


def test_a_chosen_test_saves_and_loads_and_its_choice_is_checked(cv_state):
    """The choice round-trips; a state whose choice disagrees with its fit or budget,
    or an adaptive-cv state without one, is refused naming the field; a /2 state (no
    `choice`) still reads."""
    from mdad.practice.adaptive import AdaptiveTest

    test = AdaptiveTest.from_json(copy.deepcopy(cv_state), "state.json")
    assert test.choice is not None and test.choice.to_json() == cv_state["choice"]
    assert test.discrimination.shape[1] == cv_state["choice"]["dims"]
    other_dims = 1 if cv_state["choice"]["dims"] != 1 else 2
    wrong = [
        ({"choice": None}, "'choice' must be null for adaptive and adaptive-md; for "
                           "adaptive-cv, the cross-validated choice"),
        ({"choice": {**cv_state["choice"], "dims": other_dims}}, "'discrimination'"),
        ({"choice": {**cv_state["choice"], "extra": 1}}, "'choice'"),
        ({"choice": {**cv_state["choice"], "stop": 0}}, "'choice'"),
        ({"choice": {**cv_state["choice"], "candidates": [[1, 1.0, 5, 2.0]]}}, "'choice'"),
        ({"budget": cv_state["budget"] - 1}, "'budget' must be a whole number from 1 to the "
                                             "number of items \\(adaptive-cv: the choice's stop"),
        ({"method": "adaptive-md"}, "'choice' must be null"),
    ]
    mixed = {**cv_state["choice"], 1: 2}  # keys of two types: refused, never sorted
    wrong += [({"choice": mixed}, "'choice'"), ({"item_ids": 3}, "'item_ids'"),
              ({"item_ids": None}, "'item_ids'")]
    for change, message in wrong:
        with pytest.raises(DataError, match=f"^state.json: field {message}"):
            AdaptiveTest.from_json({**copy.deepcopy(cv_state), **change}, "state.json")
    with pytest.raises(DataError, match=r"^state\.json: field 'item_ids' is missing"):
        AdaptiveTest.from_json({k: v for k, v in cv_state.items() if k != "item_ids"},
                               "state.json")
    older = {k: v for k, v in cv_state.items() if k != "choice"}
    with pytest.raises(DataError, match="'choice' must be null"):  # /2 had no adaptive-cv
        AdaptiveTest.from_json({**older, "format": "mdad-adaptive/2"}, "state.json")
    fixed = {**older, "format": "mdad-adaptive/2", "method": "adaptive-md",
             "discrimination": [[0.5, 0.5, 0.5]] * len(older["item_ids"])}
    assert AdaptiveTest.from_json(fixed, "state.json").choice is None


def test_adaptive_start_prints_the_choice(tmp_path):
    """`mdad adaptive start --method adaptive-cv` says what it chose, and the state
    holds it."""
    import pandas as pd
    from helpers import GPQA_CSV, assert_ok, flat, mdad_cli, shared_data

    frame = pd.read_csv(shared_data(GPQA_CSV))
    models = [c for c in frame.columns if c not in ("subset", "subtask_range")][::6]
    frame[models].to_csv(tmp_path / "gpqa70.csv", index=False)
    state = tmp_path / "s.json"
    proc = mdad_cli("adaptive", "start", tmp_path / "gpqa70.csv", "--budget", "30", "--batch",
                    "10", "--method", "adaptive-cv", "--out", state)
    assert_ok(proc)
    choice = json.loads(state.read_text())["choice"]
    text = flat(proc.stdout)
    assert (f"chosen by cross-validation: {choice['dims']}-D IRT, prior sd "
            f"{choice['prior_scale']:g}, stop after {choice['stop']} of 30 items") in text
    assert f"{len(choice['candidates'])} candidates cross-validated in 5 folds over 70" in text
