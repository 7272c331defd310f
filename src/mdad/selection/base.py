"""What a selection method sees, and what it returns."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeVar

import numpy as np

T = TypeVar("T")


@dataclass(frozen=True, eq=False)
class SeenPool:
    """The source models' data on the seen pool: all a method may look at.

    Attributes
    ----------
    correctness : array of shape (n_sources, n_items)
        Source models' scores in [0, 1] on the seen items.
    confidence : array of shape (n_sources, n_items)
        Source models' gold-option confidence; correctness where none is known.
    subtask_codes : array of shape (n_items,)
        Integer subtask of each seen item, 0..n_subtasks-1.
    seed : SeedSequence of the pool's shared work (see `shared`).
    """

    correctness: np.ndarray
    confidence: np.ndarray
    subtask_codes: np.ndarray
    seed: np.random.SeedSequence = field(default_factory=lambda: np.random.SeedSequence(0))
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def n_items(self) -> int:
        return int(self.subtask_codes.shape[0])

    @property
    def n_sources(self) -> int:
        return int(self.correctness.shape[0])

    def shared(self, key: str, compute: Callable[[np.random.Generator], T]) -> T:
        """Work that every size (and method) on this pool shares, such as an IRT fit,
        computed on first use. Its random draws come from a stream of the pool's seed
        named by `key`, so the result is the same whichever cell asks first."""
        if key not in self._cache:
            stream = np.random.SeedSequence(
                self.seed.entropy,
                spawn_key=(*self.seed.spawn_key, zlib.crc32(key.encode("utf-8"))))
            self._cache[key] = compute(np.random.default_rng(stream))
        return self._cache[key]  # type: ignore[no-any-return]

    def subtask_sizes(self) -> np.ndarray:
        """Number of seen items in each subtask, shape (n_subtasks,)."""
        return np.bincount(self.subtask_codes)


@dataclass(frozen=True, eq=False)
class MicroBenchmark:
    """A chosen subset of the seen pool and its linear estimator.

    The estimated full score of a model is the plain mean of its scores on `items`
    or, when `weights` is given, ``scores[items] @ weights``. Subclasses with other
    estimators override `estimate`.

    Attributes
    ----------
    items : int array of shape (n,)
        Distinct indices into the seen pool.
    weights : float array of shape (n,), optional
        Weight of each item in the estimate; None for the plain mean.
    uses_confidence : bool
        The estimate reads models' gold-option confidence, not their correctness.
    notes : tuple of str
        Documented fallbacks the method took for this draw, for the user to see.
    """

    items: np.ndarray
    weights: np.ndarray | None = None
    uses_confidence: bool = False
    notes: tuple[str, ...] = ()

    @classmethod
    def plain_mean(cls, items: np.ndarray) -> MicroBenchmark:
        return cls(np.asarray(items, dtype=np.int64))

    def estimate(self, scores: np.ndarray) -> np.ndarray:
        """Estimated accuracy of each model.

        Parameters
        ----------
        scores : array of shape (n_models, n_seen_items), any real dtype
            The models' scores on the whole seen pool (uint8 correctness or float
            confidences); only `items` are read, then converted to float64.

        Returns
        -------
        array of shape (n_models,), fractions in [0, 1] for the plain mean.
        Two models with equal scores on the items get bit-identical plain means
        (a sum, then one division), so ties on the micro-benchmark stay ties.
        """
        chosen = scores[:, self.items].astype(np.float64)
        if self.weights is None:
            return chosen.sum(axis=1) / self.items.shape[0]
        return chosen @ self.weights


class SelectionMethod(Protocol):
    """A way to choose `size` items from a seen pool using source models only."""

    name: ClassVar[str]
    reads_confidence: ClassVar[bool]
    min_sources: ClassVar[int]

    def max_size(self, pool: SeenPool) -> int:
        """The largest micro-benchmark this method can build from `pool`."""
        ...

    def select(self, pool: SeenPool, size: int, *, rng: np.random.Generator) -> MicroBenchmark:
        """Choose `size` distinct items of `pool`; draw every random number from `rng`."""
        ...


class MethodDefaults:
    """Defaults a selection method inherits: reads correctness only, needs no source
    model, and can build any size up to the pool's."""

    name: ClassVar[str]
    reads_confidence: ClassVar[bool] = False
    min_sources: ClassVar[int] = 0

    def max_size(self, pool: SeenPool) -> int:
        return pool.n_items
