"""What a selection method sees, what it returns, and what the project knows about it.

A method is one class (see `MethodDefaults`): how it selects, and as class attributes
its display name, colour and line style, whether it is in the paper, whether it reads
confidences, whether its MDAD is analytic, the largest size it can build, and the
estimator types it returns, each of which saves itself to and loads itself from a
micro-benchmark file.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeVar

import numpy as np

from mdad import streams
from mdad.errors import ConfigError, DataError, check_type
from mdad.grouping import checked_codes

T = TypeVar("T")
# How a method's MDAD is analytic (see MethodDefaults.analytic_mdad).
ANALYTIC_MDAD_KINDS = ("uniform", "stratified")


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
    seed: np.random.SeedSequence = field(default_factory=lambda: streams.stream(0))
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        # shapes only: a study builds many pools, and their values come checked
        correctness, confidence = np.shape(self.correctness), np.shape(self.confidence)
        if len(correctness) != 2 or confidence != correctness:
            raise DataError(f"SeenPool: correctness and confidence must be one (n_sources, "
                            f"n_items) shape; got {correctness} and {confidence}",
                            parameters=("correctness", "confidence"))
        if not (correctness[0] and correctness[1]):
            raise DataError(f"SeenPool: correctness must hold at least one source model and "
                            f"one item; got {correctness}", parameters=("correctness",))
        # stored as arrays: a list given here would fail later, far from its cause
        for name in ("correctness", "confidence"):
            values = np.asarray(getattr(self, name))
            if values.dtype.kind not in "buif":  # the dtype only: the values come checked
                raise DataError(f"SeenPool: {name} must be scores in [0, 1]; got an array of "
                                f"{values.dtype}", parameters=(name,))
            object.__setattr__(self, name, values)
        if isinstance(self.seed, numbers.Integral) and not isinstance(self.seed, bool):
            object.__setattr__(self, "seed", streams.stream(int(self.seed)))
        check_type(self.seed, np.random.SeedSequence, "seed",
                   "an integer >= 0 or a numpy SeedSequence (mdad.streams.stream(seed))")
        object.__setattr__(self, "subtask_codes", checked_codes(self.subtask_codes,
                                                                correctness[1]))

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
            self._cache[key] = compute(streams.rng(self.seed, key))
        return self._cache[key]  # type: ignore[no-any-return]

    def subtask_sizes(self) -> np.ndarray:
        """Number of seen items in each subtask, shape (n_subtasks,)."""
        return np.bincount(self.subtask_codes)


@dataclass(frozen=True)
class ItemExposure:
    """Which items the targets of one cell saw.

    Attributes
    ----------
    distinct_items : items that at least one target answered (for a static
        micro-benchmark, its distinct items).
    top_share : share of the targets that answered the most-used item, in [0, 1]
        (1 for a static micro-benchmark: every target answers every item; NaN
        without targets).
    """

    distinct_items: int
    top_share: float


def weighted_sum(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``values @ weights`` with the same bits on every CPU: `values` (n, k) times
    `weights` (k,), each product rounded once, then summed over k by numpy's pairwise
    sum, whose order is fixed. Shape (n,), float64. (BLAS's matrix-vector product sums
    in an order that depends on the CPU, and its last bits can break a tie between two
    models' estimates one way on one machine and the other way on another.)"""
    return (np.asarray(values, dtype=np.float64) * weights).sum(axis=1)


@dataclass(frozen=True, eq=False)
class MicroBenchmark:
    """A chosen subset of the seen pool and its linear estimator.

    The estimated full score of a model is the plain mean of its scores on `items`
    or, when `weights` is given, their weighted sum (`weighted_sum`). Subclasses with other
    estimators override `estimate`, set their own `kind`, and save and load their
    parameters with `to_file` and `from_file`.

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
    kind : the estimator's name in a micro-benchmark file ("linear" here).
    """

    kind: ClassVar[str] = "linear"

    items: np.ndarray
    weights: np.ndarray | None = None
    uses_confidence: bool = False
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        items = np.asarray(self.items)
        if items.dtype.kind == "f" and items.size and np.all(np.mod(items, 1) == 0):
            items = items.astype(np.int64)  # whole numbers, as a float array holds them
        if (items.ndim != 1 or not items.size or items.dtype.kind not in "iu"
                or items.min() < 0 or np.unique(items).size != items.size):
            raise DataError(f"items must be a non-empty 1-D array of distinct item indices "
                            f">= 0; got {_shown(self.items)}", parameters=("items",))
        object.__setattr__(self, "items", items)
        if self.weights is not None:
            # the dtype kept: a method's float32 weights give its own sums, bit for bit
            weights = np.asarray(self.weights)
            if (weights.dtype.kind not in "iuf" or weights.shape != items.shape
                    or not np.isfinite(weights).all()):
                raise DataError(f"weights must be {items.size} finite numbers, one per item; "
                                f"got shape {weights.shape}", parameters=("weights",))
            object.__setattr__(self, "weights", weights)

    @classmethod
    def plain_mean(cls, items: np.ndarray) -> MicroBenchmark:
        return cls(np.asarray(items))

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
        if (not isinstance(scores, np.ndarray) or scores.ndim != 2
                or scores.shape[1] <= self.items.max()):
            raise DataError(f"scores must be a 2-D (models, seen items) array with at least "
                            f"{self.items.max() + 1} items; got {_shown(scores)}",
                            parameters=("scores",))
        chosen = scores[:, self.items].astype(np.float64)
        if self.weights is None:
            return chosen.sum(axis=1) / self.items.shape[0]
        return weighted_sum(chosen, self.weights)

    def estimate_with_exposure(self, scores: np.ndarray) -> tuple[np.ndarray, ItemExposure]:
        """`estimate(scores)` and which items the models answered: all of `items`,
        for every model (adaptive estimators choose per model and override this)."""
        shared = float("nan") if scores.shape[0] == 0 else 1.0
        return self.estimate(scores), ItemExposure(int(self.items.size), shared)  # distinct

    def weights_json(self) -> list[float] | None:
        return None if self.weights is None else [float(w) for w in self.weights]

    def to_file(self) -> dict[str, Any]:
        """The estimator as a micro-benchmark file stores it (JSON values), with
        positions relative to `items`; it always has ``"kind": self.kind``."""
        return {"kind": "linear", "weights": self.weights_json(),
                "confidence": self.uses_confidence}

    @classmethod
    def from_file(cls, data: dict[str, Any], size: int) -> MicroBenchmark:
        """The estimator saved by `to_file`, reading a model's scores on the file's
        `size` items in their order (its items are 0..size-1).

        Raises
        ------
        KeyError, TypeError, ValueError
            For a damaged entry (the caller reports it as a DataError).
        """
        weights = data.get("weights")
        return cls(np.arange(size), None if weights is None else np.asarray(weights, float),
                   uses_confidence=bool(data["confidence"]))


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
    """The base of every selection method: what the project knows about a method,
    with defaults a method overrides as class attributes.

    Attributes
    ----------
    name : the CLI name, set by `register`.
    display_name : the name in figures and reports (default: `name`).
    colour, line_style : its matplotlib colour and line style in every figure
        (Okabe-Ito colours for the built-in methods; one family shares a colour).
    in_paper : one of the paper's six methods (the default of `mdad run`).
    reads_confidence : it reads the source models' gold-option confidences.
    min_sources : the fewest source models it can select with.
    analytic_mdad : "uniform" when its MDAD is that of uniform random sampling,
        "stratified" when that of sampling size / k items from each of k subtasks,
        None when only a study can measure it.
    estimators : the MicroBenchmark types its `select` returns, each saved to and
        loaded from a micro-benchmark file by its `kind` (see `save_estimator`).
    libraries : modules with native thread pools (BLAS, OpenMP) it imports lazily;
        they are loaded before its work runs with one thread (see `one_thread`),
        which can limit only the libraries already loaded.
    static : it chooses one subset for every model (False for adaptive tests, which
        choose per model: `mdad select` cannot write them as a fixed file).
    releases_gil : its fits spend their time in compiled code that releases Python's
        lock (numba's nogil kernels, BLAS): `mdad select` runs its cross-validation
        folds in threads of one process, on every core, rather than in a spawned worker
        that must import the libraries again.
    libraries_after_fit : of `libraries`, those a fit that releases the lock needs
        only after its compiled part and limits in its own thread (OpenMP's limit is
        per thread: one set in the main thread never reaches the fits' threads):
        `mdad select` imports them while the fits run.
    fast_variant : the registered name of its documented faster approximation, whose
        numbers stay within run-to-run noise of its own (tests/test_approximations.py),
        or None; ``mdad run --fast`` uses it. Not inherited: a subclass is another
        method, which declares its own.
    ships_fold_draw : `mdad select` writes the micro-benchmark of cross-validation fold
        1 (selected on the models outside that fold) rather than one selected on every
        model, so that the held-out pairs that calibrate its interval are of its own
        kind. For estimators that read a fitted model's item parameters (p-IRT, gp-IRT):
        fitted on every model, they read strong models higher than the folds' fits
        (benchmarks/belt_mismatch.py), and the interval would sit too high.
    """

    name: ClassVar[str]
    display_name: ClassVar[str] = ""
    colour: ClassVar[str] = "#555555"
    line_style: ClassVar[str] = ":"
    in_paper: ClassVar[bool] = False
    reads_confidence: ClassVar[bool] = False
    min_sources: ClassVar[int] = 0
    analytic_mdad: ClassVar[str | None] = None
    estimators: ClassVar[tuple[type[MicroBenchmark], ...]] = (MicroBenchmark,)
    libraries: ClassVar[tuple[str, ...]] = ()
    static: ClassVar[bool] = True
    releases_gil: ClassVar[bool] = False
    libraries_after_fit: ClassVar[tuple[str, ...]] = ()
    fast_variant: ClassVar[str | None] = None
    ships_fold_draw: ClassVar[bool] = False

    def select(self, pool: SeenPool, size: int, *, rng: np.random.Generator) -> MicroBenchmark:
        """Choose `size` distinct items of `pool`; draw every random number from `rng`."""
        raise NotImplementedError(f"{type(self).__name__} must define select")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # every method's select, a plugin's too, refuses what it cannot build from
        super().__init_subclass__(**kwargs)
        if "select" in vars(cls):
            cls.select = _checked_select(vars(cls)["select"])  # type: ignore[method-assign]

    @classmethod
    def simple_random(cls, subtask_sizes: np.ndarray) -> bool:
        """Whether each of its samples from a pool of these subtask sizes (shape
        (n_subtasks,)) is a simple random sample, uniform without replacement, read
        by its plain mean: then `estimate`'s interval is exact and needs no
        cross-validation. True for uniform random sampling (`analytic_mdad`)."""
        return cls.analytic_mdad == "uniform"

    @classmethod
    def fit_memory(cls, n_models: int, n_items: int) -> int:
        """Bytes one selection holds at its peak on a pool of that shape, where that is
        large enough to limit how many run at once (default 0: never)."""
        return 0

    @classmethod
    def fits_release_gil(cls, n_models: int, n_items: int) -> bool:
        """Whether its fits on a pool of `n_models` x `n_items` spend their time in code
        that releases Python's lock, so that `mdad select` runs them in threads
        (default: `releases_gil`, whatever the shape)."""
        return cls.releases_gil

    @classmethod
    def warm_up(cls) -> None:
        """Load the compiled code its fits run (default: none), before `mdad select`
        starts them in threads: loading holds Python's lock, which the imports beside
        the fits (`libraries_after_fit`) contend for."""

    @classmethod
    def max_size_for(cls, subtask_sizes: np.ndarray) -> int:
        """The largest micro-benchmark this method can build from a pool whose
        subtasks hold `subtask_sizes` items (int array of shape (n_subtasks,))."""
        return int(np.sum(subtask_sizes))

    def max_size(self, pool: SeenPool) -> int:
        """The largest micro-benchmark this method can build from `pool`."""
        return self.max_size_for(pool.subtask_sizes())

    @classmethod
    def label(cls) -> str:
        """The display name with the CLI name, e.g. "Anchor Points (anchor-points)"."""
        shown = cls.display_name or cls.name
        return shown if shown == cls.name else f"{shown} ({cls.name})"

    @classmethod
    def save_estimator(cls, micro: MicroBenchmark) -> dict[str, Any]:
        """`micro`'s estimator as the micro-benchmark file stores it.

        Raises
        ------
        ConfigError
            When `micro`'s type is not one of this method's `estimators`: saving it as
            another kind would give wrong estimates later, silently.
        """
        if type(micro) not in cls.estimators:
            known = ", ".join(t.__name__ for t in cls.estimators)
            raise ConfigError(f"method {cls.name} returned a {type(micro).__name__}, which it "
                              f"cannot save (its estimators: {known}); add the type to "
                              f"{cls.__name__}.estimators with its own kind, to_file and "
                              "from_file")
        return {**micro.to_file(), "kind": type(micro).kind}

    @classmethod
    def load_estimator(cls, data: dict[str, Any], size: int,
                       where: object = "the micro-benchmark file") -> MicroBenchmark:
        """The estimator `save_estimator` wrote, over the file's `size` items.

        Raises
        ------
        DataError
            For a kind this method does not save, or a damaged entry.
        """
        kind = data.get("kind") if isinstance(data, dict) else None
        by_kind = {t.kind: t for t in cls.estimators}
        if kind not in by_kind:
            raise DataError(f"{where}: unknown estimator kind {kind!r} for method "
                            f"{cls.name} (it saves {', '.join(by_kind)}); select again with "
                            "`mdad select`")
        try:
            return by_kind[kind].from_file(data, size)
        except DataError as exc:  # its own checks, naming no option of the user's
            raise DataError(f"{where}: the {kind} estimator cannot be read ({exc}); select "
                            "again with `mdad select`") from None
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise DataError(f"{where}: the {kind} estimator cannot be read ({exc!r}); select "
                            "again with `mdad select`") from None


def _checked_select(select: Callable[..., MicroBenchmark]) -> Callable[..., MicroBenchmark]:
    """`select`, refusing a pool that is not a SeenPool, a size outside
    1..`max_size`, and an rng that is not a Generator, each naming the parameter."""
    import functools

    @functools.wraps(select)
    def checked(self: MethodDefaults, pool: SeenPool, size: int, *,
                rng: np.random.Generator) -> MicroBenchmark:
        if not isinstance(pool, SeenPool):
            raise ConfigError(f"pool must be a SeenPool; got {type(pool).__name__}",
                              parameters=("pool",))
        limit = type(self).max_size_for(pool.subtask_sizes())  # as the plans compute it
        if not isinstance(size, numbers.Integral) or isinstance(size, bool) or not (
                1 <= size <= limit):
            raise ConfigError(f"size must be a whole number in 1..{limit}, what "
                              f"{getattr(self, 'name', type(self).__name__)} "
                              f"can build from this pool; got {size!r}", parameters=("size",))
        if not isinstance(rng, np.random.Generator):
            raise ConfigError(f"rng must be a numpy.random.Generator; got {type(rng).__name__}",
                              parameters=("rng",))
        try:
            return select(self, pool, size, rng=rng)
        except DataError as exc:
            if not set(exc.parameters) & {"items", "weights"}:
                raise
            # the method's own MicroBenchmark, not an option of the user's
            raise DataError(f"method {getattr(self, 'name', type(self).__name__)} built an "
                            f"invalid micro-benchmark: {exc}") from None

    return checked


def _shown(value: object) -> str:
    """A short description of `value` for an error: an array's shape and dtype, else
    its type."""
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    return f"a {type(value).__name__}"
