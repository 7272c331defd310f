"""The paper's model-based selection methods against slow, independent references.

Anchor Points (and its predictor), confidence strata, tinyBenchmarks (anchor, p-IRT,
gp-IRT) and Diversity are compared with ``reference_methods`` / ``reference_dpp``
(plain loops that import nothing from mdad), then checked for the selection contract,
degenerate pools, and plausible accuracy on real GPQA data.
"""

from __future__ import annotations

import inspect
import itertools
import warnings

import numpy as np
import pytest
import reference_dpp as refd
import reference_methods as refm
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit, logit
from scipy.stats import chisquare

from mdad.irt import MultidimensionalIrt
from mdad.selection import SeenPool, get_method
from mdad.selection import anchor_points as ap
from mdad.selection import diversity as dv
from mdad.selection import strata as sr
from mdad.selection import tinybenchmarks as tb
from mdad.selection.registry import METHODS, method_class

# Every static method in the registry, so that a new one is tested without editing a
# list. The variational fit's 2,000 epochs take a second even on a tiny pool: the quick
# tier checks the contract on the MAP variant (same anchors code), CI on both.
SLOW_FITS = ("tinybenchmarks", "tinybenchmarks-fast")
assert set(SLOW_FITS) <= set(METHODS)
STATIC = [name for name in sorted(METHODS) if method_class(name).static]


def cases(rows: list[tuple]) -> list:
    """`rows` (the method's name first) as parameters, the slow fits marked slow."""
    return [pytest.param(*row, marks=pytest.mark.slow) if row[0] in SLOW_FITS
            else pytest.param(*row) for row in rows]


NEW_METHODS = cases([(name,) for name in STATIC])
TOP = 2**31 - 1


# --------------------------------------------------------------------------- data helpers

def world(seed: int, n_models: int, n_items: int, dims: int = 2, noise: float = 0.1):
    """Synthetic (confidence, correctness) of `n_models` x `n_items` from a latent
    multidimensional logistic model: continuous confidences in [0, 1] and 0/1 draws."""
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=(n_models, dims))
    loading = rng.normal(0.8, 0.5, size=(n_items, dims))
    offset = rng.normal(0.0, 1.0, size=n_items)
    prob = expit(ability @ loading.T - offset)
    conf = np.clip(prob + noise * rng.normal(size=prob.shape), 0.0, 1.0)
    correct = (rng.random(prob.shape) < prob).astype(np.float64)
    return conf, correct


def with_constant_items(conf: np.ndarray) -> np.ndarray:
    """`conf` with constant items: two of equal value, others of different values
    (including exactly 0 and 1)."""
    conf = conf.copy()
    conf[:, 3] = 0.25
    conf[:, 7] = 0.25
    conf[:, 11] = 0.9
    conf[:, 13] = 0.0
    conf[:, 17] = 1.0
    return conf


def make_pool(correctness: np.ndarray, confidence: np.ndarray | None = None,
              seed: int = 0) -> SeenPool:
    correctness = np.asarray(correctness, dtype=np.float64)
    confidence = correctness if confidence is None else np.asarray(confidence, np.float64)
    codes = np.zeros(correctness.shape[1], dtype=np.int64)
    return SeenPool(correctness, confidence, codes, seed=np.random.SeedSequence(seed))


def fasterpam_seed(seed: int) -> int:
    """The FasterPAM seed that a method draws first from ``default_rng(seed)``."""
    return int(np.random.default_rng(seed).integers(TOP))


# --------------------------------------------------------------------------- 1. Anchor Points

@pytest.fixture(autouse=True)
def candidates_in_index_order(monkeypatch):
    """FasterPAM's candidates in index order here and in the reference (shuffled=False):
    the same start and order give the library's medoids, float for float; the
    shuffled orders (numpy's here, Rust's in the library) agree in distribution
    (tests/test_fasterpam.py)."""
    monkeypatch.setattr(ap, "_candidate_order", lambda state, n: np.arange(n))


def reference_anchor_correlation(conf: np.ndarray) -> np.ndarray:
    """The correlation matrix `refm.ref_anchor_points` builds: np.corrcoef, then its
    rules for exactly constant items."""
    corr = refm._raw_corrcoef(conf)
    constant = [refm._is_constant(conf[:, j]) for j in range(conf.shape[1])]
    for i in range(conf.shape[1]):
        for j in range(conf.shape[1]):
            if i == j:
                corr[i, j] = 1.0
            elif constant[i] and constant[j]:
                corr[i, j] = 1.0 if conf[0, i] == conf[0, j] else 0.0
            elif constant[i] or constant[j]:
                corr[i, j] = 0.0
    return corr


def medoid_loss(distance: np.ndarray, medoids: np.ndarray) -> float:
    return float(distance[:, medoids].min(axis=1).sum())


ANCHOR_CASES = [
    # (data seed, sources, items, size, constant items?)
    (0, 30, 60, 8, False),
    (5, 30, 60, 10, False),
    (1, 25, 50, 15, True),
    (2, 40, 80, 20, True),
    (6, 30, 60, 30, True),
    (3, 12, 30, 29, True),
    (4, 20, 40, 1, True),
]


def _anchor_data(data_seed, n_sources, n_items, constants):
    conf, correct = world(data_seed, n_sources + 6, n_items)
    if constants:
        conf = with_constant_items(conf)
    return conf[:n_sources], conf[n_sources:], make_pool(correct[:n_sources], conf[:n_sources])


@pytest.mark.parametrize(("data_seed", "n_sources", "n_items", "size", "constants"),
                         ANCHOR_CASES)
def test_item_correlation_matches_reference(data_seed, n_sources, n_items, size, constants):
    source, _, _ = _anchor_data(data_seed, n_sources, n_items, constants)
    ours = ap.item_correlation(source)
    np.testing.assert_allclose(ours, reference_anchor_correlation(source), rtol=0, atol=1e-14)
    assert np.array_equal(ours, ours.T) and np.all(np.diag(ours) == 1.0)


@pytest.mark.parametrize(("data_seed", "n_sources", "n_items", "size", "constants"),
                         ANCHOR_CASES)
def test_anchor_points_matches_reference(monkeypatch, data_seed, n_sources, n_items, size,
                                         constants):
    """Given the reference's correlation matrix (bit for bit; item_correlation agrees
    with it to 1e-14, checked above), medoids, their order and weights are identical."""
    source, target, pool = _anchor_data(data_seed, n_sources, n_items, constants)
    monkeypatch.setattr(ap, "item_correlation", reference_anchor_correlation)
    method = get_method("anchor-points")
    for seed in range(4):
        micro = method.select(pool, size, rng=np.random.default_rng(seed))
        medoids, weights = refm.ref_anchor_points(source, size, fasterpam_seed(seed),
                                                  shuffled=False)
        assert np.array_equal(micro.items, medoids)
        np.testing.assert_allclose(micro.weights, weights, rtol=0, atol=1e-12)
        assert micro.uses_confidence
        np.testing.assert_allclose(micro.estimate(target), target[:, medoids] @ weights,
                                   rtol=0, atol=1e-12)


@pytest.mark.parametrize(("data_seed", "n_sources", "n_items", "size", "constants"),
                         ANCHOR_CASES)
def test_anchor_points_end_to_end_agrees_up_to_rounding_ties(data_seed, n_sources, n_items,
                                                             size, constants):
    """Without help: identical on data with no exact ties; with constant items (whose
    distances tie exactly), 1e-16 differences in the correlation can steer FasterPAM to
    another medoid set of the same loss, never to a worse one."""
    source, target, pool = _anchor_data(data_seed, n_sources, n_items, constants)
    distance = 1.0 - reference_anchor_correlation(source)
    method = get_method("anchor-points")
    identical = 0
    for seed in range(4):
        micro = method.select(pool, size, rng=np.random.default_rng(seed))
        medoids, weights = refm.ref_anchor_points(source, size, fasterpam_seed(seed),
                                                  shuffled=False)
        if np.array_equal(micro.items, medoids):
            identical += 1
            np.testing.assert_allclose(micro.weights, weights, atol=1e-12)
        else:
            assert medoid_loss(distance, micro.items) == pytest.approx(
                medoid_loss(distance, medoids), rel=1e-12, abs=1e-12)
        assert micro.weights.sum() == pytest.approx(1.0)
        np.testing.assert_allclose(micro.estimate(target), target[:, micro.items] @ micro.weights,
                                   atol=1e-12)
    if not constants:
        assert identical == 4
    else:
        assert identical >= 2


def test_anchor_points_orphan_constant_items_join_the_closest_mean_medoid():
    # Two anti-correlated groups pull the two medoids away from the constant items,
    # which then have no constant medoid of their value (the reference's fallback).
    rng = np.random.default_rng(0)
    latent = rng.normal(size=(30, 1))
    conf = np.hstack([
        np.clip(0.3 + 0.1 * latent + rng.normal(0, 0.02, (30, 20)), 0, 1),
        np.clip(0.7 - 0.1 * latent + rng.normal(0, 0.02, (30, 20)), 0, 1),
        np.full((30, 1), 0.25), np.full((30, 1), 0.25), np.full((30, 1), 0.9),
    ])
    pool = make_pool((conf > 0.5).astype(float), conf)
    for seed in range(5):
        micro = get_method("anchor-points").select(pool, 2, rng=np.random.default_rng(seed))
        medoids, weights = refm.ref_anchor_points(conf, 2, fasterpam_seed(seed), shuffled=False)
        assert np.array_equal(micro.items, medoids)
        assert not {40, 41, 42} & set(medoids.tolist())
        np.testing.assert_allclose(micro.weights, weights, atol=1e-12)
        low = 0 if medoids[0] < 20 else 1
        assert weights[low] == pytest.approx(22 / 43)


def test_item_correlation_rules_for_constant_items():
    conf = with_constant_items(world(5, 15, 20)[0])
    corr = ap.item_correlation(conf)
    raw = np.corrcoef(conf[:, [0, 1, 2]], rowvar=False)
    np.testing.assert_allclose(corr[np.ix_([0, 1, 2], [0, 1, 2])], raw, atol=1e-12)
    assert corr[3, 7] == 1.0 and corr[3, 11] == 0.0 and corr[13, 17] == 0.0
    assert np.all(corr[3, [0, 1, 2]] == 0.0) and np.all(np.diag(corr) == 1.0)



def test_whole_number_correlation_by_hand():
    """Three models, 0/1: item 0 = (1, 1, 0), item 1 = (1, 0, 0), item 2 constant 1,
    item 3 = (0, 0, 1). n S_xy - S_x S_y: items 0 and 1: 3 * 1 - 2 * 1 = 1; variances
    3 * 2 - 4 = 2 and 3 * 1 - 1 = 2: correlation 1 / 2; items 0 and 3: 0 - 2 = -2, -1."""
    values = np.array([[1, 1, 1, 0], [1, 0, 1, 0], [0, 0, 1, 1]], dtype=np.float64)
    corr = ap.item_correlation(values)
    assert corr[0, 1] == 0.5 and corr[0, 3] == -1.0 and corr[1, 3] == -0.5
    assert np.all(corr[2, [0, 1, 3]] == 0.0) and np.all(np.diag(corr) == 1.0)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 40), st.integers(2, 30))
def test_whole_number_correlation_ignores_the_models_order(seed, n_models, n_items):
    """From exact sums, the correlation of 0/1 answers has the same bits whatever the
    order of the models (a float path sums in BLAS's order, and its bits move with it),
    and agrees with numpy's corrcoef to rounding."""
    rng = np.random.default_rng(seed)
    values = (rng.random((n_models, n_items)) < rng.random(n_items)).astype(np.float64)
    corr = ap.item_correlation(values)
    assert np.array_equal(corr, ap.item_correlation(values[rng.permutation(n_models)]))
    varying = np.ptp(values, axis=0) > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        raw = np.corrcoef(values[:, varying], rowvar=False)
    np.testing.assert_allclose(corr[np.ix_(varying, varying)], raw, rtol=0, atol=1e-14)
    assert np.array_equal(corr, corr.T)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(3, 40), st.integers(2, 30))
def test_predictor_gram_of_two_levels_is_exact(seed, n_models, n_items):
    """Clipped logits of 0/1 answers take two values: the predictor's centred
    cross-products and correlations then come from the 0/1 pattern's exact sums, the
    same bits whatever the order of the models, equal to the float computation up to
    rounding."""
    rng = np.random.default_rng(seed)
    answers = (rng.random((n_models, n_items)) < rng.random(n_items)).astype(np.float64)
    values = ap.clipped_logit(answers)
    gram, corr = ap._gram_and_correlation(values)
    again = ap._gram_and_correlation(values[rng.permutation(n_models)])
    assert np.array_equal(gram, again[0]) and np.array_equal(corr, again[1])
    centred = values - values.mean(axis=0)
    scale = max(1.0, np.abs(gram).max())
    np.testing.assert_allclose(gram, centred.T @ centred, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(corr, reference_predictor_correlation(values), rtol=0,
                               atol=1e-13)

def test_weighted_sum_sums_in_a_fixed_order():
    """`weighted_sum` is the matrix-vector product, each row's sum in numpy's pairwise
    order: the same bits for a row wherever it stands (BLAS may sum another way by
    position or thread), within rounding of the exact sum."""
    import math

    from mdad.selection.base import weighted_sum

    rng = np.random.default_rng(3)
    values = (rng.random((257, 300)) < 0.4).astype(np.float64)
    weights = rng.dirichlet(np.ones(300))
    total = weighted_sum(values, weights)
    assert np.array_equal(weighted_sum(values[::-1], weights), total[::-1])
    assert np.array_equal(weighted_sum(values[:1], weights), total[:1])
    exact = [math.fsum(row * weights) for row in values]
    np.testing.assert_allclose(total, exact, rtol=1e-15, atol=0)


# --------------------------------------------------------------------------- 2. predictor

def reference_predictor_correlation(values: np.ndarray) -> np.ndarray:
    """The correlation `refm.ref_anchor_predictor` builds on logit-confidences: np.corrcoef,
    0 for any pair with an exactly constant item (or NaN), 1 on the diagonal."""
    corr = refm._raw_corrcoef(values)
    constant = [refm._is_constant(values[:, j]) for j in range(values.shape[1])]
    for i in range(values.shape[1]):
        for j in range(values.shape[1]):
            if i == j:
                corr[i, j] = 1.0
            elif constant[i] or constant[j] or np.isnan(corr[i, j]):
                corr[i, j] = 0.0
    return corr


def _predictor_logits(values: np.ndarray) -> np.ndarray:
    low, high = refm.CONFIDENCE_CLIP
    return logit(np.clip(values, low, high))


def _threshold_ties(micro, target: np.ndarray) -> np.ndarray:
    """Per target, how many floaters' predicted logit is 0 up to rounding: on 0/1 data a
    floater's fitted value is often exactly 0 (half the sources with the anchor's
    value got it right), and then rounding alone decides "> 0"."""
    anchors = _predictor_logits(target)[:, micro.items]
    predicted = anchors[:, micro.nearest] * micro.slope + micro.intercept
    return (np.abs(predicted) < 1e-9).sum(axis=1)


def _residual_ties(micro, source: np.ndarray) -> int:
    """How many floaters fit two anchors equally well (least-squares residuals equal up
    to rounding): on 0/1 data two anchors with the same 2x2 table against a floater
    tie exactly, and rounding alone picks the nearest."""
    values = _predictor_logits(source)
    centred = values - values.mean(axis=0)
    floaters = np.setdiff1d(np.arange(values.shape[1]), micro.items)
    x, y = centred[:, micro.items], centred[:, floaters]
    sxx, sxy, syy = (x * x).sum(axis=0), x.T @ y, (y * y).sum(axis=0)
    flat = sxx <= 1e-12
    explained = sxy**2 / np.where(flat, 1.0, sxx)[:, None]
    residual = syy[None, :] - np.where(flat[:, None], 0.0, explained)
    best = residual.min(axis=0)
    close = np.abs(residual - best) <= 1e-9 * np.maximum(1.0, np.abs(best))
    return int((close.sum(axis=0) > 1).sum())


def _predictor_data(data_seed, n_sources, n_items, binary, constants=False):
    conf, correct = world(data_seed, n_sources + 8, n_items)
    if constants:
        conf = with_constant_items(conf)
    values = correct if binary else conf
    return values[:n_sources], values[n_sources:], make_pool(correct[:n_sources],
                                                             values[:n_sources])


PREDICTOR_CASES = [
    (10, 30, 50, 6, False),
    (11, 20, 40, 12, False),
    (12, 40, 60, 25, False),
]


@pytest.mark.parametrize(("data_seed", "n_sources", "n_items", "size", "binary"),
                         PREDICTOR_CASES)
def test_anchor_predictor_matches_reference(data_seed, n_sources, n_items, size, binary):
    source, target, pool = _predictor_data(data_seed, n_sources, n_items, binary)
    method = get_method("anchor-points-predictor")
    for seed in range(3):
        micro = method.select(pool, size, rng=np.random.default_rng(seed))
        expected = refm.ref_anchor_predictor(source, target, size, fasterpam_seed(seed),
                                             shuffled=False)
        np.testing.assert_allclose(micro.estimate(target), expected, rtol=0, atol=1e-12)
        assert micro.items.size == size == np.unique(micro.items).size


@pytest.mark.parametrize(("data_seed", "n_sources", "n_items", "size", "binary",
                          "constants"), [
    *[(*case, False) for case in PREDICTOR_CASES],
    (13, 30, 50, 6, True, False),
    (14, 25, 40, 10, True, False),
    (15, 20, 30, 20, False, True),
])
def test_anchor_predictor_pipeline_given_reference_correlation(
        monkeypatch, data_seed, n_sources, n_items, size, binary, constants):
    """With the reference's correlation matrix, the anchors, the floaters' nearest anchors
    and lines, and the estimates are the reference's; on 0/1 data up to the floaters
    whose prediction sits exactly on the threshold."""
    source, target, pool = _predictor_data(data_seed, n_sources, n_items, binary, constants)
    original = ap._gram_and_correlation
    monkeypatch.setattr(ap, "_gram_and_correlation", lambda values: (
        original(values)[0], reference_predictor_correlation(values)))
    method = get_method("anchor-points-predictor")
    for seed in range(3):
        micro = method.select(pool, size, rng=np.random.default_rng(seed))
        expected = refm.ref_anchor_predictor(source, target, size, fasterpam_seed(seed),
                                             shuffled=False)
        n_floaters = n_items - size
        gap = np.abs(micro.estimate(target) - expected) * n_floaters
        allowed = _threshold_ties(micro, target) + _residual_ties(micro, source)
        assert np.all(gap <= allowed + 1e-9), (gap, allowed)
        if not binary:
            np.testing.assert_allclose(micro.estimate(target), expected, atol=1e-12)


def test_predictor_correlation_of_constant_items_is_zero():
    """The reference's rule: an item constant over the sources correlates with nothing.
    Rounding leaves ~1e-16 noise in a constant column's centred values, which must not
    turn into a correlation (here: all-0 and all-1 confidence, logit -4.6 and 4.6)."""
    conf = np.column_stack([np.zeros(20), np.ones(20), np.linspace(0.1, 0.9, 20)])
    _, corr = ap._gram_and_correlation(_predictor_logits(conf))
    np.testing.assert_array_equal(corr, np.eye(3))


def test_anchor_predictor_with_constant_items_matches_reference():
    source, target, pool = _predictor_data(15, 20, 30, binary=False, constants=True)
    for seed in range(3):
        micro = get_method("anchor-points-predictor").select(
            pool, 20, rng=np.random.default_rng(seed))
        expected = refm.ref_anchor_predictor(source, target, 20, fasterpam_seed(seed),
                                             shuffled=False)
        np.testing.assert_allclose(micro.estimate(target), expected, atol=1e-12)


# --------------------------------------------------------------------------- 3. strata

# few distinct confidences on purpose: the reference's k-means then finds fewer clusters
# than asked and says so, which is the case tested
@pytest.mark.filterwarnings("ignore:Number of distinct clusters")
@settings(max_examples=40, deadline=None)
@given(n_items=st.integers(1, 90), n_levels=st.integers(1, 40), seed=st.integers(0, 10**6),
       data=st.data())
def test_strata_allocation_matches_reference(n_items, n_levels, seed, data):
    rng = np.random.default_rng(seed)
    levels = rng.random(n_levels)
    conf = rng.choice(levels, size=(4, n_items))  # few distinct values -> ties, k < 10
    size = data.draw(st.integers(1, n_items))
    labels = sr.confidence_strata(conf.mean(axis=0))
    counts = sr.allocate(np.bincount(labels), size)
    ref_labels, ref_counts = refm.ref_strata_allocation(conf, size)
    assert np.array_equal(labels, ref_labels)
    # Means 1 ulp apart count as distinct values, so k-means can leave a cluster
    # empty; the reference lists it (allocation 0), bincount stops at the last label.
    assert np.array_equal(counts, ref_counts[:counts.size])
    assert not ref_counts[counts.size:].any()
    assert counts.sum() <= size and np.all(counts <= np.bincount(labels))

    pool = make_pool((conf > 0.5).astype(float), conf)
    micro = get_method("confidence-strata").select(pool, size, rng=np.random.default_rng(seed))
    assert micro.items.size == size == np.unique(micro.items).size
    # Every stratum gives at least its allocation; the top-up makes the total exactly n.
    got = np.bincount(labels[micro.items], minlength=counts.size)
    assert np.all(got >= counts) and got.sum() == size
    targets = (rng.random((3, n_items)) < 0.5).astype(float)
    expected = refm.ref_horvitz_thompson(targets, micro.items, ref_labels, ref_counts, size)
    np.testing.assert_allclose(micro.estimate(targets), expected, rtol=1e-12, atol=1e-12)


def test_strata_allocation_gives_back_the_overshoot():
    # 10 strata of 3 items, n = 15: each rounds 1.5 up to 2 (half to even); 5 give one back.
    conf = np.repeat(np.linspace(0.05, 0.95, 10), 3)[None, :] * np.ones((4, 1))
    counts = sr.allocate(np.bincount(sr.confidence_strata(conf.mean(axis=0))), 15)
    assert counts.sum() == 15 and sorted(counts.tolist()) == [1] * 5 + [2] * 5
    assert np.array_equal(counts, refm.ref_strata_allocation(conf, 15)[1])


def _no_top_up_size(labels: np.ndarray, sizes: range) -> int:
    stratum_sizes = np.bincount(labels)
    for size in sizes:
        counts = sr.allocate(stratum_sizes, size)
        if counts.sum() == size and np.all(counts > 0):
            return size
    raise AssertionError("no size without top-up in range")


def test_strata_horvitz_thompson_is_unbiased_without_top_up():
    conf, correct = world(21, 40, 70)
    source, target = conf[:30], correct[30:]
    pool = make_pool(correct[:30], source)
    labels = sr.confidence_strata(source.mean(axis=0))
    size = _no_top_up_size(labels, range(12, 40))
    method = get_method("confidence-strata")
    n_draws = 3000
    estimates = np.empty((n_draws, target.shape[0]))
    for seed in range(n_draws):
        micro = method.select(pool, size, rng=np.random.default_rng(seed))
        estimates[seed] = micro.estimate(target)
    # Without top-up the weights are exact inclusion probabilities; an all-correct
    # model is estimated at exactly 1.
    assert micro.estimate(np.ones((1, 70)))[0] == pytest.approx(1.0, abs=1e-12)
    truth = target.mean(axis=1)
    standard_error = estimates.std(axis=0, ddof=1) / np.sqrt(n_draws)
    z = (estimates.mean(axis=0) - truth) / standard_error
    assert np.all(np.abs(z) < 4), z


def test_strata_horvitz_thompson_with_top_up_is_the_reference_formula():
    # With a top-up, the reference keeps the allocation-based probabilities, so an
    # all-correct model can be estimated above 1: the estimate is sum(weights) then.
    conf = np.repeat(np.linspace(0.05, 0.95, 10), 3)[None, :] * np.ones((4, 1))
    pool = make_pool((conf > 0.5).astype(float), conf)
    labels, counts = refm.ref_strata_allocation(conf, 12)
    assert counts.sum() < 12  # 1.2 rounds to 1 in every stratum: two items topped up
    micro = get_method("confidence-strata").select(pool, 12, rng=np.random.default_rng(0))
    ones = np.ones((1, 30))
    expected = refm.ref_horvitz_thompson(ones, micro.items, labels, counts, 12)
    assert micro.estimate(ones)[0] == pytest.approx(expected[0]) == pytest.approx(1.2)
    assert micro.estimate(ones)[0] == pytest.approx(micro.weights.sum())


# --------------------------------------------------------------------------- 4. tinyBenchmarks

def _irt_params(seed: int, n_items: int, dims: int = 10):
    rng = np.random.default_rng(seed)
    return rng.normal(0.3, 0.5, size=(n_items, dims)), rng.normal(0.0, 0.3, size=n_items)


@pytest.mark.parametrize(("seed", "n_items", "size"), [
    (0, 60, 5), (1, 80, 20), (2, 50, 40), (3, 120, 100),
    (6, 224, 10), (6, 224, 50), (7, 224, 200),
])
def test_tinybenchmarks_anchors_match_reference(seed, n_items, size):
    a, b = _irt_params(seed, n_items)
    anchors, weights = tb.irt_anchors(a, b, size)
    ref_anchors, ref_weights = refm.ref_tinybenchmarks_anchors(a, b, size)
    np.testing.assert_allclose(weights, ref_weights, atol=1e-12)
    assert np.unique(anchors).size == size
    _check_anchor_agreement(anchors, ref_anchors, a, b)


def _reference_centroids(a: np.ndarray, b: np.ndarray, size: int) -> np.ndarray:
    """The centroids of the reference's k-means call (sample weights 1/N, seed 42)."""
    from sklearn.cluster import KMeans

    embedding = np.column_stack([a, b])
    weights = np.full(embedding.shape[0], 1.0 / embedding.shape[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kmeans = KMeans(n_clusters=size, n_init="auto", random_state=refm.KMEANS_SEED)
        return kmeans.fit(embedding, sample_weight=weights).cluster_centers_


def _check_anchor_agreement(anchors, ref_anchors, a, b, tol=1e-9) -> None:
    """Ours are the reference's anchors up to exact distance ties (a two-item cluster's
    centroid is equidistant from both; rounding picks one), and where the reference
    repeats an item, ours take the nearest item that no earlier centroid took: so
    every centroid whose reference anchor is still free gets it, in particular the
    first centroid with each reference anchor (unless a tie or an earlier fallback
    took it)."""
    centroids = _reference_centroids(a, b, len(ref_anchors))
    distance = np.linalg.norm(centroids[:, None, :] - np.column_stack([a, b])[None], axis=2)
    rows = np.arange(len(ref_anchors))
    assert np.all(distance[rows, ref_anchors] <= distance.min(axis=1) + tol)  # oracle sanity
    for row, item in enumerate(ref_anchors.tolist()):
        taken = anchors[:row]
        free = np.setdiff1d(np.arange(distance.shape[1]), taken)
        assert distance[row, anchors[row]] <= distance[row, free].min() + tol, row
        if item not in taken:
            assert anchors[row] == item or abs(
                distance[row, anchors[row]] - distance[row, item]) <= tol, row


# the reference's own KMeans warns of the repeated points, the case under test
@pytest.mark.filterwarnings("ignore:Number of distinct clusters")
def test_tinybenchmarks_anchors_with_repeats_in_the_reference():
    # 12 distinct embeddings, each 4 times: 20 clusters need repeated centroids.
    a, b = _irt_params(7, 12)
    a, b = np.repeat(a, 4, axis=0), np.repeat(b, 4)
    anchors, weights = tb.irt_anchors(a, b, 20)
    ref_anchors, ref_weights = refm.ref_tinybenchmarks_anchors(a, b, 20)
    assert np.unique(ref_anchors).size < 20  # the case under test
    assert np.unique(anchors).size == 20
    np.testing.assert_allclose(weights, ref_weights, atol=1e-12)
    _check_anchor_agreement(anchors, ref_anchors, a, b)


def test_nearest_distinct_is_greedy_nearest_free_item():
    rng = np.random.default_rng(3)
    for _ in range(50):
        distance = rng.integers(0, 4, size=(6, 9)).astype(float)  # many ties
        chosen = tb.nearest_distinct(distance)
        assert np.unique(chosen).size == 6
        taken: list[int] = []
        for row in range(6):
            free = [j for j in range(9) if j not in taken]
            best = min(free, key=lambda j, r=row: (distance[r, j], j))
            assert chosen[row] == best
            taken.append(best)


@pytest.fixture(scope="module")
def irt_world():
    """Sources and targets from a 3-dimensional 2PL world, a pool of the sources."""
    rng = np.random.default_rng(42)
    n_items, dims = 60, 3
    a = rng.normal(0.8, 0.4, size=(n_items, dims))
    b = rng.normal(0.0, 0.4, size=n_items)
    theta = rng.normal(size=(56, dims))
    correct = (rng.random((56, n_items)) < expit(theta @ a.T - dims * b)).astype(float)
    return make_pool(correct[:50], seed=5), correct[50:]


@pytest.mark.parametrize("size", [5, 15, 40])
def test_pirt_matches_reference(irt_world, size):
    pool, targets = irt_world
    micro = get_method("tinybenchmarks-pirt").select(pool, size, rng=np.random.default_rng(0))
    a, b = micro.discrimination, micro.difficulty
    ref_anchors, ref_weights = refm.ref_tinybenchmarks_anchors(a, b, size)
    _check_anchor_agreement(micro.items, ref_anchors, a, b)
    np.testing.assert_allclose(micro.weights, ref_weights, atol=1e-12)
    expected = refm.ref_pirt(targets[:, micro.items], micro.items, a, b, pool.n_items)
    np.testing.assert_allclose(micro.estimate(targets), expected, atol=1e-5)
    # Every item an anchor: p-IRT is the plain mean.
    whole = tb.IrtBenchmark(np.arange(pool.n_items), np.full(pool.n_items, 1 / pool.n_items),
                            discrimination=a, difficulty=b)
    np.testing.assert_allclose(whole.estimate(targets), targets.mean(axis=1), atol=1e-12)


def test_gpirt_weight_matches_reference():
    for bias in (0.0, 1e-3, 0.02, 0.1, 0.5):
        for variance in (0.0, 0.05, 0.25):
            for size in (1, 10, 100):
                assert tb.gp_irt_weight(bias, variance, size) == pytest.approx(
                    refm.ref_gpirt_lambda(bias, variance, size), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("size", [5, 20])
def test_gpirt_estimate_matches_reference(irt_world, size):
    pool, targets = irt_world
    micro = get_method("tinybenchmarks-gpirt").select(pool, size, rng=np.random.default_rng(0))
    a, b = micro.discrimination, micro.difficulty
    variance = refm.ref_gpirt_variance(pool.correctness)
    lam = micro.gp_weight
    assert 0.0 < lam < 1.0
    # The bias this weight implies (b^2 = lam v / (4 n (1 - lam))) ...
    bias = np.sqrt(lam * variance / (4 * size * (1 - lam)))
    expected = refm.ref_gpirt(targets[:, micro.items], micro.items, micro.weights, a, b,
                              pool.n_items, bias, variance)
    np.testing.assert_allclose(micro.estimate(targets), expected, atol=1e-5)
    # ... is p-IRT's held-out bias of the pool's sources, fitted as the reference
    # splits them; the fit's seed differs (its jitter moves b by ~1e-4 here).
    validation, training = refm.ref_gpirt_validation_models(pool.n_sources)
    model = MultidimensionalIrt(10, random_state=1).fit(pool.correctness[training])
    ref_bias = refm.ref_gpirt_bias(pool.correctness[validation], model.discrimination_,
                                   model.difficulty_)
    assert bias == pytest.approx(ref_bias, rel=0.01)


def test_gpirt_weights_imply_one_bias_for_all_sizes(irt_world):
    pool, _ = irt_world
    variance = float(np.var(pool.correctness, axis=1).mean())
    biases = []
    for size in (3, 10, 30):
        lam = get_method("tinybenchmarks-gpirt").select(
            pool, size, rng=np.random.default_rng(size)).gp_weight
        biases.append(np.sqrt(lam * variance / (4 * size * (1 - lam))))
    np.testing.assert_allclose(biases, biases[0], rtol=1e-9)


@pytest.mark.parametrize("warm", [False, True])
def test_validation_bias_matches_reference(irt_world, warm):
    pool, _ = irt_world
    data = pool.correctness
    start = MultidimensionalIrt(10, random_state=3).fit(data) if warm else None
    bias = tb.validation_bias(data, 10, np.random.default_rng(9), start)
    validation, training = refm.ref_gpirt_validation_models(data.shape[0])
    model = MultidimensionalIrt(10, random_state=int(np.random.default_rng(9).integers(TOP)))
    if warm:
        model.fit(data[training], initial_items=(start.discrimination_, start.difficulty_))
    else:
        model.fit(data[training])
    expected = refm.ref_gpirt_bias(data[validation], model.discrimination_, model.difficulty_)
    assert bias == pytest.approx(expected, abs=1e-6)


# --------------------------------------------------------------------------- 5. Diversity

def test_graded_multi_indices_match_reference():
    for dims in range(1, 6):
        full = refd.ref_multi_indices(120, dims)
        for count in range(1, 121):
            ours = dv.graded_multi_indices(count, dims)
            assert np.array_equal(ours, full[:count]), (count, dims)
        for count in (1, 7, 33, 64, 81, 100, 120):
            assert np.array_equal(dv.graded_multi_indices(count, dims),
                                  refd.ref_multi_indices(count, dims))


def _points(seed: int, n_items: int, n_models: int = 40) -> np.ndarray:
    conf, _ = world(seed, n_models, n_items, dims=4)
    return refd.ref_diversity_preprocess(conf.T, pca_random_state=0)[0]


@pytest.mark.parametrize(("seed", "n_items", "n_models", "size"), [
    (0, 60, 40, 5), (1, 60, 40, 20), (2, 70, 40, 35), (3, 50, 2, 10), (4, 40, 3, 12),
])
def test_polynomial_kernel_matches_reference(seed, n_items, n_models, size):
    points = _points(seed, n_items, n_models)
    basis, rank = dv._orthonormal_basis(points, size)
    assert rank == size
    kernel = basis @ basis.T
    np.testing.assert_allclose(kernel, refd.ref_discrete_ope_kernel(points, size), atol=1e-8)
    # Chebyshev features span the same space as the reference's Chebyshev ones.
    features = dv.polynomial_features(points, size)
    np.testing.assert_allclose(features, refd.ref_vandermonde(points, size, "chebyshev"),
                               atol=1e-10)


@pytest.mark.parametrize(("sampler", "n_points", "size", "n_draws"), [
    (dv.sample_projection_dpp, 40, 8, 2000),
    # patience 4 ends many blocks early: the refresh path runs often
    (lambda basis, rng: dv.sample_projection_dpp_blocked(basis, rng, patience=4), 60, 30, 1500),
], ids=["chain", "blocked"])
def test_dpp_inclusion_frequencies_match_kernel_diagonal(sampler, n_points, size, n_draws):
    points = np.random.default_rng(8).uniform(-0.99, 0.99, size=(n_points, 4))
    basis, rank = dv._orthonormal_basis(points, size)
    assert rank == size
    probability = refd.ref_inclusion_probabilities(points, size)
    counts = np.zeros(n_points)
    draw_rng = np.random.default_rng(2024)
    for _ in range(n_draws):
        picks = sampler(basis, draw_rng)
        assert np.unique(picks).size == size
        counts[picks] += 1
    frequency = counts / n_draws
    sd = np.sqrt(np.clip(probability * (1 - probability), 1e-12, None) / n_draws)
    z = (frequency - probability) / sd
    assert np.abs(z).max() < 4.5, z
    # sum z^2 has mean n_points; allow 5 standard deviations of that chi-square.
    assert abs(float(np.sum(z**2)) - n_points) < 5 * np.sqrt(2 * n_points)


@pytest.mark.parametrize(("seed", "n_items", "size"), [(0, 100, 8), (1, 100, 25), (2, 80, 60)])
def test_dpp_sampler_picks_the_same_items_as_reference(seed, n_items, size):
    points = _points(seed, n_items)
    basis, rank = dv._orthonormal_basis(points, size)
    assert rank == size
    for draw in range(15):
        ours = dv.sample_projection_dpp(basis, np.random.default_rng(draw))
        ref, _ = refd.ref_draw_discrete_ope(points, size, np.random.default_rng(draw))
        assert np.array_equal(ours, ref), (draw, ours, ref)


@pytest.mark.parametrize("patience", [1, 3, dv.BLOCK_PATIENCE])
def test_blocked_dpp_sampler_draws_each_set_with_its_determinant(patience):
    # 7 points, rank 3: all 35 sets enumerated, P(S) = det(K_S) (tests/reference_dpp);
    # patience 1 ends a block at every rejection, so the refresh path is exercised.
    points = np.random.default_rng(3).uniform(-0.99, 0.99, size=(7, 2))
    basis, rank = dv._orthonormal_basis(points, 3)
    assert rank == 3
    sets = list(itertools.combinations(range(7), 3))
    expected = np.array([refd.ref_subset_probability(points, 3, s, "chebyshev") for s in sets])
    assert expected.sum() == pytest.approx(1.0)
    index = {s: i for i, s in enumerate(sets)}
    counts = np.zeros(len(sets))
    draw_rng = np.random.default_rng(11)
    n_draws = 6000
    for _ in range(n_draws):
        picks = dv.sample_projection_dpp_blocked(basis, draw_rng, patience=patience)
        counts[index[tuple(sorted(picks.tolist()))]] += 1
    assert chisquare(counts, expected * n_draws).pvalue > 1e-4


@settings(max_examples=40, deadline=None)
@given(n_points=st.integers(1, 40), data=st.data())
def test_blocked_dpp_sampler_returns_rank_distinct_points(n_points, data):
    rank = data.draw(st.integers(1, n_points))
    patience = data.draw(st.integers(1, 8))
    seed = data.draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    basis, _ = np.linalg.qr(rng.standard_normal((n_points, rank)))
    picks = dv.sample_projection_dpp_blocked(basis, rng, patience=patience)
    assert picks.shape == (rank,)
    assert np.unique(picks).size == rank
    assert ((0 <= picks) & (picks < n_points)).all()


def test_diversity_fast_draws_from_the_same_points_as_diversity():
    rng = np.random.default_rng(0)
    confidence = rng.random((30, 200))
    pool = SeenPool((confidence > 0.5).astype(float), confidence, np.zeros(200, dtype=np.int64))
    exact = get_method("diversity").select(pool, 40, rng=np.random.default_rng(2))
    fast = get_method("diversity-fast").select(pool, 40, rng=np.random.default_rng(2))
    assert np.unique(fast.items).size == 40
    kept = pool.shared("diversity-points", lambda _: None).kept
    assert np.isin(fast.items, kept).all() and np.isin(exact.items, kept).all()


def test_diversity_preprocessing_matches_reference():
    for seed, n_items, n_models in [(0, 120, 40), (1, 224, 300), (2, 60, 3)]:
        conf, _ = world(seed, n_models, n_items, dims=4)
        prepared = dv.diversity_points(conf, np.random.default_rng(seed))
        points, kept = refd.ref_diversity_preprocess(
            conf.T, pca_random_state=int(np.random.default_rng(seed).integers(TOP)))
        assert np.array_equal(prepared.kept, kept)
        np.testing.assert_allclose(prepared.points, points, atol=1e-12)


def test_rescale_maps_onto_the_box_and_constant_columns_to_zero():
    rng = np.random.default_rng(0)
    points = np.column_stack([rng.normal(size=30), np.full(30, 2.5), rng.random(30) * 7])
    out = dv.rescale(points)
    assert out[:, 1].tolist() == [0.0] * 30
    for c in (0, 2):
        assert out[:, c].min() == pytest.approx(-0.99) and out[:, c].max() == pytest.approx(0.99)
        assert np.corrcoef(out[:, c], points[:, c])[0, 1] == pytest.approx(1.0)


def test_diversity_select_is_the_reference_pipeline():
    # A rank-4 confidence structure: randomized PCA finds the exact components, and the
    # DPP kernel ignores the components' signs and scales, so the whole method equals
    # the reference's preprocessing (exact PCA) followed by its sampler.
    rng = np.random.default_rng(11)
    conf = expit(rng.normal(size=(50, 4)) @ rng.normal(size=(4, 90))
                 + 1e-6 * rng.normal(size=(50, 90)))
    pool = make_pool((conf > 0.5).astype(float), conf)
    points, kept = refd.ref_diversity_preprocess(conf.T, pca_solver="exact")
    for size in (10, 30):
        for seed in range(5):
            micro = get_method("diversity").select(pool, size, rng=np.random.default_rng(seed))
            picks, _ = refd.ref_draw_discrete_ope(points, size, np.random.default_rng(seed))
            assert np.array_equal(micro.items, kept[picks])
            assert micro.weights is None and micro.notes == ()


# --------------------------------------------------------------------------- 6. contract

@pytest.fixture(scope="module")
def contract_pool():
    conf, correct = world(31, 20, 45)
    return make_pool(correct, conf, seed=3)


@pytest.mark.parametrize("name", NEW_METHODS)
def test_contract_sizes_determinism_and_pool_only(contract_pool, name):
    method = get_method(name)
    assert list(inspect.signature(method.select).parameters) == ["pool", "size", "rng"]
    pool = contract_pool
    for size in (1, 5, method.max_size(pool)):
        first = method.select(pool, size, rng=np.random.default_rng(17))
        again = method.select(pool, size, rng=np.random.default_rng(17))
        assert first.items.size == size == np.unique(first.items).size
        assert first.items.min() >= 0 and first.items.max() < pool.n_items
        assert np.array_equal(first.items, again.items)
        if first.weights is not None:
            np.testing.assert_array_equal(first.weights, again.weights)
            assert first.weights.shape == (size,)


@pytest.mark.parametrize("name", NEW_METHODS)
def test_selection_reads_only_the_pool_and_mutates_nothing(contract_pool, name):
    method = get_method(name)
    correctness = contract_pool.correctness.copy()
    confidence = contract_pool.confidence.copy()
    correctness.setflags(write=False)
    confidence.setflags(write=False)
    pool = SeenPool(correctness, confidence, contract_pool.subtask_codes,
                    seed=np.random.SeedSequence(3))
    micro = method.select(pool, 7, rng=np.random.default_rng(4))
    again = method.select(contract_pool, 7, rng=np.random.default_rng(4))
    assert np.array_equal(micro.items, again.items)
    # Estimating never changes the micro-benchmark; targets never enter the selection.
    items = micro.items.copy()
    rng = np.random.default_rng(5)
    targets = (rng.random((4, pool.n_items)) < 0.5).astype(float)
    targets.setflags(write=False)
    micro.estimate(targets)
    assert np.array_equal(micro.items, items)
    if not method.reads_confidence:
        other = SeenPool(correctness, 1.0 - confidence, contract_pool.subtask_codes,
                         seed=np.random.SeedSequence(3))
        assert np.array_equal(method.select(other, 7, rng=np.random.default_rng(4)).items,
                              items)


# --------------------------------------------------------------------------- 7. degenerate

def _degenerate_pools() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(77)
    n_sources, n_items = 12, 40
    mixed = (rng.random((n_sources, n_items)) < 0.5).astype(float)
    mixed[:, :6] = 1.0
    mixed[:, 6:12] = 0.0
    mixed_conf = rng.random((n_sources, n_items))
    mixed_conf[:, :6] = 1.0
    mixed_conf[:, 6:12] = 0.0
    row = (rng.random(n_items) < 0.5).astype(float)
    same = np.tile(row, (n_sources, 1))
    constant_values = np.tile(rng.random(n_items), (n_sources, 1))
    return {
        "all-correct and all-wrong items, 0/1": (mixed, mixed),
        "all-correct and all-wrong items, confidences": (mixed, mixed_conf),
        "identical source models": (same, same),
        "identical source models, confidences": (same, constant_values),
        "every item wrong for every model": (np.zeros_like(same), np.zeros_like(same)),
        "every item right for every model": (np.ones_like(same), np.ones_like(same)),
        "every confidence 0.5": (np.zeros_like(same), np.full_like(same, 0.5)),
        "three sources": (mixed[:3], mixed_conf[:3]),
    }


DEGENERATE = _degenerate_pools()


def _check_estimates(name: str, micro, targets: np.ndarray) -> None:
    estimate = micro.estimate(targets)
    assert estimate.shape == (targets.shape[0],)
    assert np.all(np.isfinite(estimate)), estimate
    if name == "confidence-strata":
        # Horvitz-Thompson with the reference's probabilities: within [0, sum of
        # weights]; the sum is 1 unless items were topped up (then it may exceed 1).
        assert np.all(estimate >= 0)
        assert np.all(estimate <= micro.weights.sum() + 1e-12)
    else:  # cluster shares sum to 1 up to rounding
        assert np.all((estimate >= 0) & (estimate <= 1 + 1e-12)), estimate


# a method is never asked for fewer sources than it needs (`min_sources`): the study's
# plan and `select` refuse first (tests/test_study_methods.py)
@pytest.mark.parametrize(("name", "case"), cases([
    (name, case) for name in STATIC for case in DEGENERATE
    if DEGENERATE[case][0].shape[0] >= method_class(name).min_sources]))
def test_degenerate_pools(name, case):
    correctness, confidence = DEGENERATE[case]
    pool = make_pool(correctness, confidence, seed=1)
    method = get_method(name)
    n_items = pool.n_items
    rng = np.random.default_rng(0)
    targets = np.vstack([np.ones(n_items), np.zeros(n_items),
                         (rng.random((3, n_items)) < 0.5).astype(float), rng.random(n_items)])
    for size in (1, 5, 20, method.max_size(pool)):
        micro = method.select(pool, size, rng=np.random.default_rng(size))
        assert micro.items.size == size == np.unique(micro.items).size
        assert micro.items.min() >= 0 and micro.items.max() < n_items
        _check_estimates(name, micro, targets)


@pytest.mark.parametrize(("name", "n_sources", "n_items"), cases([
    (name, *shape) for name in STATIC for shape in [(1, 2), (2, 2), (2, 3), (3, 5), (4, 8)]
    if shape[0] >= method_class(name).min_sources]))
def test_tiny_pools(name, n_sources, n_items):
    """The smallest pools a per-subtask study can produce: a method builds every size
    of distinct items with finite estimates."""
    method = get_method(name)
    rng = np.random.default_rng(n_sources * 10 + n_items)
    confidence = rng.random((n_sources, n_items))
    pool = make_pool((confidence > 0.5).astype(float), confidence)
    targets = (rng.random((3, n_items)) < 0.5).astype(float)
    for size in range(1, method.max_size(pool) + 1):
        micro = method.select(pool, size, rng=np.random.default_rng(size))
        assert micro.items.size == size == np.unique(micro.items).size
        _check_estimates(name, micro, targets)


# --------------------------------------------------------------------------- 8. real GPQA

@pytest.fixture(scope="module")
def gpqa_split(gpqa):
    correctness = np.asarray(gpqa.correctness, dtype=np.float64)
    assert not np.isnan(correctness[:, :224]).any()
    order = np.random.default_rng(2026).permutation(correctness.shape[0])
    sources = correctness[order[:300], :224]
    targets = correctness[order[300:320], :224]
    return make_pool(sources, seed=7), targets


@pytest.mark.parametrize("name", NEW_METHODS)
def test_gpqa_estimates_are_close_to_pool_accuracy(gpqa_split, name):
    pool, targets = gpqa_split
    truth = targets.mean(axis=1)
    method = get_method(name)
    errors = {}
    for size in (10, 25, 50, 100, 200):
        micro = method.select(pool, size, rng=np.random.default_rng(size))
        assert micro.items.size == size == np.unique(micro.items).size
        estimate = micro.estimate(targets)
        assert np.all(np.isfinite(estimate))
        errors[size] = float(np.abs(estimate - truth).mean())
    assert all(error < 0.25 for error in errors.values()), errors
    assert errors[100] < 0.12, errors


def test_fast_variants_pass_their_shortcut_to_the_fit(monkeypatch):
    conf, correct = world(0, 20, 60)
    pool = SeenPool(correct, conf, np.zeros(60, dtype=np.int64))
    epochs, passes = [], []
    real_fit, real_pam = tb.fit_variational, ap._medoids
    monkeypatch.setattr(tb, "fit_variational",
                        lambda *a, **k: epochs.append(k["epochs"]) or real_fit(*a, **k))
    monkeypatch.setattr(ap, "_medoids",
                        lambda d, size, rng, max_passes=100, columns=None:
                        passes.append(max_passes) or real_pam(d, size, rng, max_passes,
                                                              columns))
    for name in ("tinybenchmarks-fast", "anchor-points-fast", "anchor-points"):
        get_method(name).select(pool, 5, rng=np.random.default_rng(1))
    samplers = []
    for name in ("sample_projection_dpp", "sample_projection_dpp_blocked"):
        real = getattr(dv, name)
        monkeypatch.setattr(dv, name, lambda b, r, _n=name, _f=real, **k:
                            samplers.append(_n) or _f(b, r, **k))
    for name in ("diversity-fast", "diversity"):
        get_method(name).select(pool, 5, rng=np.random.default_rng(1))
    assert samplers == ["sample_projection_dpp_blocked", "sample_projection_dpp"]
    assert epochs == [1000] and passes == [2, 100]
    # the shorter fit is kept apart from the 2,000-epoch one in a shared pool
    assert "irt-2pl-d10-variational-1000" in pool._cache
    assert "irt-2pl-d10-variational" not in pool._cache


def test_fast_methods_swaps_declared_variants_once():
    from mdad.selection import fast_methods

    assert fast_methods(("random", "diversity", "diversity-fast", "tinybenchmarks-map",
                         "tinybenchmarks")) == ("random", "diversity-fast",
                                                "tinybenchmarks-map", "tinybenchmarks-fast")


def test_blocked_dpp_sampler_refuses_zero_patience():
    basis = np.linalg.qr(np.random.default_rng(0).standard_normal((5, 2)))[0]
    with pytest.raises(ValueError, match="patience must be >= 1"):
        dv.sample_projection_dpp_blocked(basis, np.random.default_rng(0), patience=0)


_ACROSS_KERNELS = """
import hashlib, numpy as np
from mdad.data import load_dataset
from mdad.selection import SeenPool, get_method
scores = load_dataset("gpqa").matrix.correctness.astype(np.float64)
digest = hashlib.sha256()
for seed in range(3):
    order = np.random.default_rng(seed).permutation(scores.shape[0])
    source, target = scores[order[:300]][:, ::2], scores[order[300:]][:, ::2]
    pool = SeenPool(source, source, np.zeros(source.shape[1], dtype=np.int64),
                    seed=np.random.SeedSequence(seed))
    for size in (10, 25, 50, 100):
        for name in ("anchor-points", "anchor-points-predictor"):
            micro = get_method(name).select(pool, size, rng=np.random.default_rng(size))
            for part in (micro.items, micro.estimate(target)):
                digest.update(np.ascontiguousarray(part).tobytes())
print(digest.hexdigest())
"""


def test_anchor_points_on_correctness_has_the_same_bits_under_every_blas_kernel():
    """OpenBLAS picks its kernels by CPU; forcing two of them (and AVX-512 ones where
    the CPU has them) stands in for two machines. On GPQA's 0/1 answers, Anchor
    Points' and its predictor's items and estimates must not move: the correlations
    come from exact sums and the estimate from a fixed-order sum. (With BLAS's, a
    Haswell and a SkylakeX kernel moved 2% of Anchor Points' estimates of the README's
    study, and 16% of the predictor's, by up to 46 points.)"""
    import os
    import subprocess
    import sys

    from helpers import GPQA_CSV, shared_data

    shared_data(GPQA_CSV)
    kernels = ["Sandybridge", "Haswell"]
    cpu = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    if " avx512f" in cpu:
        kernels.append("SkylakeX")
    digests = set()
    for kernel in kernels:
        env = {**os.environ, "OPENBLAS_CORETYPE": kernel}
        done = subprocess.run([sys.executable, "-c", _ACROSS_KERNELS], env=env, check=True,
                              capture_output=True, text=True, timeout=300)
        digests.add(done.stdout.strip())
    assert len(digests) == 1, f"{len(digests)} different results over kernels {kernels}"
