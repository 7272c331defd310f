"""A study's parameters, validated once against the data before anything runs."""

from __future__ import annotations

import numbers
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

from mdad.data.matrix import ResponseMatrix
from mdad.errors import ConfigError
from mdad.selection import METHODS, SeenPool, get_method
from mdad.study.design import seen_pool_size

DEFAULT_SIZES = (10, 25, 50, 100, 250, 500, 1000)
# The paper's six methods, the default of `mdad run`.
PAPER_METHODS = ("random", "subtask-equal", "diversity", "confidence-strata", "anchor-points",
                 "tinybenchmarks")
DEFAULT_METHODS = PAPER_METHODS
ALL_TARGETS = "all"  # n_targets: every model that is not a source


def expand_methods(names: tuple[str, ...]) -> tuple[str, ...]:
    """`names` with ``all`` replaced by every registered method, in registry order."""
    if "all" not in names:
        return names
    expanded: list[str] = []
    for name in names:
        for method in (METHODS if name == "all" else [name]):
            if method not in expanded:
                expanded.append(method)
    return tuple(expanded)


@dataclass(frozen=True)
class StudyConfig:
    """Everything that defines a study; with the data's sha256 it reruns it exactly.

    Attributes
    ----------
    methods : selection methods by registry name.
    sizes : micro-benchmark sizes; None means the dataset's or the paper's default
        grid, from which sizes larger than the seen pool are dropped with a notice.
    n_runs, n_targets : runs, and target models drawn per run (ignored when
        `target_models` is given); ``"all"`` makes every model that is not one of the
        largest source set a target.
    sources : numbers of source models; several give the paper's source grid.
    target_models : a fixed list of target model names instead of random draws.
    threshold : agreement probability that defines MDAD, in (0, 1).
    n_resamples : bootstrap resamples for MDAD intervals.
    """

    methods: tuple[str, ...] = DEFAULT_METHODS
    sizes: tuple[int, ...] | None = None
    n_runs: int = 50
    n_targets: int | Literal["all"] = 50
    sources: tuple[int, ...] = (300,)
    target_models: tuple[str, ...] | None = None
    threshold: float = 0.8
    seed: int = 0
    n_resamples: int = 1000

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, eq=False)
class StudyPlan:
    """A validated config resolved against one matrix: the sizes and targets to use,
    and the notices a user should see (dropped sizes, ...).

    `items` and `stream` make a study of one subtask inside a larger matrix: the runs
    draw the whole matrix's design and keep only `items` (so targets, sources and the
    seen/unseen split are the whole study's), and `stream` separates the subtask's
    random draws from those of other subtasks.
    """

    config: StudyConfig
    sizes: tuple[int, ...]
    n_targets: int
    fixed_targets: np.ndarray | None
    notices: tuple[str, ...] = field(default=())
    items: np.ndarray | None = None
    stream: str = ""

    @property
    def n_cells(self) -> int:
        c = self.config
        return c.n_runs * len(c.sources) * len(c.methods) * len(self.sizes)


def _check_positive(value: int, option: str, minimum: int = 1) -> None:
    if value < minimum:
        raise ConfigError(f"{option} must be an integer >= {minimum}; got {value}")


def plan_study(
    matrix: ResponseMatrix,
    config: StudyConfig,
    *,
    default_sizes: tuple[int, ...] = DEFAULT_SIZES,
) -> StudyPlan:
    """Validate `config` against `matrix` and resolve its defaults.

    `default_sizes` is the grid used when ``config.sizes`` is None (a named dataset
    may bring its own, e.g. the paper's 10..200 for GPQA); its sizes larger than the
    seen pool, or than a method can build, are dropped with a notice, while an explicit
    size that large is an error.

    Raises
    ------
    ConfigError
        Naming the option, the rule and the value, e.g. too few models for the
        requested targets and sources (with the largest valid values), a size larger
        than the seen pool, or an unknown method.
    """
    if not config.methods:
        raise ConfigError("--methods must name at least one method")
    methods = [get_method(name) for name in config.methods]
    if len(set(config.methods)) != len(config.methods):
        raise ConfigError(f"--methods lists a method twice: {','.join(config.methods)}")
    _check_positive(config.n_runs, "--runs")
    _check_positive(config.n_resamples, "--resamples")
    if config.seed < 0:
        raise ConfigError(f"--seed must be a non-negative integer; got {config.seed}")
    if not 0.0 < config.threshold < 1.0:
        raise ConfigError(f"--threshold must be in (0, 1); got {config.threshold}")
    if not config.sources:
        raise ConfigError("--sources must give at least one number of source models")
    if len(set(config.sources)) != len(config.sources):
        raise ConfigError(f"--sources lists a count twice: {','.join(map(str, config.sources))}")
    for n in config.sources:
        _check_positive(n, "--sources")

    fixed = None
    n_sources = max(config.sources)
    n_targets = config.n_targets
    if config.target_models is not None:
        fixed = matrix.model_index(list(config.target_models), what="--target-models: model")
        n_targets = fixed.size
    elif n_targets == ALL_TARGETS:
        n_targets = matrix.n_models - n_sources
    if not isinstance(n_targets, numbers.Integral) or isinstance(n_targets, bool):
        raise ConfigError(f"--targets must be an integer or 'all'; got {n_targets!r}")
    n_targets = int(n_targets)
    if n_targets < 2:
        raise ConfigError(f"--targets must be at least 2 to form pairs; got {n_targets}"
                          + (f" ({matrix.n_models} models - {n_sources} sources)"
                             if config.n_targets == ALL_TARGETS else ""))
    if n_targets + n_sources > matrix.n_models:
        raise ConfigError(_too_few_models(matrix, n_targets, n_sources,
                                          max(1, *(m.min_sources for m in methods))))

    pool_size = seen_pool_size(matrix.subtask_codes)
    notices: list[str] = []
    if config.sizes is None:
        sizes = tuple(s for s in default_sizes if s <= pool_size)
        dropped = [s for s in default_sizes if s > pool_size]
        if dropped:
            notices.append(f"sizes {', '.join(map(str, dropped))} dropped: the seen pool "
                           f"holds {pool_size} items (half of each subtask)")
        if not sizes:
            raise ConfigError(f"the seen pool holds only {pool_size} items; pass --sizes")
    else:
        sizes = tuple(config.sizes)
        if not sizes:
            raise ConfigError("--sizes must give at least one size")
        if len(set(sizes)) != len(sizes):
            raise ConfigError(f"--sizes lists a size twice: {','.join(map(str, sizes))}")
        for size in sizes:
            _check_positive(size, "--sizes")
            if size > pool_size:
                raise ConfigError(
                    f"--sizes {size} is larger than the seen pool of {pool_size} items "
                    f"(half of each subtask of {matrix.source}); use sizes up to {pool_size}"
                )
    # Per-method limits depend only on the seen pool's subtask sizes, the same every run.
    half = np.bincount(matrix.subtask_codes) // 2
    codes = np.repeat(np.arange(half[half > 0].size), half[half > 0])
    shape_only = SeenPool(np.empty((0, codes.size)), np.empty((0, codes.size)), codes)
    for method in methods:
        if min(config.sources) < method.min_sources:
            raise ConfigError(
                f"method {method.name} needs at least {method.min_sources} source models; "
                f"got --sources {min(config.sources)}"
            )
        limit = method.max_size(shape_only)
        too_big = [s for s in sizes if s > limit]
        if too_big and config.sizes is None and len(too_big) < len(sizes):
            sizes = tuple(s for s in sizes if s <= limit)
            notices.append(f"sizes {', '.join(map(str, too_big))} dropped: method "
                           f"{method.name} can build at most {limit} items from this seen pool")
        elif too_big:
            raise ConfigError(
                f"method {method.name} cannot build {too_big[0]} items from this seen pool "
                f"(at most {limit}); lower --sizes or drop the method"
            )
    return StudyPlan(config, sizes, n_targets, fixed, tuple(notices))


def _too_few_models(matrix: ResponseMatrix, n_targets: int, n_sources: int,
                    min_sources: int) -> str:
    """What to ask for when targets and sources need more models than there are; only
    values that can work are suggested."""
    n = matrix.n_models
    text = f"{matrix.source} has {n} models, fewer than {n_targets} targets + {n_sources} sources"
    if n < 2 + min_sources:
        return (f"{text}; a study needs at least {2 + min_sources} models (2 targets and "
                f"{min_sources} source{'s' if min_sources > 1 else ''} for these methods)")
    options = []
    if n - n_targets >= min_sources:
        options.append(f"--sources {n - n_targets} or less with {n_targets} targets")
    if n - n_sources >= 2:
        options.append(f"--targets {n - n_sources} or less with {n_sources} sources")
    if not options:  # n >= 2 + min_sources, so this one works
        options.append(f"--targets 2 --sources {n - 2}")
    return f"{text}; use " + ", or ".join(options)
