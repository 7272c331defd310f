"""Random ranks inside groups, shared by the seen/unseen split and stratified selection."""

from __future__ import annotations

import numpy as np


def shuffled_ranks(codes: np.ndarray, *, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Shuffle items inside each group and rank them there.

    Parameters
    ----------
    codes : int array of shape (n_items,), group of each item, 0..n_groups-1.

    Returns
    -------
    order : int array of shape (n_items,)
        Item indices sorted by group, in random order inside each group.
    rank : int array of shape (n_items,)
        Rank of ``order[k]`` inside its group (0 for the first).
    """
    n_items = codes.shape[0]
    order = np.lexsort((rng.random(n_items), codes))
    sizes = np.bincount(codes)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    return order, np.arange(n_items) - np.repeat(starts, sizes)
