"""tinyBenchmarks (Polo et al. 2024): IRT item embeddings, k-means anchors, and the
anchor, p-IRT and gp-IRT estimators."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from mdad import streams
from mdad.irt import MultidimensionalIrt, item_curve, map_ability
from mdad.irt.variational import EPOCHS, fit_variational
from mdad.selection.base import MethodDefaults, MicroBenchmark, SeenPool, weighted_sum
from mdad.selection.clustering import reference_kmeans
from mdad.selection.registry import register

# gp-IRT assumes an anchor estimate has a quarter of random sampling's variance.
ANCHOR_VARIANCE_FACTOR = 4.0
# Every 5th source model validates the gp-IRT weight (tinyBenchmarks' experiments).
VALIDATION_STRIDE = 5
# From this many models x items, the MAP fit's compiled likelihood pass, which releases
# Python's lock, is most of its time: two threads ran two fits on 336 x 4,000 items
# 1.9 times as fast as one (2026-12-06). On GPQA (420 x 448) Python's part counts.
MAP_THREAD_CELLS = 1_000_000


def fit_irt(correctness: np.ndarray, dims: int, rng: np.random.Generator,
            start: MultidimensionalIrt | None = None) -> MultidimensionalIrt:
    """The multidimensional 2PL fit of models x items `correctness`, optionally
    started from the item parameters of another fit."""
    model = MultidimensionalIrt(dims, random_state=int(rng.integers(2**31 - 1)))
    if start is None:
        return model.fit(correctness)
    return model.fit(correctness, initial_items=(start.discrimination_, start.difficulty_))


def nearest_distinct(distance: np.ndarray) -> np.ndarray:
    """For each row (a centroid), the closest column (an item) not already taken by an
    earlier row, shape (n_rows,). Equals the plain argmin unless two centroids share
    their nearest item, which would leave fewer than n distinct items."""
    chosen = np.argmin(distance, axis=1)
    if np.unique(chosen).size == chosen.size:
        return chosen
    taken = np.zeros(distance.shape[1], dtype=bool)
    for row in range(distance.shape[0]):
        candidates = np.where(taken, np.inf, distance[row])
        chosen[row] = np.argmin(candidates)
        taken[chosen[row]] = True
    return chosen


def irt_anchors(discrimination: np.ndarray, difficulty: np.ndarray,
                size: int) -> tuple[np.ndarray, np.ndarray]:
    """k-means (k-means++, seed 42) on items embedded as (discrimination, difficulty).

    Returns
    -------
    anchors : int array of shape (size,), the distinct items nearest each centroid.
    weights : float array of shape (size,), the share of items in each cluster.
    """
    embedding = np.column_stack([discrimination, difficulty])
    # Uniform sample weights, as the reference passes them: sklearn's k-means is not
    # bit-for-bit the same without them.
    uniform = np.full(embedding.shape[0], 1.0 / embedding.shape[0])
    kmeans = reference_kmeans(embedding, size, sample_weight=uniform)
    centroids = kmeans.cluster_centers_
    distance = np.empty((size, embedding.shape[0]))
    # 32 centroids at a time: the same floats as all at once, with a 20 MB temporary
    # instead of 600 MB at 1,000 anchors of 7,000 items (8 s of page faults)
    for start in range(0, size, 32):
        block = centroids[start:start + 32, None, :] - embedding[None, :, :]
        distance[start:start + 32] = (block**2).sum(axis=2)
    anchors = nearest_distinct(distance)
    weights = np.bincount(kmeans.labels_, minlength=size) / embedding.shape[0]
    return anchors.astype(np.int64), weights


@dataclass(frozen=True, eq=False, kw_only=True)
class IrtBenchmark(MicroBenchmark):
    """Anchors with tinyBenchmarks' IRT-based estimators.

    p-IRT: with the model's ability fitted (MAP) on its anchor responses,
    ``lam * mean(anchor scores) + (1 - lam) * mean(P(correct) on the other items)``
    with ``lam = n / N``. gp-IRT: ``gp_weight * (anchor-weighted estimate)
    + (1 - gp_weight) * p-IRT``; a `gp_weight` of 0 gives p-IRT itself.

    Attributes
    ----------
    discrimination : array of shape (N, D); difficulty : array of shape (N,)
        Item parameters of every item of the seen pool.
    gp_weight : float in [0, 1].
    """

    kind: ClassVar[str] = "irt"

    discrimination: np.ndarray
    difficulty: np.ndarray
    gp_weight: float = 0.0

    def estimate(self, scores: np.ndarray) -> np.ndarray:
        anchor_scores = np.asarray(scores[:, self.items], dtype=np.float64)
        n_items = self.difficulty.shape[0]
        ability = map_ability(anchor_scores, self.discrimination[self.items],
                              self.difficulty[self.items])
        others = np.setdiff1d(np.arange(n_items), self.items)
        share = self.items.size / n_items
        predicted = item_curve(ability, self.discrimination[others], self.difficulty[others])
        irt_part = predicted.mean(axis=1) if others.size else np.zeros(ability.shape[0])
        pirt = share * anchor_scores.mean(axis=1) + (1 - share) * irt_part
        if self.gp_weight == 0.0:
            return pirt
        return (self.gp_weight * weighted_sum(anchor_scores, self.weights)
                + (1 - self.gp_weight) * pirt)

    def to_file(self) -> dict[str, Any]:
        """The anchors' IRT parameters and, apart, the other items' (so scores on the
        anchors suffice to estimate)."""
        others = np.setdiff1d(np.arange(self.difficulty.size), self.items)
        return {"kind": self.kind, "weights": self.weights_json(), "gp_weight": self.gp_weight,
                "discrimination": self.discrimination[self.items].tolist(),
                "difficulty": self.difficulty[self.items].tolist(),
                "others_discrimination": self.discrimination[others].tolist(),
                "others_difficulty": self.difficulty[others].tolist()}

    @classmethod
    def from_file(cls, data: dict[str, Any], size: int) -> IrtBenchmark:
        discrimination = np.asarray(data["discrimination"])
        weights = data.get("weights")
        return SavedIrtBenchmark(
            np.arange(size), None if weights is None else np.asarray(weights),
            discrimination=discrimination, difficulty=np.asarray(data["difficulty"]),
            gp_weight=float(data["gp_weight"]),
            others=np.asarray(data["others_discrimination"]).reshape(
                -1, discrimination.shape[1]),
            others_difficulty=np.asarray(data["others_difficulty"]))


@dataclass(frozen=True, eq=False, kw_only=True)
class SavedIrtBenchmark(IrtBenchmark):
    """p-IRT / gp-IRT as a micro-benchmark file keeps it: the anchors' parameters
    (`discrimination`, `difficulty`, anchors at positions `items`) and the other
    items' (`others`, `others_difficulty`), so scores on the anchors suffice."""

    others: np.ndarray
    others_difficulty: np.ndarray

    def estimate(self, scores: np.ndarray) -> np.ndarray:
        full = IrtBenchmark(
            np.arange(self.items.size), self.weights,
            discrimination=np.vstack([self.discrimination, self.others]),
            difficulty=np.concatenate([self.difficulty, self.others_difficulty]),
            gp_weight=self.gp_weight)
        padded = np.zeros((scores.shape[0], full.difficulty.size))
        padded[:, : self.items.size] = np.asarray(scores)[:, self.items]
        return full.estimate(padded)


def gp_irt_weight(bias: float, variance: float, size: int) -> float:
    """The weight of the anchor estimate in gp-IRT: ``b**2 / (b**2 + v / (4 n))``.

    Parameters
    ----------
    bias : b, p-IRT's mean absolute error on held-out sources (see `validation_bias`).
    variance : v, the mean over source models of the variance of their item scores
        (the variance of one randomly drawn item's score).
    size : n, the number of anchors. Returns 1 when b = v = 0.
    """
    if bias == 0.0 and variance == 0.0:
        return 1.0
    return bias**2 / (bias**2 + variance / (ANCHOR_VARIANCE_FACTOR * size))


def validation_bias(correctness: np.ndarray, dims: int, rng: np.random.Generator,
                    start: MultidimensionalIrt | None = None) -> float:
    """p-IRT's bias on held-out sources, from an (n_sources, N) `correctness`: every
    5th source is held out, an IRT model is fitted on the rest, each held-out
    source's ability is fitted on the even-numbered items, and the bias is the mean
    |predicted - observed| accuracy on the odd-numbered ones. `start`, a fit on all
    sources, only speeds up the held-out fit."""
    n_sources, n_items = correctness.shape
    held_out = np.arange(0, n_sources, VALIDATION_STRIDE)
    train = np.setdiff1d(np.arange(n_sources), held_out)
    model = fit_irt(correctness[train], dims, rng, start)
    observed, predicted = np.arange(0, n_items, 2), np.arange(1, n_items, 2)
    ability = model.estimate_ability(correctness[held_out][:, observed], observed)
    curve = item_curve(ability, model.discrimination_[predicted], model.difficulty_[predicted])
    gap = curve.mean(axis=1) - correctness[held_out][:, predicted].mean(axis=1)
    return float(np.abs(gap).mean())


class _TinyBenchmarksBase(MethodDefaults):
    """Shared by the tinyBenchmarks estimators: one IRT fit per seen pool, on the source
    models' correctness (never confidences), and the same anchors for one fit.

    `irt_fit` is "variational" for the reference's fit (SVI of the py-irt fork's model,
    `mdad.irt.variational`) or "map" (`MultidimensionalIrt`, about 15 times cheaper).
    """

    min_sources: ClassVar[int] = 2  # an IRT fit needs two models
    libraries: ClassVar[tuple[str, ...]] = ("sklearn.cluster", "scipy.optimize",
                                            "scipy.special")
    line_style: ClassVar[str] = "-"
    estimators: ClassVar[tuple[type[MicroBenchmark], ...]] = (MicroBenchmark, IrtBenchmark)
    irt_fit: ClassVar[str] = "map"
    epochs: ClassVar[int] = EPOCHS  # of the variational fit

    def __init__(self, *, dims: int = 10) -> None:
        self.dims = dims

    @classmethod
    def fits_release_gil(cls, n_models: int, n_items: int) -> bool:
        """The variational fit always; the MAP fit from `MAP_THREAD_CELLS` cells."""
        return cls.releases_gil or n_models * n_items >= MAP_THREAD_CELLS

    @classmethod
    def warm_up(cls) -> None:
        """Load the MAP fit's compiled pass (numba's disk cache)."""
        fit_irt(np.eye(2), 1, streams.rng(0))

    @property
    def _fit_suffix(self) -> str:
        """What tells this fit's shared results apart from the other fits' in a pool."""
        if self.irt_fit != "variational":
            return ""
        return "-variational" + ("" if self.epochs == EPOCHS else f"-{self.epochs}")

    @classmethod
    def max_size_for(cls, subtask_sizes: np.ndarray) -> int:
        """The whole pool, or nothing below two items (an IRT fit needs two)."""
        n_items = int(np.sum(subtask_sizes))
        return n_items if n_items >= 2 else 0

    def _fit(self, pool: SeenPool) -> MultidimensionalIrt:
        if self.irt_fit == "variational":
            return pool.shared(
                f"irt-2pl-d{self.dims}{self._fit_suffix}",
                lambda rng: fit_variational(pool.correctness, self.dims, rng=rng,
                                            epochs=self.epochs))
        return pool.shared(f"irt-2pl-d{self.dims}",
                           lambda rng: fit_irt(pool.correctness, self.dims, rng))

    def _anchors(self, pool: SeenPool, size: int) -> tuple[MultidimensionalIrt, np.ndarray,
                                                           np.ndarray]:
        model = self._fit(pool)
        anchors, weights = pool.shared(
            f"irt-2pl-d{self.dims}{self._fit_suffix}-anchors-{size}",
            lambda _: irt_anchors(model.discrimination_, model.difficulty_, size))
        return model, anchors, weights


@register("tinybenchmarks")
class TinyBenchmarks(_TinyBenchmarksBase):
    """tinyBenchmarks as the paper ran it: the reference's variational IRT fit, and the
    weighted mean of a model's correctness on the anchors, each weighing its cluster's
    share of items."""

    display_name: ClassVar[str] = "tinyBenchmarks"
    colour: ClassVar[str] = "#D55E00"
    in_paper: ClassVar[bool] = True
    irt_fit: ClassVar[str] = "variational"
    releases_gil: ClassVar[bool] = True  # the variational fit's kernels (mdad.irt._fused)
    # numba's products call scipy's BLAS (scipy.linalg): limited before the fits start
    libraries: ClassVar[tuple[str, ...]] = ("scipy.linalg", "sklearn.cluster",
                                            "scipy.optimize", "scipy.special")
    libraries_after_fit: ClassVar[tuple[str, ...]] = ("sklearn.cluster", "scipy.optimize")

    @classmethod
    def warm_up(cls) -> None:
        """Load the variational fit's kernels for 0/1 responses (numba's disk cache)."""
        fit_variational(np.eye(2), 1, rng=streams.rng(0), epochs=1)
    fast_variant: ClassVar[str | None] = "tinybenchmarks-fast"

    def select(self, pool: SeenPool, size: int, *, rng: np.random.Generator) -> MicroBenchmark:
        _, anchors, weights = self._anchors(pool, size)
        return MicroBenchmark(anchors, weights)


@register("tinybenchmarks-map")
class TinyBenchmarksMap(TinyBenchmarks):
    """The same estimator on anchors from the MAP fit of `mdad.irt` (about 15 times cheaper;
    its error on GPQA is 3 to 18% above the reference's)."""

    display_name: ClassVar[str] = "tinyBenchmarks, MAP fit"
    line_style: ClassVar[str] = "--"
    in_paper: ClassVar[bool] = False
    irt_fit: ClassVar[str] = "map"
    releases_gil: ClassVar[bool] = False  # scipy's L-BFGS, driven from Python
    libraries_after_fit: ClassVar[tuple[str, ...]] = ()
    warm_up = classmethod(_TinyBenchmarksBase.warm_up.__func__)  # the MAP fit's, not the parent's


@register("tinybenchmarks-fast")
class TinyBenchmarksFast(TinyBenchmarks):
    """The same estimator on anchors from the variational fit stopped at 1,000 epochs
    instead of 2,000: half the time. Shorter fits move the numbers beyond the noise of
    the fit's own randomness (benchmarks/approximation_noise.py)."""

    display_name: ClassVar[str] = "tinyBenchmarks, 1,000-epoch fit"
    line_style: ClassVar[str] = ":"
    in_paper: ClassVar[bool] = False
    epochs: ClassVar[int] = 1000


@register("tinybenchmarks-pirt")
class TinyBenchmarksPirt(_TinyBenchmarksBase):
    """The same anchors with the p-IRT estimator."""

    display_name: ClassVar[str] = "tinyBenchmarks p-IRT"
    colour: ClassVar[str] = "#009E73"
    ships_fold_draw: ClassVar[bool] = True

    def select(self, pool: SeenPool, size: int, *, rng: np.random.Generator) -> MicroBenchmark:
        model, anchors, weights = self._anchors(pool, size)
        return IrtBenchmark(anchors, weights, discrimination=model.discrimination_,
                            difficulty=model.difficulty_)


@register("tinybenchmarks-gpirt")
class TinyBenchmarksGpirt(_TinyBenchmarksBase):
    """The same anchors with the gp-IRT estimator, its weight set on the sources."""

    display_name: ClassVar[str] = "tinyBenchmarks gp-IRT"
    colour: ClassVar[str] = "#56B4E9"
    ships_fold_draw: ClassVar[bool] = True

    min_sources: ClassVar[int] = 3  # two left for the IRT fit beside the held-out one

    def select(self, pool: SeenPool, size: int, *, rng: np.random.Generator) -> MicroBenchmark:
        model, anchors, weights = self._anchors(pool, size)
        validation = pool.shared(
            f"irt-2pl-d{self.dims}-validation",
            lambda stream: validation_bias(pool.correctness, self.dims, stream, model))
        variance = float(np.var(pool.correctness, axis=1).mean())
        return IrtBenchmark(anchors, weights, discrimination=model.discrimination_,
                            difficulty=model.difficulty_,
                            gp_weight=gp_irt_weight(validation, variance, size))

