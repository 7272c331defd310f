"""Pairwise agreement, MDAD and its intervals, Kendall tau."""

from mdad.metrics.mdad import (
    DEFAULT_THRESHOLD,
    MIN_CROSSING_PAIRS,
    MIN_GROUP_PAIRS,
    MdadEstimator,
    MdadResult,
    first_crossing_mdad,
    monotone_crossings,
    smooth_mdad,
)
from mdad.metrics.pairs import N_BINS, PairCounts, agreement, bin_edges, gap_bins, pair_counts

__all__ = [
    "DEFAULT_THRESHOLD",
    "MIN_CROSSING_PAIRS",
    "MIN_GROUP_PAIRS",
    "N_BINS",
    "MdadEstimator",
    "MdadResult",
    "PairCounts",
    "agreement",
    "bin_edges",
    "first_crossing_mdad",
    "gap_bins",
    "monotone_crossings",
    "pair_counts",
    "smooth_mdad",
]
