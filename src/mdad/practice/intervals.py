"""A new model's accuracy interval from a micro-benchmark's estimate, and how likely
each accuracy makes that estimate.

The interval (`accuracy_interval`) is exact for simple random samples
(`hypergeometric_interval`), Wilson's for partial-credit scores, and the Neyman belt
calibrated on held-out models for every other method (`mdad.practice.calibration`).
`log_likelihood` gives the chance of the estimate at each true accuracy: what
`estimate`'s lists weigh the reference models' own accuracies by.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mdad.practice.compare import CONFIDENCE, Z95

if TYPE_CHECKING:
    from mdad.practice.bundle import MicroBenchmarkFile


@dataclass(frozen=True)
class AccuracyInterval:
    """A 95% interval of a model's full accuracy (fractions), how it was made, whether
    the estimate lies past the models it was calibrated on (an extrapolation), and whether
    no accuracy explains the estimate (`Calibration.unexplained`: then the interval is
    all the belt speaks for, and no list is made)."""

    low: float
    high: float
    how: str
    beyond: bool = False
    unexplained: bool = False
    averaged: bool = False  # holds on average over models only: no list-level claim
    low_censored: bool = False  # at the belt's reach: the data set no bound there
    high_censored: bool = False


def accuracy_interval(bundle: MicroBenchmarkFile, value: float, used: int,
                      confidence: float = CONFIDENCE) -> AccuracyInterval:
    """The `confidence` interval (95% by default) of the full accuracy of a model
    estimated at `value` from `used` of the micro-benchmark's items (see
    `estimate_score`)."""
    from scipy.special import ndtri

    z = float(ndtri(0.5 + confidence / 2))
    scaled = "" if used == bundle.size else f", its spread scaled by sqrt({bundle.size}/{used})"
    if bundle.error_sd is None:
        correct = _exact_count(bundle, value, used)
        if correct is not None:
            low, high = hypergeometric_interval(correct, used, bundle.pool_size, confidence)
            return AccuracyInterval(low, high, "exact, for items drawn without replacement")
        low, high = _wilson(value, used, bundle.pool_size, z)
        return AccuracyInterval(low, high, "Wilson score, finite-population corrected "
                                "(partial-credit scores)")
    calibration = bundle.calibration(confidence)
    if calibration is None:
        from mdad.practice.bundle_format import CALIBRATED_FORMATS
        from mdad.practice.calibration import MIN_MODELS

        why = (f"a format {bundle.format} file: select again for an interval calibrated "
               "at every accuracy" if bundle.format not in CALIBRATED_FORMATS else
               f"{len(bundle.reference_models)} models are too few to calibrate one at "
               f"every accuracy (it needs {MIN_MODELS}); it holds on average only")
        spread = bundle.error_sd * np.sqrt(bundle.size / used)
        return AccuracyInterval(max(value - z * spread, 0.0), min(value + z * spread, 1.0),
                                f"+-{z:.2f} x the cross-validated error{scaled} ({why})",
                                averaged=True)
    scale = float(np.sqrt(bundle.size / used))
    low, high = (float(v) for v in calibration.interval(value, scale=scale))
    low_censored, high_censored = calibration.censored(low, high)
    return AccuracyInterval(low, high, f"calibrated on {calibration.models} held-out "
                            f"models at every accuracy{scaled}{bundle.calibration_caveat()}",
                            bool(calibration.beyond(value, scale)),
                            bool(calibration.unexplained(value, scale)),
                            low_censored=bool(low_censored), high_censored=bool(high_censored))


def log_likelihood(bundle: MicroBenchmarkFile, value: float, used: int,
                   truth: np.ndarray) -> np.ndarray:
    """The log of how likely a model of each accuracy in `truth` (fractions, shape
    (m,)) is to be estimated at `value` from `used` of the micro-benchmark's items, up
    to a constant, shape (m,): for a simple random sample the hypergeometric
    probability of the correct count (-inf where the pool cannot give it; where no
    accuracy of `truth` can, the binomial's, drawn with replacement, which still ranks
    them by how near they come) or, for partial-credit scores, a normal with the
    binomial's variance; the belt's density for a calibrated method
    (`Calibration.log_density`); a normal with the cross-validated error where the
    interval holds on average only."""
    t = np.asarray(truth, dtype=np.float64)
    scale = float(np.sqrt(bundle.size / used))
    if bundle.error_sd is None:
        correct = _exact_count(bundle, value, used)
        if correct is not None:
            right = np.rint(t * bundle.pool_size)
            exact = _log_hypergeometric_pmf(np.array(float(correct)), right, used,
                                            bundle.pool_size)
            if np.isfinite(exact).any():
                return exact
            p = np.clip(t, 1e-12, 1 - 1e-12)
            return correct * np.log(p) + (used - correct) * np.log1p(-p)
        fpc = max(bundle.pool_size - used, 0) / max(bundle.pool_size - 1, 1)
        spread = np.sqrt(np.maximum(t * (1 - t), 1e-6) * fpc / used)
        return _log_normal(value, t, np.maximum(spread, 1e-9))
    calibration = bundle.calibration()
    if calibration is None:
        return _log_normal(value, t, np.full(t.shape, max(bundle.error_sd * scale, 1e-9)))
    return calibration.log_density(value, t, scale)


def _exact_count(bundle: MicroBenchmarkFile, value: float, used: int) -> int | None:
    """The correct count behind `value` when the exact interval applies (0/1 scores on
    a pool small enough to enumerate), else None."""
    correct = value * used
    if abs(correct - round(correct)) < 1e-6 and bundle.pool_size < 10**6:
        return round(correct)
    return None


def _log_normal(value: float, centre: np.ndarray, spread: np.ndarray) -> np.ndarray:
    return -0.5 * ((value - centre) / spread) ** 2 - np.log(spread)


def hypergeometric_interval(correct: int, n: int, pool: int,
                            confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The exact interval of a pool's accuracy K / `pool` from `correct` of `n` items
    drawn without replacement: every K whose hypergeometric tail at `correct` is above
    (1 - confidence) / 2 on each side (Clopper and Pearson's construction for a finite
    pool), so it covers every model's accuracy with at least `confidence`. Each tail is
    monotone in K, so each end is found by bisection (about 2 log2(pool) tails).

    >>> hypergeometric_interval(5, 5, 5)  # the whole pool: exact
    (1.0, 1.0)
    """
    if not 0 <= correct <= n <= pool or n < 1:
        raise ValueError(f"need 0 <= correct <= n <= pool and n >= 1; got {correct}, {n}, "
                         f"{pool}")
    tail = (1 - confidence) / 2
    x = np.arange(n + 1, dtype=np.float64)

    def tails(k: int) -> tuple[float, float]:
        """P(X <= correct | K = k), P(X >= correct | K = k)."""
        pmf = _hypergeometric_pmf(x, k, n, pool)
        return float(pmf[: correct + 1].sum()), float(pmf[correct:].sum())

    # lowest K with P(X >= correct) > tail; highest K with P(X <= correct) > tail
    lo, hi = correct, pool - (n - correct)  # the K the draw allows
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if tails(mid)[1] > tail else (mid + 1, hi)
    low = lo
    lo, hi = correct, pool - (n - correct)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if tails(mid)[0] > tail else (lo, mid - 1)
    return low / pool, lo / pool


def _hypergeometric_pmf(x: np.ndarray, k: int | np.ndarray, n: int, pool: int) -> np.ndarray:
    """P(X = x) for the correct items X among n drawn from a pool of `pool` with k
    correct, for each of `x` and `k` broadcast together (0 where impossible)."""
    return np.exp(_log_hypergeometric_pmf(x, k, n, pool))


def _log_hypergeometric_pmf(x: np.ndarray, k: int | np.ndarray, n: int,
                            pool: int) -> np.ndarray:
    """log `_hypergeometric_pmf` (-inf where impossible)."""
    from scipy.special import gammaln

    def log_choose(a: float | np.ndarray, b: np.ndarray) -> np.ndarray:
        ok = (b >= 0) & (b <= a)
        safe = np.where(ok, b, 0.0)
        return np.where(ok, gammaln(a + 1) - gammaln(safe + 1) - gammaln(a - safe + 1),
                        -np.inf)

    return (log_choose(k, x) + log_choose(pool - k, n - x)
            - log_choose(pool, np.array(float(n))))


def _wilson(value: float, n: int, pool: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval (95% for the default `z`) of a mean of n 0/1 scores drawn without
    replacement from `pool` items: the sample size is inflated by the finite
    population correction (n / fpc), which shrinks the interval as n nears the pool."""
    fpc = (pool - n) / max(pool - 1, 1)
    if fpc <= 0:
        return value, value
    effective = n / fpc
    z2 = z**2
    centre = (value + z2 / (2 * effective)) / (1 + z2 / effective)
    half = z * np.sqrt(value * (1 - value) / effective + z2 / (4 * effective**2)) / (
        1 + z2 / effective)
    return max(centre - half, 0.0), min(centre + half, 1.0)
