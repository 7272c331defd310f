"""Stratified sampling on the source models' mean confidence, Horvitz-Thompson estimate."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from mdad.selection.base import MethodDefaults, MicroBenchmark, SeenPool
from mdad.selection.clustering import reference_kmeans
from mdad.selection.registry import register

N_STRATA = 10


def confidence_strata(mean_confidence: np.ndarray, n_strata: int = N_STRATA) -> np.ndarray:
    """Stratum label of each item: k-means (k-means++, seed 42) on one value per item.

    Parameters
    ----------
    mean_confidence : array of shape (n_items,)

    Returns
    -------
    int array of shape (n_items,), labels 0..k-1 with k = min(n_strata, number of
    distinct values), since k-means cannot find more clusters than distinct points.
    Values one rounding step apart can still leave a stratum empty.
    """
    values = np.asarray(mean_confidence, dtype=np.float64).reshape(-1, 1)
    k = min(n_strata, np.unique(values).size)
    return reference_kmeans(values, k).labels_.astype(np.int64)


def allocate(stratum_sizes: np.ndarray, size: int) -> np.ndarray:
    """Items per stratum: round(size * share), capped at the stratum's size.

    When the rounding overshoots `size`, the strata rounded up the most give one item
    back each (first stratum on ties) until the total is `size`; an undershoot is
    topped up at random by the caller, as in the reference code.

    Parameters
    ----------
    stratum_sizes : int array of shape (n_strata,)
    size : the micro-benchmark's size, at most ``stratum_sizes.sum()``.
    """
    # size * (share), in this order as in the reference: rounding half-way cases
    # depends on it.
    exact = size * (stratum_sizes / stratum_sizes.sum())
    counts = np.minimum(np.round(exact).astype(np.int64), stratum_sizes)
    excess = int(counts.sum()) - size
    if excess > 0:
        order = np.argsort(-(counts - exact), kind="stable")
        counts[order[:excess]] -= 1
    return counts


@register("confidence-strata")
class ConfidenceStrata(MethodDefaults):
    """10 k-means strata of the source models' mean gold-option confidence per item,
    proportional allocation, random top-up to exactly `size` items, and the
    Horvitz-Thompson estimate: the sum of a model's scores divided by each item's
    inclusion probability, over the pool size."""

    display_name: ClassVar[str] = "Stratified (confidence)"
    libraries: ClassVar[tuple[str, ...]] = ("sklearn.cluster",)
    colour: ClassVar[str] = "#E69F00"
    line_style: ClassVar[str] = "-"
    in_paper: ClassVar[bool] = True
    reads_confidence: ClassVar[bool] = True
    min_sources: ClassVar[int] = 1

    def select(self, pool: SeenPool, size: int, *, rng: np.random.Generator) -> MicroBenchmark:
        labels = pool.shared("confidence-strata", lambda _: confidence_strata(
            np.asarray(pool.confidence, dtype=np.float64).mean(axis=0)))
        n_items = labels.size
        stratum_sizes = np.bincount(labels)
        counts = allocate(stratum_sizes, size)
        chosen = [rng.choice(np.flatnonzero(labels == s), k, replace=False)
                  for s, k in enumerate(counts) if k > 0]
        items = np.concatenate(chosen) if chosen else np.empty(0, dtype=np.int64)
        if items.size < size:
            rest = np.setdiff1d(np.arange(n_items), items)
            items = np.concatenate([items, rng.choice(rest, size - items.size, replace=False)])
        # an empty stratum (a label bincount skips) is never drawn from: no 0 / 0
        share = np.divide(counts, stratum_sizes, out=np.zeros(counts.size),
                          where=stratum_sizes > 0)
        probability = share[labels[items]]
        # Top-up items from strata allocated nothing: the reference's probability n/N.
        probability[probability == 0] = size / n_items
        return MicroBenchmark(items.astype(np.int64), 1.0 / (probability * n_items))
