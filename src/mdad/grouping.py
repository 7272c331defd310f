"""Subtask codes, and random ranks inside groups, shared by the seen/unseen split and
stratified selection."""

from __future__ import annotations

import numpy as np

from mdad.errors import DataError


def checked_codes(codes: object, n_items: int | None = None) -> np.ndarray:
    """`codes` as a 1-D int array of subtask codes >= 0 (one per item: `n_items` of
    them when given), or a DataError naming `subtask_codes`."""
    array = np.asarray(codes)
    if (array.ndim != 1 or not np.issubdtype(array.dtype, np.integer) or (array < 0).any()
            or (n_items is not None and array.size != n_items)):
        each = f"{n_items} codes" if n_items is not None else "codes"
        raise DataError(f"subtask_codes must be {each} >= 0, one per item; got "
                        f"{array.dtype} of shape {array.shape}", parameters=("subtask_codes",))
    return array


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
