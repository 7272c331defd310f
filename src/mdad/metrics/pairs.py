"""Pairwise statistics of target models, binned by their reference accuracy gap."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from mdad.errors import DataError, check_whole, float_array

BINS_PER_UNIT = 200  # bins 0.005 wide: half an accuracy point, as in the paper
N_BINS = BINS_PER_UNIT + 1  # |gap| in [0, 1] -> bins 0..200


def gap_bins(gap: np.ndarray) -> np.ndarray:
    """Bin index of each |gap|: floor(|gap| * 200), the reference code's arithmetic,
    so that a gap on a bin edge lands in the same bin.

    Raises
    ------
    DataError
        For a gap that is NaN or beyond [-1, 1] (accuracies differ by at most 1).
    """
    size = np.abs(float_array(gap, "gap"))
    if not (size <= 1.0 + 1e-9).all():  # NaN fails it too
        raise DataError("gap must be a difference of accuracies in [-1, 1], not NaN",
                        parameters=("gap",))
    return np.floor(size * float(BINS_PER_UNIT)).astype(np.int64)


def bin_edges(bins: np.ndarray | int) -> np.ndarray:
    """Lower |gap| edge of each bin index, as the reference computes it (b / 200).

    Raises
    ------
    DataError
        For an index outside 0..200.
    """
    bins = np.asarray(bins)
    if not np.issubdtype(bins.dtype, np.integer) or ((bins < 0) | (bins >= N_BINS)).any():
        raise DataError(f"bins must be whole bin indices in 0..{N_BINS - 1}",
                        parameters=("bins",))
    return bins / float(BINS_PER_UNIT)


def agreement(estimated_gap: np.ndarray, reference_gap: np.ndarray) -> np.ndarray:
    """1 where the estimated gap has the reference gap's sign and neither is zero.

    A tie on the micro-benchmark (estimated gap 0) is a disagreement, as in the
    paper. A tie on the reference (gap exactly 0) is one too: equal models have no
    order to recover. (The reference code read it as +0 by ``copysign`` and so
    counted about half of such pairs as agreeing.) A NaN gap, a pair without an
    estimate, never agrees, as in `pair_counts`.

    Parameters
    ----------
    estimated_gap, reference_gap : float arrays of one shape (any), accuracy
        differences (fractions).

    Returns
    -------
    bool array of that shape.

    Raises
    ------
    DataError
        When the shapes differ: broadcasting would pair gaps of different pairs.
    """
    estimated_gap = float_array(estimated_gap, "estimated_gap")
    reference_gap = float_array(reference_gap, "reference_gap")
    if estimated_gap.shape != reference_gap.shape:
        raise DataError(f"estimated_gap and reference_gap must have one shape, a gap of "
                        f"each pair; got {estimated_gap.shape} and {reference_gap.shape}",
                        parameters=("estimated_gap", "reference_gap"))
    same_sign = np.signbit(estimated_gap) == np.signbit(reference_gap)
    # a NaN gap (no estimate) never agrees, as in `pair_counts`
    return (same_sign & (estimated_gap != 0) & (reference_gap != 0)
            & ~np.isnan(estimated_gap) & ~np.isnan(reference_gap))


@dataclass(frozen=True)
class PairCounts:
    """Per-run pair counts by gap bin.

    Attributes
    ----------
    pairs, agreeing : int arrays of shape (n_runs, N_BINS)
        Number of target pairs in each |gap| bin, and how many the micro-benchmark
        ranked as the reference does. A pair whose reference gap is exactly 0 has no
        order to recover: it counts in bin 0 and never agrees, so tied models can
        only delay the crossing, never set an MDAD of 0.
    tied : int array of shape (n_runs,)
        Pairs whose reference gap is exactly 0 (all in bin 0).
    kendall_tau : float array of shape (n_runs,)
        Kendall's tau-b between estimated and reference accuracies (NaN if either
        is constant).
    """

    pairs: np.ndarray
    agreeing: np.ndarray
    kendall_tau: np.ndarray
    tied: np.ndarray


# Each pair of a run, oriented so that its reference gap d_ref >= 0, is tallied by
# (bin, d_ref == 0, sign of its estimated gap): 6 classes per bin.
_CLASSES = 6
_NEG, _ZERO, _POS = 0, 1, 2


def _run_tallies(estimates: np.ndarray, reference: np.ndarray, block: int) -> np.ndarray:
    """Tallies of each run's pairs, shape (n_runs, N_BINS, 2, 3): [run, bin, d_ref == 0,
    est sign], for runs given as (n_runs, n_targets) arrays.

    Each run's targets are stably sorted by reference, so a pair (p < q) in sorted
    order has d_ref = ref[q] - ref[p] >= 0, exactly |ref_i - ref_j|, and a tied pair
    keeps the target order of its models. Rows of the pair matrix are processed about
    `block` pairs at a time, over all the given runs at once.
    """
    n_runs, n = estimates.shape
    order = np.argsort(reference, axis=1, kind="stable")
    ref = np.take_along_axis(reference, order, axis=1)
    est = np.take_along_axis(estimates, order, axis=1)
    per_run = N_BINS * _CLASSES
    unused = n_runs * per_run  # the last slot: pairs below the diagonal
    tallies = np.zeros(unused + 1, dtype=np.int64)
    offset = (np.arange(n_runs, dtype=np.int64) * per_run)[:, None, None]
    rows = max(1, min(n, block // max(n * n_runs, 1)))
    for start in range(0, n - 1, rows):
        stop = min(start + rows, n - 1)
        d_ref = ref[:, None, start + 1:] - ref[:, start:stop, None]
        d_est = est[:, None, start + 1:] - est[:, start:stop, None]
        code = (d_ref * float(BINS_PER_UNIT)).astype(np.int64)  # floor: d_ref >= 0
        code *= _CLASSES
        code += 3 * (d_ref == 0)
        code += d_est > 0
        code += d_est >= 0
        code += np.isnan(d_est)  # a tie: never agrees
        code += offset
        # column c of row r is the pair (start + r, start + 1 + c): keep c >= r
        square = min(stop - start, code.shape[2])
        below = np.tril_indices(square, k=-1)
        code[:, below[0], below[1]] = unused
        tallies += np.bincount(code.ravel(), minlength=tallies.size)
    return tallies[:-1].reshape(n_runs, N_BINS, 2, 3)


def pair_counts(estimates: np.ndarray, reference: np.ndarray, *, block: int = 1 << 18,
                threads: int = 2) -> PairCounts:
    """Bin every pair (i < j) of target models of every run by |reference gap|.

    Memory stays bounded for any number of targets: each run is processed in blocks
    of about `block` pairs, and only per-bin tallies are kept. A NaN estimate never
    agrees, and makes its run's tau NaN.

    Parameters
    ----------
    estimates, reference : arrays of shape (n_runs, n_targets)
        Estimated and reference accuracies (fractions) of each run's targets, in the
        run's target order.
    block : int
        Pairs processed at once (memory about 40 bytes per pair).
    threads : int
        Batches of runs tallied at once; numpy releases the GIL, so threads use
        several cores.

    Returns
    -------
    PairCounts
    """
    estimates = float_array(estimates, "estimates")
    reference = float_array(reference, "reference")
    if estimates.ndim != 2 or estimates.shape != reference.shape:
        raise DataError(f"estimates and reference must be one (n_runs, n_targets) shape; got "
                        f"{estimates.shape} and {reference.shape}",
                        parameters=("estimates", "reference"))
    if not ((reference >= 0) & (reference <= 1)).all():  # NaN fails it too
        raise DataError("reference accuracies must be fractions in [0, 1] (a NaN estimate "
                        "is allowed: it never agrees)", parameters=("reference",))
    check_whole(block, "block")
    check_whole(threads, "threads")
    n_runs, n_targets = estimates.shape

    # Runs with few targets are tallied together (one bincount for many runs); runs
    # with many are tallied one at a time, in threads.
    per_batch = max(1, block // max(n_targets * n_targets // 2, 1))
    batches = [slice(start, min(start + per_batch, n_runs))
               for start in range(0, n_runs, per_batch)]

    def tally(batch: slice) -> np.ndarray:
        return _run_tallies(estimates[batch], reference[batch], block)

    tallies = np.zeros((n_runs, N_BINS, 2, 3), dtype=np.int64)
    if threads > 1 and len(batches) > 1:
        with ThreadPoolExecutor(min(threads, len(batches))) as pool:
            for batch, counted in zip(batches, pool.map(tally, batches), strict=True):
                tallies[batch] = counted
    else:
        for batch in batches:
            tallies[batch] = tally(batch)
    pairs = tallies.sum(axis=(2, 3))
    # agree: d_ref > 0 with a positive estimated gap. (The reference code reads a tied
    # reference as +0 and counts it as agreeing half the time, by target order.)
    agreeing = tallies[:, :, 0, _POS]
    strict = tallies[:, :, 0].sum(axis=1)  # (n_runs, 3) over bins, d_ref > 0
    concordance = strict[:, _POS] - strict[:, _NEG]
    tied_estimate = tallies[:, :, :, _ZERO].sum(axis=(1, 2))
    tied_reference = tallies[:, :, 1].sum(axis=(1, 2))
    n_pairs = float(n_targets * (n_targets - 1) // 2)  # float: no int64 overflow
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = concordance / np.sqrt((n_pairs - tied_estimate) * (n_pairs - tied_reference))
    tau[~np.isfinite(estimates).all(axis=1)] = np.nan
    return PairCounts(pairs, agreeing, tau, tied_reference.astype(np.int64))
