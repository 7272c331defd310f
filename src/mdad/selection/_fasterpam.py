"""FasterPAM (Schubert and Rousseeuw 2021), compiled by numba: the `kmedoids` library's
algorithm, step for step, in code that releases Python's lock.

The library's Rust code holds the lock for a whole call (1 to 4 s at 7,000 items):
nothing else in the process runs meanwhile, Ctrl-C included, and two fits in threads
take turns. Here a call covers a slice of one pass over the items, a few tenths of a
second at most (`medoids`), and the lock is free during it.

Given the same starting medoids and order of candidates, the result is the library's,
float for float (tests/test_fasterpam.py); the library's random variant shuffles the
order with Rust's generator, which `medoids` replaces by numpy's.

Each item's record: its nearest medoid (position in `med`, distance) and its second
nearest, in four arrays; `removal` (k,) is the loss each medoid's removal would add.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from mdad.kernels import compiled

# no fast-math: libm's own results (stated here: numba's cache is keyed on this file)
EXACT = {"boundscheck": False, "error_model": "numpy"}

# No fastmath: sums in the library's order, so that its floats come out
_compiled = partial(compiled, options=EXACT)
_NONE = np.int64(-1)


@_compiled
def initial_assignment(mat, med, near_i, near_d, seco_i, seco_d):  # pragma: no cover
    """Each item's nearest and second-nearest medoid; returns the loss (sum of the
    nearest distances)."""
    n, k = mat.shape[0], med.size
    loss = 0.0
    for i in range(n):
        ni, nd = 0, mat[i, med[0]]
        si, sd = _NONE, np.inf
        for m in range(1, k):
            d = mat[i, med[m]]
            if d < nd or i == med[m]:
                si, sd = ni, nd
                ni, nd = m, d
            elif si == _NONE or d < sd:
                si, sd = m, d
        near_i[i], near_d[i], seco_i[i], seco_d[i] = ni, nd, si, sd
        loss += nd
    return loss


@_compiled
def removal_loss(near_i, near_d, seco_d, removal):  # pragma: no cover
    removal[:] = 0.0
    for i in range(near_i.size):
        removal[near_i[i]] += seco_d[i] - near_d[i]


@_compiled
def best_swap(cols, removal, near_i, near_d, seco_d, j, ploss):  # pragma: no cover
    """The change of loss of the best swap of candidate `j` for a medoid, and that
    medoid's position (the first of equal ones). `cols` is the distance matrix's
    transpose: row j holds every item's distance to j, read in order."""
    ploss[:] = removal
    change = 0.0
    for o in range(near_i.size):
        djo = cols[j, o]
        if djo < near_d[o]:  # j would be o's nearest
            change += djo - near_d[o]
            ploss[near_i[o]] += near_d[o] - seco_d[o]
        elif djo < seco_d[o]:  # j would be o's second nearest
            ploss[near_i[o]] += djo - seco_d[o]
    b = 0
    for m in range(1, ploss.size):
        if ploss[m] < ploss[b]:
            b = m
    return ploss[b] + change, b


@_compiled
def _second_nearest(mat, med, nearest, b, o, djo):  # pragma: no cover
    si, sd = b, djo
    for m in range(med.size):
        if m == nearest or m == b:
            continue
        d = mat[o, med[m]]
        if d < sd:
            si, sd = m, d
    return si, sd


@_compiled
def do_swap(mat, cols, med, near_i, near_d, seco_i, seco_d, b, j):  # pragma: no cover
    """Make `j` the medoid at position `b`, update every record; returns the loss."""
    med[b] = j
    loss = 0.0
    for o in range(near_i.size):
        if o == j:
            if near_i[o] != b:
                seco_i[o], seco_d[o] = near_i[o], near_d[o]
            near_i[o], near_d[o] = b, 0.0
            continue
        djo = cols[j, o]
        if near_i[o] == b:  # its nearest medoid is gone
            if djo < seco_d[o]:
                near_d[o] = djo
            else:
                near_i[o], near_d[o] = seco_i[o], seco_d[o]
                seco_i[o], seco_d[o] = _second_nearest(mat, med, near_i[o], b, o, djo)
        elif djo < near_d[o]:
            seco_i[o], seco_d[o] = near_i[o], near_d[o]
            near_i[o], near_d[o] = b, djo
        elif djo < seco_d[o]:
            seco_i[o], seco_d[o] = b, djo
        elif seco_i[o] == b:  # its second nearest was replaced
            seco_i[o], seco_d[o] = _second_nearest(mat, med, near_i[o], b, o, djo)
        loss += near_d[o]
    return loss


@_compiled
def swap_slice(mat, cols, med, order, start, stop, lastswap, records, removal, ploss
               ):  # pragma: no cover
    """Candidates order[start:stop] of a pass, each swapped in when it lowers the loss.

    Returns (position reached: `stop`, or where the pass met `lastswap` (-1: not
    met), the last swapped item, swaps made, the loss after the last swap or NaN)."""
    near_i, near_d, seco_i, seco_d = records
    swaps = 0
    loss = np.nan
    for position in range(start, stop):
        j = order[position]
        if j == lastswap:
            return position, lastswap, swaps, loss
        if j == med[near_i[j]]:  # already a medoid
            continue
        change, b = best_swap(cols, removal, near_i, near_d, seco_d, j, ploss)
        if change >= 0.0:
            continue
        swaps += 1
        lastswap = j
        loss = do_swap(mat, cols, med, near_i, near_d, seco_i, seco_d, b, j)
        removal_loss(near_i, near_d, seco_d, removal)
    return -1, lastswap, swaps, loss


@_compiled
def best_single(mat, first):  # pragma: no cover
    """The one medoid of all items: the item whose distances to the others sum least,
    `first` unless another is strictly lower (summed in order, as the library does);
    returns it and its sum."""
    n = mat.shape[0]
    best, best_sum = first, 0.0
    for i in range(n):
        if i != first:
            best_sum += mat[first, i]
    for j in range(n):
        if j == first:
            continue
        total = 0.0
        for i in range(n):
            if i != j:
                total += mat[j, i]
        if total < best_sum:
            best, best_sum = j, total
    return best, best_sum


# Distances a compiled call reads, about: a tenth of a second or so
_CELLS_PER_CALL = 20_000_000


@_compiled
def symmetric(mat):  # pragma: no cover
    """Whether the square `mat` equals its transpose, compared in 64 x 64 tiles (no
    n x n temporary, and each tile's column reads stay in the cache)."""
    n = mat.shape[0]
    for top in range(0, n, 64):
        for left in range(top, n, 64):
            for i in range(top, min(top + 64, n)):
                for j in range(max(left, i + 1), min(left + 64, n)):
                    if mat[i, j] != mat[j, i]:
                        return False
    return True


def columns_of(distance: np.ndarray) -> np.ndarray:
    """The transpose of `distance` (n, n), row-major: `distance` itself when it is
    symmetric, else a copy. The library reads d(o, j) down column j; this reads it
    along a row."""
    mat = np.asarray(distance, dtype=np.float64)
    return mat if symmetric(mat) else np.ascontiguousarray(mat.T)


def fasterpam(distance: np.ndarray, medoids: np.ndarray, *, order: np.ndarray | None = None,
              max_passes: int = 100, columns: np.ndarray | None = None
              ) -> tuple[np.ndarray, float, int, int]:
    """FasterPAM from the starting `medoids` (k distinct item indices) on the
    (n, n) float64 `distance` (zero diagonal), candidates taken in `order` (a
    permutation of range(n); default 0, 1, ...), at most `max_passes` passes.
    `columns` is `columns_of(distance)`, made here when None (pass it when one
    distance matrix serves several calls).

    Returns (medoids (k,) int64, loss: the sum of each item's distance to its nearest
    medoid, passes, swaps), as ``kmedoids.fasterpam`` returns them for the same
    start and order. With k = 1, the single best medoid (the library's special case).

    Raises
    ------
    ValueError
        For a matrix that is not square, medoids that are not 1 to n distinct items,
        an `order` that is not a permutation of range(n), or `columns` of another
        shape (the compiled kernels do not check their bounds).
    """
    mat = np.asarray(distance, dtype=np.float64)
    n = mat.shape[0]
    med = np.array(medoids, dtype=np.int64)
    if mat.ndim != 2 or mat.shape != (n, n):
        raise ValueError(f"distance must be a square matrix, not of shape {mat.shape}")
    if med.ndim != 1 or not 1 <= med.size <= n or np.unique(med).size != med.size or (
            med.min() < 0 or med.max() >= n):
        raise ValueError(f"medoids must be 1 to {n} distinct items of 0..{n - 1}")
    if order is not None and not np.array_equal(np.sort(order), np.arange(n)):
        raise ValueError(f"order must be a permutation of range({n})")
    if columns is not None and np.shape(columns) != mat.shape:
        raise ValueError(f"columns must have the distance matrix's shape {mat.shape}")
    cols = columns_of(mat) if columns is None else columns
    if med.size == 1:
        best, loss = best_single(mat, med[0])
        return np.array([best]), float(loss), 1, int(best != med[0])
    records = (np.empty(n, np.int64), np.empty(n), np.empty(n, np.int64), np.empty(n))
    loss = initial_assignment(mat, med, *records)
    removal, ploss = np.empty(med.size), np.empty(med.size)
    removal_loss(records[0], records[1], records[3], removal)
    order = np.arange(n, dtype=np.int64) if order is None else np.asarray(order, np.int64)
    step = max(1, _CELLS_PER_CALL // n)
    lastswap, swaps, passes = n, 0, 0
    while passes < max_passes:
        passes += 1
        swaps_before, last_loss = swaps, loss
        for start in range(0, n, step):
            reached, lastswap, made, new_loss = swap_slice(
                mat, cols, med, order, start, min(start + step, n), lastswap, records,
                removal, ploss)
            if made:
                swaps, loss = swaps + made, new_loss
            if reached >= 0:
                break
        if swaps == swaps_before or loss >= last_loss:
            break
    return med, float(loss), passes, swaps
