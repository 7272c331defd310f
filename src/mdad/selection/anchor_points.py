"""Anchor Points (Vivek et al. 2024): k-medoids on how items co-vary across models."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from mdad.selection.base import MethodDefaults, MicroBenchmark, SeenPool
from mdad.selection.registry import register

# The predictor works in logit space; 0 and 1 would map to infinities. For 0/1 data
# the predicted sign does not depend on this value (x and y scale together).
_CLIP = 1e-6


def clipped_logit(values: np.ndarray) -> np.ndarray:
    """logit of `values` clipped into [_CLIP, 1 - _CLIP], as float64."""
    from scipy.special import logit

    return logit(np.clip(np.asarray(values, np.float64), _CLIP, 1 - _CLIP))


def item_correlation(values: np.ndarray) -> np.ndarray:
    """Pearson correlation between items across models, defined everywhere.

    Parameters
    ----------
    values : array of shape (n_models, n_items)

    Returns
    -------
    array of shape (n_items, n_items), symmetric, ones on the diagonal. Items with no
    variance across the models have no Pearson correlation; we set it to 1 between
    two such items of the same constant value (they behave identically) and 0 with
    every other item (their behaviour says nothing about the others).

    Whole-number values (0/1 correctness) give the same bits on every machine: from
    exact sums, each correlation is rounded once. Other values go through BLAS, whose
    last bits depend on the CPU; FasterPAM breaks exact ties between distances by those
    bits, so another machine may choose other medoids of the same loss.
    """
    values = np.asarray(values, dtype=np.float64)
    covariance = _exact_covariance(values)
    corr, constant = (_blas_correlation(values) if covariance is None
                      else _exact_correlation(covariance))
    np.clip(corr, -1.0, 1.0, out=corr)
    if constant.any():
        level = values[0, constant]
        corr[np.ix_(constant, constant)] = level[:, None] == level[None, :]
    np.fill_diagonal(corr, 1.0)
    return corr


def _blas_correlation(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pearson correlations of the columns of `values` (n_models, n_items), 0 for any
    pair with a constant item, and which items are constant (bool, (n_items,))."""
    centred = values - values.mean(axis=0)
    norms = np.sqrt(np.einsum("mi,mi->i", centred, centred))
    constant = norms <= 1e-12 * np.maximum(1.0, np.abs(values).max(initial=0.0))
    scaled = centred / np.where(constant, 1.0, norms)
    scaled[:, constant] = 0.0
    return scaled.T @ scaled, constant


# models x twice the largest |value| (a bound on the range) up to this keeps every sum
# and product exact in float64: covariances n S_xy - S_x S_y below (n m)^2, products
# of two variances below (n range)^4 / 16 <= 2^52
_EXACT_SPAN = 2**14


def _exact_covariance(values: np.ndarray) -> np.ndarray | None:
    """n^2 times the covariance matrix of the columns of whole-number `values`
    (n_models, n_items), ``n S_xy - S_x S_y``, exact: float64 products and sums of whole
    numbers below 2^53 are exact in any order, so BLAS's order cannot show. None for
    other values, or too large a span."""
    n = values.shape[0]
    span = 2.0 * np.abs(values).max(initial=0.0)
    if n * span > _EXACT_SPAN or not np.array_equal(values, np.rint(values)):
        return None
    total = values.sum(axis=0)
    covariance = values.T @ values
    covariance *= n  # in place: two n_items^2 matrices at most, as the BLAS path
    covariance -= np.outer(total, total)
    return covariance


def _exact_correlation(covariance: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`_blas_correlation` from `_exact_covariance`'s matrix, computed in its place: each
    correlation one correctly rounded division by a correctly rounded square root."""
    variance = np.diag(covariance).copy()
    constant = variance == 0
    denominator = np.outer(variance, variance)
    denominator += constant[:, None]
    denominator += constant[None, :]
    covariance /= np.sqrt(denominator, out=denominator)
    covariance[constant] = 0.0
    covariance[:, constant] = 0.0
    return covariance, constant


def _medoids(distance: np.ndarray, size: int, rng: np.random.Generator,
             max_passes: int = 100, columns: np.ndarray | None = None) -> np.ndarray:
    """FasterPAM medoids with random initialisation, as the reference code runs it
    (``kmedoids.fasterpam(init="random", random_state=seed)``, with its default of at
    most 100 passes over the items; they converge in 3 to 6): the same start, the
    same algorithm (`mdad.selection._fasterpam`, compiled without Python's lock), and
    the candidates in an order shuffled by numpy instead of Rust (an order uniformly
    random either way, so the same distribution of medoids). `columns`: the distance
    matrix's transpose, or None (see `fasterpam`)."""
    from mdad.selection._fasterpam import fasterpam

    seed = int(rng.integers(2**31 - 1))
    state = np.random.RandomState(seed)
    start = state.choice(distance.shape[0], size, replace=False)
    order = _candidate_order(state, distance.shape[0])
    return fasterpam(distance, start, order=order, max_passes=max_passes,
                     columns=columns)[0]


def _columns_of(distance: np.ndarray) -> np.ndarray:
    """`mdad.selection._fasterpam.columns_of`, imported when first needed: it loads
    numba, which commands that only list or plan methods should not pay for."""
    from mdad.selection._fasterpam import columns_of

    return columns_of(distance)


def _candidate_order(state: np.random.RandomState, n: int) -> np.ndarray:
    """The order FasterPAM takes its n candidates in: uniformly random."""
    return state.permutation(n)


def cluster_shares(corr: np.ndarray, medoids: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Share of items whose most-correlated medoid is each medoid, shape (n_medoids,).

    A constant item with no constant medoid of its value is uncorrelated with every
    medoid; it joins the medoid whose mean value (over models) is closest to its own
    (first on ties), instead of an arbitrary one.
    """
    n_items = corr.shape[0]
    member = np.argmax(corr[medoids], axis=0)
    orphans = corr[medoids].max(axis=0) <= 0.0
    orphans &= np.ptp(values, axis=0) == 0
    if orphans.any():
        medoid_mean = values[:, medoids].mean(axis=0)
        gap = np.abs(values[0, orphans][:, None] - medoid_mean[None, :])
        member[orphans] = np.argmin(gap, axis=1)
    return np.bincount(member, minlength=medoids.size) / n_items


@register("anchor-points")
class AnchorPoints(MethodDefaults):
    """Medoids of 1 - correlation of the source models' gold-option confidences
    (FasterPAM, random init); each medoid weighs its cluster's share of items; the
    estimate is the weighted sum of a model's gold-option confidence on the medoids."""

    display_name: ClassVar[str] = "Anchor Points"
    libraries: ClassVar[tuple[str, ...]] = ("scipy.special",)
    releases_gil: ClassVar[bool] = True  # FasterPAM, compiled (mdad.selection._fasterpam)
    colour: ClassVar[str] = "#0072B2"
    line_style: ClassVar[str] = "-"
    in_paper: ClassVar[bool] = True
    reads_confidence: ClassVar[bool] = True
    min_sources: ClassVar[int] = 2
    max_passes: ClassVar[int] = 100
    fast_variant: ClassVar[str | None] = "anchor-points-fast"

    @classmethod
    def fit_memory(cls, n_models: int, n_items: int) -> int:
        """The correlation and the distance matrix, float64 each."""
        return 16 * n_items**2

    def select(self, pool: SeenPool, size: int, *, rng: np.random.Generator) -> MicroBenchmark:
        corr = pool.shared("confidence-correlation",
                           lambda _: item_correlation(pool.confidence))
        # One distance matrix for every size: at 7,000 items it is 390 MB, whose
        # allocation alone cost as much as a small k-medoids fit.
        distance = pool.shared("confidence-correlation-distance", lambda _: 1.0 - corr)
        columns = pool.shared("confidence-correlation-columns",
                              lambda _: _columns_of(distance))
        medoids = _medoids(distance, size, rng, self.max_passes, columns)
        weights = cluster_shares(corr, medoids, np.asarray(pool.confidence, dtype=np.float64))
        return MicroBenchmark(medoids, weights, uses_confidence=True)


@register("anchor-points-fast")
class AnchorPointsFast(AnchorPoints):
    """The medoids after 2 passes of FasterPAM's swaps instead of until no swap helps
    (3 to 6): 0.5 to 0.9 of the selection time on synthetic MMLU-Pro. One pass, cheaper
    still, moved Kendall tau by 2.7 paired standard errors there at one size, so the
    cautious 2 (benchmarks/approximation_noise.py, docs/performance.md)."""

    display_name: ClassVar[str] = "Anchor Points, 2 FasterPAM passes"
    line_style: ClassVar[str] = "-."
    in_paper: ClassVar[bool] = False
    max_passes: ClassVar[int] = 2


@dataclass(frozen=True, eq=False, kw_only=True)
class AnchorPredictorBenchmark(MicroBenchmark):
    """Anchor items plus one logit-linear predictor per other seen item ("floater").

    A model's estimate is the share of floaters predicted correct: floater f's
    logit-confidence is predicted as ``slope[f] * x[nearest[f]] + intercept[f]`` from
    the model's logit-confidence x on its nearest anchor, and counts as correct when
    that exceeds 0, i.e. a gold-option confidence above 0.5 (with only the gold
    option known, "the predicted argmax is gold" becomes this).

    Attributes
    ----------
    nearest : int array of shape (n_floaters,), positions in `items`.
    slope, intercept : float arrays of shape (n_floaters,).
    """

    kind: ClassVar[str] = "predictor"

    nearest: np.ndarray
    slope: np.ndarray
    intercept: np.ndarray

    def estimate(self, scores: np.ndarray) -> np.ndarray:
        anchors = clipped_logit(scores[:, self.items])
        predicted = anchors[:, self.nearest] * self.slope + self.intercept
        return (predicted > 0).mean(axis=1)

    def to_file(self) -> dict[str, Any]:
        return {"kind": self.kind, "nearest": self.nearest.tolist(),
                "slope": self.slope.tolist(), "intercept": self.intercept.tolist()}

    @classmethod
    def from_file(cls, data: dict[str, Any], size: int) -> AnchorPredictorBenchmark:
        return cls(np.arange(size), uses_confidence=True,
                   nearest=np.asarray(data["nearest"]), slope=np.asarray(data["slope"]),
                   intercept=np.asarray(data["intercept"]))


@register("anchor-points-predictor")
class AnchorPointsPredictor(MethodDefaults):
    """The Anchor Points predictor variant: medoids of 1 - |correlation| of the
    source models' logit-confidences; every other item is predicted from the anchor
    whose least-squares line (over source models) fits it with the smallest residual.

    Differs from the reference code in one case: an anchor constant over the sources
    is a flat line (the reference's lstsq left its residual at 0, so it became every
    item's nearest anchor).
    """

    display_name: ClassVar[str] = "Anchor Points predictor"
    libraries: ClassVar[tuple[str, ...]] = ("scipy.special",)
    releases_gil: ClassVar[bool] = True  # FasterPAM, compiled (mdad.selection._fasterpam)
    colour: ClassVar[str] = "#0072B2"
    line_style: ClassVar[str] = "--"
    reads_confidence: ClassVar[bool] = True
    min_sources: ClassVar[int] = 2
    estimators: ClassVar[tuple[type[MicroBenchmark], ...]] = (AnchorPredictorBenchmark,)

    @classmethod
    def fit_memory(cls, n_models: int, n_items: int) -> int:
        """The cross-products, the correlation, the distance and its transpose."""
        return 32 * n_items**2

    @classmethod
    def max_size_for(cls, subtask_sizes: np.ndarray) -> int:
        """One item fewer than the pool: at least one item is predicted."""
        return int(np.sum(subtask_sizes)) - 1

    def select(self, pool: SeenPool, size: int, *, rng: np.random.Generator) -> MicroBenchmark:
        values = pool.shared("confidence-logit", lambda _: clipped_logit(pool.confidence))
        gram, corr = pool.shared("confidence-logit-gram", lambda _: _gram_and_correlation(values))
        distance = pool.shared("confidence-logit-distance", lambda _: 1.0 - np.abs(corr))
        columns = pool.shared("confidence-logit-columns", lambda _: _columns_of(distance))
        anchors = _medoids(distance, size, rng, columns=columns)
        floaters = np.setdiff1d(np.arange(pool.n_items), anchors)
        cross = gram[np.ix_(anchors, floaters)]  # (n_anchors, n_floaters)
        spread = np.diag(gram)[anchors][:, None]
        flat = spread <= 1e-12
        slope = np.where(flat, 0.0, cross / np.where(flat, 1.0, spread))
        residual = np.diag(gram)[floaters][None, :] - slope * cross
        nearest = np.argmin(residual, axis=0)
        floater_slope = slope[nearest, np.arange(floaters.size)]
        means = values.mean(axis=0)
        intercept = means[floaters] - floater_slope * means[anchors][nearest]
        return AnchorPredictorBenchmark(anchors, uses_confidence=True, nearest=nearest,
                                        slope=floater_slope, intercept=intercept)


def _gram_and_correlation(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Centred cross-products between items, and their correlation with 0 for an item
    constant over the models (the reference code's NaN rule), shape (n_items, n_items)
    each. Constant items are found exactly: after centring, rounding can leave noise
    that would correlate two of them at +-1. The correlation is numpy's corrcoef, as in
    the reference: FasterPAM breaks exact ties by the last bit. Values of two levels
    (0/1 answers' clipped logits) are a change of scale of a 0/1 pattern: both come
    from its exact sums then, with the same bits on every CPU."""
    low, high = (values.min(), values.max()) if values.size else (0.0, 0.0)
    if values.size and np.all((values == low) | (values == high)):
        pattern = (values == high).astype(np.float64)
        covariance = _exact_covariance(pattern)
        if covariance is not None:
            gram = covariance * ((high - low) ** 2 / pattern.shape[0])
            corr, _ = _exact_correlation(covariance)
            np.fill_diagonal(corr, 1.0)
            return gram, np.clip(corr, -1.0, 1.0, out=corr)
    constant = np.ptp(values, axis=0) == 0
    centred = values - values.mean(axis=0)
    centred[:, constant] = 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        corr = np.corrcoef(values, rowvar=False)
    corr[constant, :] = 0.0
    corr[:, constant] = 0.0
    corr[np.isnan(corr)] = 0.0
    np.fill_diagonal(corr, 1.0)
    return centred.T @ centred, np.clip(corr, -1.0, 1.0)
