"""MDAD: the smallest accuracy gap a micro-benchmark ranks correctly often enough."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from scipy.optimize import isotonic_regression

from mdad.metrics.pairs import bin_edges

NOT_REACHED = 0.5  # the reference code's value when no bin reaches the threshold
CONFIDENCE = 0.95
# Quantile levels written as the reference code writes them (0.025000000000000022).
QUANTILES = ((1 - CONFIDENCE) / 2, 1 - (1 - CONFIDENCE) / 2)


class MdadEstimator(StrEnum):
    """How MDAD is read off the agreement-versus-gap curve."""

    FIRST_CROSSING = "first-crossing"
    SMOOTH = "smooth"


@dataclass(frozen=True)
class MdadResult:
    """An MDAD estimate with its 95% interval, as accuracy fractions (0.05 = 5 points).

    ``mdad`` is 0.5 when agreement never reaches the threshold.
    """

    mdad: float
    low: float
    high: float
    threshold: float
    estimator: MdadEstimator
    n_pairs: int


def _first_at_least(curves: np.ndarray, valid: np.ndarray, threshold: float) -> np.ndarray:
    """Lower bin edge of the first valid bin whose value reaches `threshold`, per row."""
    hit = (curves >= threshold) & valid
    first = np.argmax(hit, axis=-1)
    return np.where(hit.any(axis=-1), bin_edges(first), NOT_REACHED)


def first_crossing_mdad(
    pairs: np.ndarray,
    agreeing: np.ndarray,
    *,
    threshold: float = 0.8,
    n_resamples: int = 1000,
    rng: np.random.Generator,
) -> MdadResult:
    """The paper's MDAD: the first |gap| bin whose mean agreement reaches `threshold`.

    Bins are walked from the smallest gap up; empty bins are skipped. The interval
    applies the same rule to each bin's bootstrap 2.5% and 97.5% quantiles (the
    upper quantile gives the lower MDAD bound). Resampling a bin's 0/1 agreements
    with replacement gives a Binomial(n, mean) count, so the bootstrap draws that
    count directly: the same distribution as the reference's loop, without it.

    Parameters
    ----------
    pairs, agreeing : int arrays of shape (n_bins,)
        Pairs pooled over runs in each 0.005-wide |gap| bin, and how many agree.
    threshold : float
        Agreement probability to reach, in (0, 1).
    n_resamples : int
        Bootstrap resamples per bin.
    rng : numpy.random.Generator

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> first_crossing_mdad(np.array([2, 1, 1]), np.array([1, 0, 1]), rng=rng).mdad
    0.01
    """
    valid = pairs > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(valid, agreeing / np.maximum(pairs, 1), 0.0)
    draws = rng.binomial(pairs, mean, size=(n_resamples, pairs.size)) / np.maximum(pairs, 1)
    lower, upper = np.quantile(draws, QUANTILES, axis=0)
    return MdadResult(
        mdad=float(_first_at_least(mean, valid, threshold)),
        low=float(_first_at_least(upper, valid, threshold)),
        high=float(_first_at_least(lower, valid, threshold)),
        threshold=threshold,
        estimator=MdadEstimator.FIRST_CROSSING,
        n_pairs=int(pairs.sum()),
    )


def _monotone_crossing(pairs: np.ndarray, agreeing: np.ndarray, threshold: float) -> float:
    """Where a monotone (isotonic) fit of agreement on |gap| first reaches `threshold`,
    interpolated linearly between bin edges."""
    valid = np.flatnonzero(pairs > 0)
    if valid.size == 0:
        return NOT_REACHED
    fitted = isotonic_regression(agreeing[valid] / pairs[valid], weights=pairs[valid]).x
    gaps = bin_edges(valid)
    above = np.flatnonzero(fitted >= threshold)
    if above.size == 0:
        return NOT_REACHED
    k = int(above[0])
    if k == 0:
        return float(gaps[0])
    x0, x1, y0, y1 = gaps[k - 1], gaps[k], fitted[k - 1], fitted[k]
    return float(x0 + (threshold - y0) / (y1 - y0) * (x1 - x0))


def smooth_mdad(
    run_pairs: np.ndarray,
    run_agreeing: np.ndarray,
    *,
    threshold: float = 0.8,
    n_resamples: int = 1000,
    rng: np.random.Generator,
) -> MdadResult:
    """MDAD from a monotone fit of agreement against |gap|, bootstrapped over runs.

    Agreement should not fall as the gap grows, so a weighted isotonic regression of
    the binned agreement is fitted and its first crossing of `threshold` is
    interpolated between bins: no jumps from one noisy bin. Pairs of one run share
    models and items, so the interval resamples whole runs, the independent units.

    Parameters
    ----------
    run_pairs, run_agreeing : int arrays of shape (n_runs, n_bins)
        Per-run pair and agreement counts in each |gap| bin.
    """
    n_runs = run_pairs.shape[0]
    point = _monotone_crossing(run_pairs.sum(axis=0), run_agreeing.sum(axis=0), threshold)
    counts = rng.multinomial(n_runs, np.full(n_runs, 1.0 / n_runs), size=n_resamples)
    boot_pairs, boot_agreeing = counts @ run_pairs, counts @ run_agreeing
    crossings = np.array([_monotone_crossing(p, a, threshold)
                          for p, a in zip(boot_pairs, boot_agreeing, strict=True)])
    low, high = np.quantile(crossings, QUANTILES)
    return MdadResult(
        mdad=point,
        low=float(low),
        high=float(high),
        threshold=threshold,
        estimator=MdadEstimator.SMOOTH,
        n_pairs=int(run_pairs.sum()),
    )
