"""Diversity: a determinantal point process over the items' confidence profiles.

The reference code projects the source models' gold-option confidences on 4
principal components, drops items beyond the 1% / 99% quantile of any component,
rescales each component into [-0.99, 0.99], and draws n items from the discrete
orthogonal-polynomial-ensemble DPP of DPPcoresets (``draw_discrete_OPE``): the
projection DPP whose kernel projects onto the span of the first n multivariate
polynomials (graded by maximum degree, then lexicographic) evaluated at the items.
The estimate is the plain mean over the drawn items.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.polynomial import chebyshev

from mdad.selection.base import MethodDefaults, MicroBenchmark, SeenPool
from mdad.selection.registry import register

N_COMPONENTS = 4
TAIL = 0.01
SCALE = 0.99
# Singular values of the polynomial features below this (relative to the largest) are
# numerical dependence: the points cannot support that many polynomials.
RANK_TOLERANCE = 1e-10
CONSTANT_SPREAD = 1e-9
# Rejections in a row after which the blocked sampler brings every residual up to date.
BLOCK_PATIENCE = 32


def graded_multi_indices(count: int, dims: int) -> np.ndarray:
    """The first `count` multi-indices in {0, 1, ...}^dims, ordered by maximum degree,
    then lexicographically (first coordinate most significant): DPPcoresets' and
    dppy's ``compute_ordering``. Shape (count, dims)."""
    top = 0
    while (top + 1) ** dims < count:
        top += 1
    cube = np.indices((top + 1,) * dims).reshape(dims, -1).T
    order = np.argsort(cube.max(axis=1), kind="stable")
    return cube[order[:count]]


def polynomial_features(points: np.ndarray, count: int) -> np.ndarray:
    """The first `count` tensor polynomials at `points` (n_points, dims) in [-1, 1]:
    shape (n_points, count). Chebyshev products span the same space as the
    reference's monomials x^alpha (the index set is downward closed) but are far
    better conditioned, and the DPP depends only on the span."""
    dims = points.shape[1]
    indices = graded_multi_indices(count, dims)
    features = np.ones((points.shape[0], count))
    for c in range(dims):
        vander = chebyshev.chebvander(points[:, c], int(indices[:, c].max()))
        features *= vander[:, indices[:, c]]
    return features


def sample_projection_dpp(basis: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw of the projection DPP with kernel ``basis @ basis.T``.

    Parameters
    ----------
    basis : array of shape (n_points, rank) with orthonormal columns.

    Returns
    -------
    int array of shape (rank,): distinct points in pick order. The chain rule: each
    pick has probability proportional to the point's squared distance from the
    span of the points already picked (one uniform per pick, inverse CDF over the
    available points in index order, as dppy's Gram-Schmidt sampler does).
    """
    n_points, rank = basis.shape
    residual = np.einsum("ij,ij->i", basis, basis)
    directions = np.zeros((n_points, rank))
    available = np.ones(n_points, dtype=bool)
    picks = np.empty(rank, dtype=np.int64)
    for step in range(rank):
        weight = np.where(available, np.abs(residual), 0.0)
        cdf = np.cumsum(weight)
        pick = int(np.searchsorted(cdf / cdf[-1], rng.random(), side="right"))
        pick = min(pick, n_points - 1)
        picks[step] = pick
        available[pick] = False
        # Gram-Schmidt: the component of every row along the new pick's residual.
        along = (basis @ basis[pick] - directions[:, :step] @ directions[pick, :step])
        along /= np.sqrt(residual[pick])
        directions[:, step] = along
        residual -= along**2
    return picks


def sample_projection_dpp_blocked(basis: np.ndarray, rng: np.random.Generator, *,
                                  patience: int = BLOCK_PATIENCE) -> np.ndarray:
    """One draw of the same projection DPP as `sample_projection_dpp`, the same in law
    but not draw for draw, without reading `basis` at every pick.

    Each pick still has probability proportional to the point's residual (its squared
    distance from the span of the picks so far), by rejection: a point is proposed in
    proportion to its residual at the start of the block, which can only have shrunk
    since, and accepted with probability (residual now) / (residual then). The
    residual now of one point costs one short product in the rank-dimensional space of
    the basis's coefficients. After `patience` rejections in a row the block ends and
    every residual is brought up to date with one matrix product (n_points x rank x
    picks in the block), so the basis is read once a block instead of once a pick.

    Parameters
    ----------
    basis : array of shape (n_points, rank) with orthonormal columns.
    patience : rejections in a row that end a block (>= 1).

    Returns
    -------
    int array of shape (rank,): distinct points in pick order.
    """
    if patience < 1:
        raise ValueError(f"patience must be >= 1; got {patience}")
    n_points, rank = basis.shape
    residual = np.einsum("ij,ij->i", basis, basis)
    directions = np.zeros((rank, rank))  # row s: the s-th pick's new direction, orthonormal
    taken = np.zeros(n_points, dtype=bool)
    picks = np.empty(rank, dtype=np.int64)
    step = 0
    while step < rank:
        start, rejected = step, 0
        bound = np.where(taken, 0.0, np.maximum(residual, 0.0))
        cdf = np.cumsum(bound)
        while step < rank and rejected < patience:
            point = min(int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right")),
                        n_points - 1)
            along = directions[start:step] @ basis[point]
            now = bound[point] - along @ along
            if taken[point] or rng.random() * bound[point] >= now:
                rejected += 1
                continue
            rejected = 0
            taken[point] = True
            picks[step] = point
            # Gram-Schmidt twice, as one pass loses orthogonality for late picks
            # whose residual is a small part of their norm.
            new = basis[point].copy()
            for _ in range(2):
                new -= directions[:step].T @ (directions[:step] @ new)
            directions[step] = new / np.linalg.norm(new)
            step += 1
        along = basis @ directions[start:step].T
        residual -= np.einsum("ij,ij->i", along, along)
    return picks


@dataclass(frozen=True, eq=False)
class DiversityPoints:
    """Items that survive the tail filter and their rescaled principal components."""

    kept: np.ndarray
    points: np.ndarray


def principal_components(confidence: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Randomized PCA, as the reference runs it, of items x source models: shape
    (n_items, min(4, n_items, n_sources)).

    Parameters
    ----------
    confidence : array of shape (n_sources, n_items).
    """
    from sklearn.decomposition import PCA

    items_by_models = np.asarray(confidence, dtype=np.float64).T
    components = min(min(items_by_models.shape), N_COMPONENTS)
    pca = PCA(n_components=components, svd_solver="randomized",
              random_state=int(rng.integers(2**31 - 1)))
    # Constant data has zero variance: PCA's explained-variance ratio divides by it.
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return pca.fit_transform(items_by_models)


def diversity_points(confidence: np.ndarray, rng: np.random.Generator, *,
                     trim: bool = True) -> DiversityPoints:
    """Principal components of the items (see `principal_components`), items beyond
    the 1% / 99% quantile of any component dropped when `trim`, each component
    rescaled into [-0.99, 0.99] (a constant component becomes 0)."""
    projected = principal_components(confidence, rng)
    keep = np.ones(projected.shape[0], dtype=bool)
    if trim:
        low = np.quantile(projected, TAIL, axis=0)
        high = np.quantile(projected, 1 - TAIL, axis=0)
        keep = np.all((low <= projected) & (projected <= high), axis=1)
    return DiversityPoints(np.flatnonzero(keep), rescale(projected[keep]))


def rescale(points: np.ndarray) -> np.ndarray:
    """Each column mapped affinely onto [-0.99, 0.99]; a constant column becomes 0.

    A column counts as constant when its spread is below 1e-9 of the largest value:
    PCA of identical profiles leaves components of pure rounding noise (1e-30 and
    below), which stretching to the box would turn into arbitrary coordinates.
    """
    if points.shape[0] == 0:
        return points
    low, span = points.min(axis=0), np.ptp(points, axis=0)
    varies = span > CONSTANT_SPREAD * max(1.0, float(np.abs(points).max()))
    safe = np.where(varies, span, 1.0)
    return np.where(varies, SCALE * (2 * (points - low) / safe - 1), 0.0)


@register("diversity")
class Diversity(MethodDefaults):
    """`size` items drawn by the discrete OPE determinantal point process on the
    source models' confidence profiles; plain mean.

    Two documented fallbacks keep "exactly `size` distinct items": when the tail
    filter leaves fewer than `size` items, all items are used for that draw; when
    the points support fewer than `size` independent polynomials (e.g. many
    identical items), the DPP draws as many as they support and the rest are drawn
    uniformly from the remaining items. Each is reported as a note.
    """

    display_name: ClassVar[str] = "Diversity (DPP)"
    libraries: ClassVar[tuple[str, ...]] = ("sklearn.decomposition",)
    colour: ClassVar[str] = "#CC79A7"
    line_style: ClassVar[str] = "-"
    in_paper: ClassVar[bool] = True
    reads_confidence: ClassVar[bool] = True
    min_sources: ClassVar[int] = 1
    blocked: ClassVar[bool] = False  # the blocked sampler (same law, other draws)
    fast_variant: ClassVar[str | None] = "diversity-fast"

    def select(self, pool: SeenPool, size: int, *, rng: np.random.Generator) -> MicroBenchmark:
        prepared = pool.shared("diversity-points", lambda stream: diversity_points(
            pool.confidence, stream))
        notes = []
        kept, points = prepared.kept, prepared.points
        if kept.size < size:
            notes.append("the 1% tail filter left fewer items than the size; used all items")
            every = pool.shared("diversity-points-untrimmed", lambda stream: diversity_points(
                pool.confidence, stream, trim=False))
            kept, points = every.kept, every.points
        basis, rank = _orthonormal_basis(points, size)
        sampler = sample_projection_dpp_blocked if self.blocked else sample_projection_dpp
        chosen = kept[sampler(basis[:, :rank], rng)]
        if rank < size:
            notes.append("the items support fewer polynomials than the size; "
                         "the rest were drawn uniformly")
            rest = np.setdiff1d(np.arange(pool.n_items), chosen)
            chosen = np.concatenate([chosen, rng.choice(rest, size - rank, replace=False)])
        return MicroBenchmark(chosen, notes=tuple(notes))


@register("diversity-fast")
class DiversityFast(Diversity):
    """The same DPP drawn by the blocked sampler (`sample_projection_dpp_blocked`): the
    same distribution of micro-benchmarks, other draws; about 6 to 8 times cheaper to
    draw at 250 to 1,000 items (benchmarks/bench_dpp.py)."""

    display_name: ClassVar[str] = "Diversity (DPP), blocked sampler"
    line_style: ClassVar[str] = "--"
    in_paper: ClassVar[bool] = False
    blocked: ClassVar[bool] = True


def _orthonormal_basis(points: np.ndarray, size: int) -> tuple[np.ndarray, int]:
    """Orthonormal columns spanning the first `size` polynomials at `points`, and the
    dimension of that span (less than `size` when the points cannot tell some
    polynomials apart). The SVD's leading left singular vectors span exactly the
    features' column space, dependent columns or not."""
    features = polynomial_features(points, size)
    left, singular, _ = np.linalg.svd(features, full_matrices=False)
    rank = int(np.sum(singular > RANK_TOLERANCE * max(float(singular.max(initial=0.0)), 1e-300)))
    return left, rank
