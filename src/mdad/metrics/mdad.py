"""MDAD: the smallest accuracy gap a micro-benchmark ranks correctly often enough."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from mdad.defaults import DEFAULT_THRESHOLD
from mdad.errors import Choice, ConfigError, DataError, check_open_unit, check_whole
from mdad.metrics.pairs import N_BINS, bin_edges, gap_bins

CONFIDENCE = 0.95
# Quantile levels written as the reference code writes them (0.025000000000000022).
QUANTILES = ((1 - CONFIDENCE) / 2, 1 - (1 - CONFIDENCE) / 2)
# Below these counts an MDAD rests on too few pairs to be trusted without a warning.
MIN_CROSSING_PAIRS = 30
MIN_GROUP_PAIRS = 1000
UNREACHED = 1e6  # stands for an infinite MDAD in bootstrap quantiles


class MdadEstimator(Choice):
    """How MDAD is read off the agreement-versus-gap curve."""

    FIRST_CROSSING = "first-crossing"
    SMOOTH = "smooth"
    __option__ = "estimator"


@dataclass(frozen=True)
class MdadResult:
    """An MDAD estimate with its 95% interval, as accuracy fractions (0.05 = 5 points).

    A value that was not reached is censored, never a number: `mdad` is NaN when the
    agreement never reaches the threshold within the observed gaps (then the MDAD is
    larger than `max_gap`), and an interval bound is NaN (unbounded) when its
    bootstrap curve never reaches it.

    Attributes
    ----------
    n_pairs : target pairs behind the estimate (all bins, all runs).
    max_gap : the largest |reference gap| among them.
    crossing_pairs : pairs in the bin that set `mdad` (0 when not reached).
    tied_pairs : pairs whose reference gap is exactly 0 (they never agree).
    """

    mdad: float
    low: float
    high: float
    threshold: float
    estimator: MdadEstimator
    n_pairs: int
    max_gap: float
    crossing_pairs: int = 0
    tied_pairs: int = 0

    @property
    def reached(self) -> bool:
        return not np.isnan(self.mdad)


def _last_edge(pairs: np.ndarray) -> float:
    """Lower edge of the last non-empty bin: a lower bound on the largest gap."""
    nonempty = np.flatnonzero(pairs > 0)
    return float(bin_edges(nonempty[-1])) if nonempty.size else float("nan")


def _first_at_least(curves: np.ndarray, valid: np.ndarray, threshold: float) -> np.ndarray:
    """Lower bin edge of the first valid bin whose value reaches `threshold`, per row;
    NaN where none does."""
    hit = (curves >= threshold) & valid
    first = np.argmax(hit, axis=-1)
    return np.where(hit.any(axis=-1), bin_edges(first), np.nan)


def _checked(pairs: object, agreeing: object, ndim: int, threshold: object,
             n_resamples: object, rng: object, tied_pairs: object, max_gap: object = None
             ) -> tuple[np.ndarray, np.ndarray]:
    """The counts as int64 arrays, after refusing what no MDAD can be computed from
    (see `first_crossing_mdad`'s Raises)."""
    check_open_unit(threshold, "threshold")
    if max_gap is not None and (
            not isinstance(max_gap, numbers.Real | np.floating) or isinstance(max_gap, bool)
            or not (0 <= max_gap <= 1 or np.isnan(max_gap))):
        raise ConfigError(f"max_gap must be a gap in [0, 1], NaN (no pair) or None; got "
                          f"{max_gap!r}", parameters=("max_gap",))
    check_whole(n_resamples, "n_resamples", minimum=1)
    check_whole(tied_pairs, "tied_pairs", minimum=0)
    if not isinstance(rng, np.random.Generator):
        raise ConfigError(f"rng must be a numpy.random.Generator; got {type(rng).__name__}",
                          parameters=("rng",))
    arrays = []
    for name, values in (("pairs", pairs), ("agreeing", agreeing)):
        array = np.asarray(values)
        if (array.ndim != ndim or not (np.issubdtype(array.dtype, np.integer)
                                       or np.issubdtype(array.dtype, np.bool_))
                or (array < 0).any()):
            raise DataError(f"{name} must be a {ndim}-D array of whole counts >= 0; got "
                            f"{array.ndim}-D {array.dtype}", parameters=(name,))
        arrays.append(array.astype(np.int64))
    if arrays[0].shape != arrays[1].shape:
        raise DataError(f"pairs and agreeing must have one shape; got {arrays[0].shape} and "
                        f"{arrays[1].shape}", parameters=("pairs", "agreeing"))
    if arrays[0].size == 0 or arrays[0].shape[-1] > N_BINS:
        raise DataError(f"pairs must have 1 to {N_BINS} gap bins (`gap_bins`); got "
                        f"{arrays[0].shape[-1] if arrays[0].ndim else 0}", parameters=("pairs",))
    if (arrays[1] > arrays[0]).any():
        raise DataError("agreeing must not exceed pairs in any bin", parameters=("agreeing",))
    if tied_pairs > arrays[0].sum():
        raise DataError(f"tied_pairs ({tied_pairs}) must not exceed the pairs counted "
                        f"({arrays[0].sum()}): they are among them", parameters=("tied_pairs",))
    return arrays[0], arrays[1]


def first_crossing_mdad(
    pairs: np.ndarray,
    agreeing: np.ndarray,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    n_resamples: int = 1000,
    rng: np.random.Generator,
    max_gap: float | None = None,
    tied_pairs: int = 0,
) -> MdadResult:
    """The paper's MDAD: the first |gap| bin whose mean agreement reaches `threshold`.

    Bins are walked from the smallest gap up; empty bins are skipped. The interval
    applies the same rule to each bin's bootstrap 2.5% and 97.5% quantiles (the
    upper quantile gives the lower MDAD bound). Resampling a bin's 0/1 agreements
    with replacement gives a Binomial(n, mean) count, so the bootstrap draws that
    count directly: the same distribution as the reference's loop, without it.

    Parameters
    ----------
    pairs : numpy.ndarray
        Int array of shape (n_bins,), 1 <= n_bins <= 201: the target pairs pooled
        over runs in each 0.005-wide |gap| bin (bin b holds gaps in [b/200, (b+1)/200),
        see `mdad.metrics.pairs.gap_bins`).
    agreeing : numpy.ndarray
        Int array of the same shape: how many of each bin's pairs agree (their
        estimated gap has the reference gap's sign, `mdad.metrics.pairs.agreement`),
        at most `pairs`.
    threshold : float, default 0.8
        Agreement probability to reach, in (0, 1).
    n_resamples : int, default 1000
        Bootstrap resamples per bin, at least 1.
    rng : numpy.random.Generator
        The source of the bootstrap draws (keyword only, required).
    max_gap : float or None, default None
        The largest |gap| among the pairs (accuracy fraction, in [0, 1], or NaN for no
        pair); None: the lower edge of the last non-empty bin, a lower bound on it.
    tied_pairs : int, default 0
        How many of the pairs have a reference gap of exactly 0 (reported only).

    Returns
    -------
    MdadResult
        The MDAD and its 95% interval as accuracy fractions (0.05 = 5 points), with
        `estimator` ``first-crossing``. Censored, never a number: `mdad` is NaN when
        no bin's mean agreement reaches `threshold` (the MDAD is then larger than
        `max_gap`), and an interval bound is NaN (unbounded) when its quantile never
        reaches it. `crossing_pairs` counts the pairs in the bin that sets the MDAD
        (0 when not reached).

    Raises
    ------
    ConfigError
        For a threshold outside (0, 1), fewer than 1 resample, no Generator, a
        `max_gap` that is not a gap in [0, 1], NaN or None, or a negative
        `tied_pairs`, naming the parameter.
    DataError
        For counts that are not whole, negative, of two shapes, not 1-D, with no bin or
        more than 201, or with more agreeing pairs than pairs; or `tied_pairs` above the
        pairs counted.

    See Also
    --------
    `smooth_mdad` : MDAD from a monotone fit, bootstrapped over runs.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> first_crossing_mdad(np.array([2, 1, 1]), np.array([1, 0, 1]), rng=rng).mdad
    0.01
    """
    pairs, agreeing = _checked(pairs, agreeing, 1, threshold, n_resamples, rng, tied_pairs,
                               max_gap)
    valid = pairs > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(valid, agreeing / np.maximum(pairs, 1), 0.0)
    # Only non-empty bins are drawn: a Binomial(0, p) draw takes nothing from the
    # generator, so the draws (and the generator's state after them) are those of
    # drawing every bin.
    lower, upper = np.zeros((2, pairs.size))
    draws = rng.binomial(pairs[valid], mean[valid], size=(n_resamples, int(valid.sum())))
    lower[valid], upper[valid] = np.quantile(draws / pairs[valid], QUANTILES, axis=0)
    point = float(_first_at_least(mean, valid, threshold))
    crossing = 0 if np.isnan(point) else int(pairs[gap_bins(np.array(point + 1e-12))])
    return MdadResult(
        mdad=point,
        low=float(_first_at_least(upper, valid, threshold)),
        high=float(_first_at_least(lower, valid, threshold)),
        threshold=threshold,
        estimator=MdadEstimator.FIRST_CROSSING,
        n_pairs=int(pairs.sum()),
        max_gap=_last_edge(pairs) if max_gap is None else float(max_gap),
        crossing_pairs=crossing,
        tied_pairs=int(tied_pairs),
    )


def monotone_crossings(pairs: np.ndarray, agreeing: np.ndarray,
                       threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Where the isotonic (non-decreasing, pair-weighted) fit of each curve's agreement
    on |gap| first reaches `threshold`, interpolated linearly between the edges of
    non-empty bins, without fitting the curves one by one.

    Uses the min-max form of isotonic regression, fit[i] = max_{j<=i} min_{m>=i}
    mean(j..m): fit[i] >= t exactly when min_{m>=i} S[m] >= min_{j<=i} S[j-1], with S
    the running sum of agreeing - t * pairs. At the first such bin k, which starts a
    block of the fit, fit[k] = min_{m>=k} mean(k..m); at the non-empty bin before it,
    which ends one, fit = max_{j} mean(j..that bin).

    Parameters
    ----------
    pairs, agreeing : int arrays of shape (n_curves, n_bins)

    Returns
    -------
    crossing : float array of shape (n_curves,), NaN where the fit never reaches it.
    crossing_pairs : int array of shape (n_curves,), pairs in bin k (0 if none).

    Raises
    ------
    ConfigError, DataError
        For a threshold outside (0, 1), arrays of two shapes or not 2-D, or more
        agreeing pairs than pairs.
    """
    check_open_unit(threshold, "threshold")
    pairs = np.asarray(pairs, dtype=np.float64)
    agreeing = np.asarray(agreeing, dtype=np.float64)
    if pairs.ndim != 2 or pairs.shape != agreeing.shape:
        raise DataError(f"pairs and agreeing must be one (n_curves, n_bins) shape; got "
                        f"{pairs.shape} and {agreeing.shape}", parameters=("pairs", "agreeing"))
    if not ((0 <= agreeing) & (agreeing <= pairs)).all():
        raise DataError("agreeing must lie in 0..pairs in every bin", parameters=("agreeing",))
    return _monotone_crossings(pairs, agreeing, threshold)


def _monotone_crossings(pairs: np.ndarray, agreeing: np.ndarray,
                        threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """`monotone_crossings` of counts already checked (the bootstrap's)."""
    pairs = np.asarray(pairs, dtype=np.float64)
    agreeing = np.asarray(agreeing, dtype=np.float64)
    n_curves, n_bins = pairs.shape
    rows = np.arange(n_curves)
    valid = pairs > 0

    def shifted(cumulative: np.ndarray) -> np.ndarray:  # value before each bin
        return np.concatenate([np.zeros((n_curves, 1)), cumulative[:, :-1]], axis=1)

    running = np.cumsum(agreeing - threshold * pairs, axis=1)
    before_min = np.minimum.accumulate(shifted(running), axis=1)
    after_min = np.minimum.accumulate(running[:, ::-1], axis=1)[:, ::-1]
    hit = valid & (after_min - before_min >= -1e-9)
    reached = hit.any(axis=1)
    k = np.argmax(hit, axis=1)
    total_agree, total_pairs = np.cumsum(agreeing, axis=1), np.cumsum(pairs, axis=1)
    agree_before, pairs_before = shifted(total_agree), shifted(total_pairs)
    bins = np.arange(n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        # fit at k: min over m >= k of mean(k..m)
        span = total_pairs - pairs_before[rows, k][:, None]
        mean_from_k = (total_agree - agree_before[rows, k][:, None]) / span
        y1 = np.where((bins >= k[:, None]) & (span > 0), mean_from_k, np.inf).min(axis=1)
        # the last non-empty bin before k, and the fit there
        last_valid = np.maximum.accumulate(np.where(valid, bins, -1), axis=1)
        previous = np.where(k > 0, last_valid[rows, np.maximum(k - 1, 0)], -1)
        at = np.maximum(previous, 0)
        span = total_pairs[rows, at][:, None] - pairs_before
        mean_to_prev = (total_agree[rows, at][:, None] - agree_before) / span
        y0 = np.where((bins <= at[:, None]) & (span > 0), mean_to_prev, -np.inf).max(axis=1)
        x0, x1 = bin_edges(at), bin_edges(k)
        between = x0 + (threshold - y0) / (y1 - y0) * (x1 - x0)
    crossing = np.where(previous < 0, x1, between)
    crossing = np.where(reached, crossing, np.nan)
    crossing_pairs = np.where(reached, pairs[rows, k], 0).astype(np.int64)
    return crossing, crossing_pairs


def smooth_mdad(
    run_pairs: np.ndarray,
    run_agreeing: np.ndarray,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    n_resamples: int = 1000,
    rng: np.random.Generator,
    max_gap: float | None = None,
    tied_pairs: int = 0,
) -> MdadResult:
    """MDAD from a monotone fit of agreement against |gap|, bootstrapped over runs.

    Agreement should not fall as the gap grows, so a weighted isotonic regression of
    the binned agreement is fitted and its first crossing of `threshold` is
    interpolated between bins: no jumps from one noisy bin. Pairs of one run share
    models and items, so the interval resamples whole runs, the independent units.

    Parameters
    ----------
    run_pairs : numpy.ndarray
        Int array of shape (n_runs, n_bins), 1 <= n_bins <= 201: each run's target
        pairs in each 0.005-wide |gap| bin (a row is `first_crossing_mdad`'s `pairs`
        for one run).
    run_agreeing : numpy.ndarray
        Int array of the same shape: how many of them agree, at most `run_pairs`.
    threshold : float, default 0.8
        Agreement probability to reach, in (0, 1).
    n_resamples : int, default 1000
        Bootstrap resamples of the runs, at least 1.
    rng : numpy.random.Generator
        The source of the bootstrap draws (keyword only, required).
    max_gap : float or None, default None
        As in `first_crossing_mdad`: the largest |gap| among the pairs (accuracy
        fraction); None: the lower edge of the last non-empty bin.
    tied_pairs : int, default 0
        As in `first_crossing_mdad`: pairs with a reference gap of exactly 0 (reported
        only).

    Returns
    -------
    MdadResult
        The MDAD and its 95% interval as accuracy fractions (0.05 = 5 points), with
        `estimator` ``smooth``; `mdad` is NaN when the fit never reaches `threshold`,
        and an interval bound NaN when unbounded (see Notes).

    Raises
    ------
    ConfigError, DataError
        As `first_crossing_mdad` does (for 2-D counts).

    Notes
    -----
    A resample whose fit never reaches the threshold counts as an infinite MDAD, so
    an interval bound that falls on such resamples is NaN (unbounded). One run cannot
    show how runs vary (every resample is that run): its interval is [0, unbounded],
    not the zero-width one its resamples would give.
    """
    run_pairs, run_agreeing = _checked(run_pairs, run_agreeing, 2, threshold, n_resamples,
                                       rng, tied_pairs, max_gap)
    n_runs = run_pairs.shape[0]
    total_pairs = run_pairs.sum(axis=0)
    used = np.flatnonzero(total_pairs)
    point, crossing, low, high = np.nan, 0, np.inf, np.inf
    if used.size:
        span = slice(0, used[-1] + 1)  # bins past the last pair are empty in every resample
        run_pairs, run_agreeing = run_pairs[:, span], run_agreeing[:, span]
        points, crossings_pairs = _monotone_crossings(
            total_pairs[None, span], run_agreeing.sum(axis=0)[None, :], threshold)
        point, crossing = float(points[0]), int(crossings_pairs[0])
        counts = rng.multinomial(n_runs, np.full(n_runs, 1.0 / n_runs), size=n_resamples)
        # float products are exact for these integer counts, and BLAS is 20x faster
        counts = counts.astype(np.float64)
        crossings, _ = _monotone_crossings(counts @ run_pairs.astype(np.float64),
                                          counts @ run_agreeing.astype(np.float64), threshold)
        # an unreached resample is far above any gap (a finite stand-in: numpy's
        # interpolation with inf gives NaN even at weight 0); ends past 1 are unbounded
        low, high = np.quantile(np.where(np.isnan(crossings), UNREACHED, crossings),
                                QUANTILES)
        low, high = (np.inf if end > 1.0 else end for end in (low, high))
        if n_runs < 2:
            low, high = 0.0, np.inf
    return MdadResult(
        mdad=point,
        low=float(low) if np.isfinite(low) else float("nan"),
        high=float(high) if np.isfinite(high) else float("nan"),
        threshold=threshold,
        estimator=MdadEstimator.SMOOTH,
        n_pairs=int(run_pairs.sum()),
        max_gap=_last_edge(total_pairs) if max_gap is None else float(max_gap),
        crossing_pairs=crossing,
        tied_pairs=int(tied_pairs),
    )
