"""Pairwise agreement, MDAD and its intervals, Kendall tau."""

from mdad.metrics.mdad import (
    NOT_REACHED,
    MdadEstimator,
    MdadResult,
    first_crossing_mdad,
    smooth_mdad,
)
from mdad.metrics.pairs import N_BINS, PairCounts, agreement, bin_edges, gap_bins, pair_counts

__all__ = [
    "NOT_REACHED",
    "N_BINS",
    "MdadEstimator",
    "MdadResult",
    "PairCounts",
    "agreement",
    "bin_edges",
    "first_crossing_mdad",
    "gap_bins",
    "pair_counts",
    "smooth_mdad",
]
