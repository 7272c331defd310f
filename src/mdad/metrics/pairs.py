"""Pairwise statistics of target models, binned by their reference accuracy gap."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BINS_PER_UNIT = 200  # bins 0.005 wide: half an accuracy point, as in the paper
N_BINS = BINS_PER_UNIT + 1  # |gap| in [0, 1] -> bins 0..200


def gap_bins(gap: np.ndarray) -> np.ndarray:
    """Bin index of each |gap|: floor(|gap| * 200), the reference code's arithmetic,
    so that a gap on a bin edge lands in the same bin."""
    return np.floor(np.abs(gap) * float(BINS_PER_UNIT)).astype(np.int64)


def bin_edges(bins: np.ndarray | int) -> np.ndarray:
    """Lower |gap| edge of each bin index, as the reference computes it (b / 200)."""
    return np.asarray(bins) / float(BINS_PER_UNIT)


def agreement(estimated_gap: np.ndarray, reference_gap: np.ndarray) -> np.ndarray:
    """1 where the estimated gap has the reference gap's sign and is not zero.

    A tie on the micro-benchmark (estimated gap 0) is a disagreement. Signs follow
    the reference code's ``copysign``: a reference gap of +0.0 counts as positive.
    """
    same_sign = np.signbit(estimated_gap) == np.signbit(reference_gap)
    return same_sign & (estimated_gap != 0)


@dataclass(frozen=True)
class PairCounts:
    """Per-run pair counts by gap bin.

    Attributes
    ----------
    pairs, agreeing : int arrays of shape (n_runs, N_BINS)
        Number of target pairs in each |gap| bin, and how many the micro-benchmark
        ranked as the reference does.
    kendall_tau : float array of shape (n_runs,)
        Kendall's tau-b between estimated and reference accuracies (NaN if either
        is constant).
    """

    pairs: np.ndarray
    agreeing: np.ndarray
    kendall_tau: np.ndarray


def pair_counts(estimates: np.ndarray, reference: np.ndarray, *, batch: int = 2_000_000
                ) -> PairCounts:
    """Bin every pair (i < j) of target models of every run by |reference gap|.

    Parameters
    ----------
    estimates, reference : arrays of shape (n_runs, n_targets)
        Estimated and reference accuracies (fractions) of each run's targets, in the
        run's target order.
    batch : int
        Pairs processed at once, to bound memory for many targets.

    Returns
    -------
    PairCounts
    """
    n_runs, n_targets = estimates.shape
    first, second = np.triu_indices(n_targets, k=1)
    pairs = np.zeros((n_runs, N_BINS), dtype=np.int64)
    agreeing = np.zeros((n_runs, N_BINS), dtype=np.int64)
    concordance = np.zeros(n_runs)
    tied_estimate = np.zeros(n_runs)
    tied_reference = np.zeros(n_runs)
    for start in range(0, first.size, batch):
        i, j = first[start:start + batch], second[start:start + batch]
        est_gap = estimates[:, i] - estimates[:, j]
        ref_gap = reference[:, i] - reference[:, j]
        bins = gap_bins(ref_gap) + N_BINS * np.arange(n_runs)[:, None]
        agree = agreement(est_gap, ref_gap)
        pairs += np.bincount(bins.ravel(), minlength=n_runs * N_BINS).reshape(n_runs, N_BINS)
        agreeing += np.bincount(bins.ravel(), weights=agree.ravel(),
                                minlength=n_runs * N_BINS).reshape(n_runs, N_BINS).astype(np.int64)
        est_sign, ref_sign = np.sign(est_gap), np.sign(ref_gap)
        concordance += (est_sign * ref_sign).sum(axis=1)
        tied_estimate += (est_sign == 0).sum(axis=1)
        tied_reference += (ref_sign == 0).sum(axis=1)
    n_pairs = first.size
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = concordance / np.sqrt((n_pairs - tied_estimate) * (n_pairs - tied_reference))
    return PairCounts(pairs, agreeing, tau)
