"""A study's parameters, validated once against the data before anything runs."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

import numpy as np

from mdad.data.matrix import ResponseMatrix
from mdad.defaults import (
    ALL_TARGETS,
    DEFAULT_SIZES,
    DEFAULT_SOURCES,
    DEFAULT_TARGETS,
    DEFAULT_THRESHOLD,
)
from mdad.errors import ConfigError, check_open_unit, check_whole
from mdad.selection import METHODS, get_method, largest_size, paper_methods
from mdad.study.design import seen_pool_size

# The paper's six methods (their classes say so), the default of `mdad run`.
PAPER_METHODS = paper_methods()
DEFAULT_METHODS = PAPER_METHODS


def expand_methods(names: tuple[str, ...]) -> tuple[str, ...]:
    """`names` with ``all`` replaced by every registered method, in registry order."""
    if isinstance(names, str):
        raise ConfigError(f"methods must be a tuple of method names, e.g. ({names!r},); got "
                          f"the string {names!r}", parameters=("methods",))
    if "all" not in names:
        return names
    expanded: list[str] = []
    for name in names:
        for method in (METHODS if name == "all" else [name]):
            if method not in expanded:
                expanded.append(method)
    return tuple(expanded)


# What each field of a saved config may hold: a tuple of one type, a type, or "all".
_JSON_TYPES = {"methods": "tuple of str", "sizes": "tuple of int or None", "n_runs": "int",
               "n_targets": "int, 'all' or None", "sources": "tuple of int or None",
               "target_models": "tuple of str or None", "threshold": "float",
               "seed": "int", "n_resamples": "int"}


def _of_type(value: object, kind: str) -> bool:
    """Whether a value read from JSON is of `kind` (a value of `_JSON_TYPES`)."""
    if value is None:
        return kind.endswith("or None")
    if kind.startswith("tuple of "):
        item = int if kind.startswith("tuple of int") else str
        return isinstance(value, tuple) and all(
            isinstance(v, item) and not isinstance(v, bool) for v in value)
    if isinstance(value, bool):
        return False
    if kind == "float":
        return isinstance(value, int | float)
    return isinstance(value, int) or (kind.startswith("int, 'all'") and value == "all")


@dataclass(frozen=True)
class StudyConfig:
    """Everything that defines a study; with the data's sha256 it reruns it exactly on
    the same kind of CPU (on another, the IRT-based methods' numbers move within noise:
    docs/explanation/reproduction.md).

    Attributes
    ----------
    methods : selection methods by registry name.
    sizes : micro-benchmark sizes; None means the dataset's or the paper's default
        grid, from which sizes larger than the seen pool are dropped with a notice.
    n_runs, n_targets : runs (repetitions of the protocol), and target models drawn
        per run (ignored when `target_models` is given); ``"all"`` makes every model
        that is not one of the largest source set a target; None means the dataset's
        default, else 50.
    sources : numbers of source models; several give the paper's source grid; None
        means the dataset's default, else 300.
    target_models : a fixed list of target model names instead of random draws.
    threshold : agreement probability that defines MDAD, in (0, 1).
    n_resamples : bootstrap resamples for MDAD intervals.
    """

    methods: tuple[str, ...] = DEFAULT_METHODS
    sizes: tuple[int, ...] | None = None
    n_runs: int = 50
    n_targets: int | Literal["all"] | None = None
    sources: tuple[int, ...] | None = None
    target_models: tuple[str, ...] | None = None
    threshold: float = DEFAULT_THRESHOLD
    seed: int = 0
    n_resamples: int = 1000

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StudyConfig:
        """The config `to_json` wrote; lists become tuples.

        Raises
        ------
        ConfigError
            For data that is not a mapping, a key that is not a parameter, or a value
            of another type than the parameter's, naming it.
        """
        if not isinstance(data, Mapping):
            raise ConfigError(f"a StudyConfig is read from a JSON object; got "
                              f"{type(data).__name__}")
        unknown = sorted(set(data) - set(cls.__dataclass_fields__))
        if unknown:
            raise ConfigError(f"StudyConfig has no parameter {', '.join(map(str, unknown))}; "
                              f"it has {', '.join(cls.__dataclass_fields__)}",
                              parameters=tuple(map(str, unknown)))
        known = dict(data)
        for name in ("methods", "sizes", "sources", "target_models"):
            if isinstance(known.get(name), list):
                known[name] = tuple(known[name])
        for name, value in known.items():
            if not _of_type(value, _JSON_TYPES[name]):
                raise ConfigError(f"StudyConfig {name} must be {_JSON_TYPES[name]}; got "
                                  f"{value!r}", parameters=(name,))
        return cls(**known)


@dataclass(frozen=True)
class StudyDefaults:
    """What a study takes where its config is silent (None): a named dataset's own
    (`of` its spec, e.g. the paper's 10..200 sizes for GPQA), else the paper's."""

    sizes: tuple[int, ...] = DEFAULT_SIZES
    n_targets: int = DEFAULT_TARGETS
    sources: tuple[int, ...] = DEFAULT_SOURCES

    @classmethod
    def of(cls, spec: Any) -> StudyDefaults:
        """The defaults of a dataset with `spec` (a `DatasetSpec`, or None)."""
        if spec is None:
            return cls()
        return cls(sizes=spec.sizes or DEFAULT_SIZES, n_targets=spec.n_targets or DEFAULT_TARGETS,
                   sources=(spec.n_sources,) if spec.n_sources else DEFAULT_SOURCES)

    def apply(self, config: StudyConfig) -> StudyConfig:
        """`config` with its unset target and source counts taken from these (sizes
        stay unset: `plan_study` fits the default grid to the data)."""
        return replace(config,
                       n_targets=self.n_targets if config.n_targets is None else config.n_targets,
                       sources=self.sources if config.sources is None else config.sources)


@dataclass(frozen=True, eq=False)
class StudyPlan:
    """A validated config resolved against one matrix: the sizes and targets to use,
    and the notices a user should see (dropped sizes, ...).

    `sizes` are the study's sizes; a method runs at each of them except those it cannot
    build from the seen pool (`dropped`: method name -> those sizes, dropped from the
    default grid for that method alone; see `sizes_of`). Its cells at a dropped size
    are not computed: NaN in the arrays, no row in the tables.

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
    dropped: Mapping[str, tuple[int, ...]] = field(default_factory=dict)

    def sizes_of(self, method: str) -> tuple[int, ...]:
        """The sizes `method` runs at: `sizes` without those dropped for it."""
        skipped = self.dropped.get(method, ())
        return tuple(size for size in self.sizes if size not in skipped)

    def builds(self, m: int, s: int) -> bool:
        """Whether method `m` runs at size `s` (indices into `config.methods` and
        `sizes`)."""
        return self.sizes[s] not in self.dropped.get(self.config.methods[m], ())

    def built(self) -> np.ndarray:
        """`builds` of every method and size: bool array of shape (n_methods, n_sizes)."""
        return np.array([[self.builds(m, s) for s in range(len(self.sizes))]
                         for m in range(len(self.config.methods))], dtype=bool).reshape(
                             len(self.config.methods), len(self.sizes))

    @property
    def n_cells(self) -> int:
        c = self.config
        return c.n_runs * len(c.sources) * sum(len(self.sizes_of(m)) for m in c.methods)


# Far above any study's needs (the paper: 50 runs, 1,000 resamples); beyond them the
# arrays outgrow a machine's memory and the kernel kills the process without a word.
MAX_RUNS = 100_000
MAX_RESAMPLES = 1_000_000
GROWS = "the memory a study needs grows with it"


def _methods(config: StudyConfig) -> None:
    if isinstance(config.methods, str) or not isinstance(config.methods, tuple | list):
        raise ConfigError(f"methods must be a tuple or list of method names, e.g. "
                          f"('random',); got {config.methods!r}", parameters=("methods",))
    if not config.methods:
        raise ConfigError("methods must name at least one method", parameters=("methods",))
    for name in config.methods:
        try:
            get_method(name)
        except ConfigError as error:  # an unknown name: its error lists the known ones
            # a broken plugin's error is about the plugin, not about the option
            raise ConfigError(f"methods: {error}" if error.parameters else str(error),
                              parameters=("methods",) if error.parameters else ()) from None
    if len(set(config.methods)) != len(config.methods):
        raise ConfigError(f"methods lists a method twice: {','.join(config.methods)}",
                          parameters=("methods",))


def _counts(name: str, values: tuple[int, ...] | None, what: str, each: str) -> None:
    """A list of whole numbers >= 1 (`what`), no `each` twice (None: the default)."""
    if values is None:
        return
    if isinstance(values, str) or not isinstance(values, tuple | list):
        raise ConfigError(f"{name} must be a tuple or list of {what}s, e.g. (10, 25); got "
                          f"{values!r}", parameters=(name,))
    if len(values) == 0:
        raise ConfigError(f"{name} must give at least one {what}", parameters=(name,))
    if len(set(values)) != len(values):
        raise ConfigError(f"{name} lists a {each} twice: "
                          f"{','.join(map(str, values))}", parameters=(name,))
    for value in values:
        check_whole(value, name)


def _n_targets(config: StudyConfig) -> None:
    value = config.n_targets
    if value is None or value == ALL_TARGETS or config.target_models is not None:
        return
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise ConfigError(f"n_targets must be an integer or 'all'; got {value!r}",
                          parameters=("n_targets",))


# The config-only constraints, each parameter's once (as scikit-learn's
# `_parameter_constraints`): what no dataset could make valid. Checked in this order;
# what depends on the data is `_resolve`'s.
PARAMETER_CONSTRAINTS: dict[str, Callable[[StudyConfig], None]] = {
    "methods": _methods,
    "n_runs": lambda c: check_whole(c.n_runs, "n_runs", maximum=MAX_RUNS, why=GROWS),
    "n_resamples": lambda c: check_whole(c.n_resamples, "n_resamples", maximum=MAX_RESAMPLES,
                                         why=GROWS),
    "seed": lambda c: check_whole(c.seed, "seed", minimum=0),
    "threshold": lambda c: check_open_unit(c.threshold, "threshold"),
    "sources": lambda c: _counts("sources", c.sources, "source-model count", "count"),
    "sizes": lambda c: _counts("sizes", c.sizes, "size", "size"),
    "n_targets": _n_targets,
}


def check_config(config: StudyConfig) -> None:
    """Refuse a config that no dataset could make valid (`PARAMETER_CONSTRAINTS`).

    Raises
    ------
    ConfigError
        Naming the parameter, the rule and the value.
    """
    for check in PARAMETER_CONSTRAINTS.values():
        check(config)


def plan_study(
    matrix: ResponseMatrix,
    config: StudyConfig,
    *,
    defaults: StudyDefaults | None = None,
    default_sizes: tuple[int, ...] | None = None,
) -> StudyPlan:
    """Validate `config` (`check_config`), fill what it leaves unset from `defaults`
    (the paper's unless given), and resolve it against `matrix`.

    The default sizes (`defaults.sizes`, or `default_sizes` when given) are used when
    ``config.sizes`` is None; those larger than the seen pool are dropped with a notice,
    and those larger than a method can build are dropped for that method alone (the
    plan's `dropped`), with a notice naming it; an explicit size that large is an
    error. The plan's config holds the resolved values.

    Raises
    ------
    ConfigError
        Naming the parameter, the rule and the value, e.g. too few models for the
        requested targets and sources (with the largest valid values), a size larger
        than the seen pool, or an unknown method.
    """
    defaults = defaults or StudyDefaults()
    if default_sizes is not None:
        _counts("default_sizes", default_sizes, "size", "size")
        defaults = replace(defaults, sizes=tuple(default_sizes))
    check_config(config)
    return _resolve(matrix, defaults.apply(config), defaults.sizes)


def _resolve(matrix: ResponseMatrix, config: StudyConfig,
             default_sizes: tuple[int, ...]) -> StudyPlan:
    """A checked config with its counts set, resolved against `matrix`: its targets,
    its sizes fitted to the seen pool and to each method, and the notices."""
    methods = [get_method(name) for name in config.methods]
    assert config.sources is not None and config.n_targets is not None  # set by defaults
    fixed = None
    n_sources = max(config.sources)
    n_targets = config.n_targets
    if config.target_models is not None:
        fixed = matrix.model_index(list(config.target_models), what="target_models: model",
                                   parameter="target_models")
        n_targets = fixed.size
    elif n_targets == ALL_TARGETS:
        n_targets = matrix.n_models - n_sources
    n_targets = int(n_targets)
    if n_targets < 2 and fixed is not None:
        raise ConfigError(f"target_models lists {n_targets} model; pairs need at least 2",
                          parameters=("target_models",))
    if n_targets < 2:
        raise ConfigError(f"n_targets must be at least 2 to form pairs; got {n_targets}"
                          + (f" ({matrix.n_models} models - {n_sources} sources)"
                             if config.n_targets == ALL_TARGETS else ""),
                          parameters=("n_targets",))
    if n_targets + n_sources > matrix.n_models:
        raise ConfigError(_too_few_models(matrix, n_targets, n_sources,
                                          max(1, *(m.min_sources for m in methods)),
                                          fixed_targets=fixed is not None),
                          parameters=("n_targets", "sources", "target_models"))

    pool_size = seen_pool_size(matrix.subtask_codes)
    if pool_size == 0:
        raise ConfigError(f"{matrix.source} has no subtask of 2 items or more, so its seen "
                          "pool (half of each subtask's items) is empty; a study needs more "
                          "items")
    notices: list[str] = []
    if config.sizes is None:
        sizes = tuple(s for s in default_sizes if s <= pool_size)
        dropped = [s for s in default_sizes if s > pool_size]
        if dropped:
            notices.append(f"sizes {', '.join(map(str, dropped))} dropped: the seen pool "
                           f"holds {pool_size} items (half of each subtask)")
        if not sizes:
            raise ConfigError(f"the seen pool holds only {pool_size} items; pass sizes",
                              parameters=("sizes",))
    else:
        sizes = tuple(config.sizes)
        for size in sizes:
            if size > pool_size:
                raise ConfigError(
                    f"sizes {size} is larger than the seen pool of {pool_size} items "
                    f"(half of each subtask of {matrix.source}); use sizes up to {pool_size}",
                    parameters=("sizes",))
    # Per-method limits depend only on the seen pool's subtask sizes, the same every run.
    half = np.bincount(matrix.subtask_codes) // 2
    dropped: dict[str, tuple[int, ...]] = {}
    limits: dict[str, int] = {}
    for method in methods:
        if min(config.sources) < method.min_sources:
            raise ConfigError(
                f"method {method.name} needs at least {method.min_sources} source models; "
                f"got sources {min(config.sources)}", parameters=("sources",))
        limits[method.name] = limit = largest_size(method.name, half[half > 0])
        too_big = tuple(s for s in sizes if s > limit)
        if too_big and config.sizes is None and len(too_big) < len(sizes):
            dropped[method.name] = too_big  # for this method only
        elif too_big:
            raise ConfigError(
                f"method {method.name} cannot build {too_big[0]} items from this seen pool "
                f"(at most {limit}); lower sizes or drop the method", parameters=("sizes",))
    for name, too_big in dropped.items():
        kept = [m.name for m in methods if not set(too_big) & set(dropped.get(m.name, ()))]
        notices.append(f"sizes {', '.join(map(str, too_big))} dropped for method {name}: it "
                       f"can build at most {limits[name]} items from this seen pool"
                       + (f" ({', '.join(kept)} keep{'s' * (len(kept) == 1)} them)"
                          if kept else ""))
    # a size no method can build is no size of the study
    sizes = tuple(s for s in sizes if any(s not in dropped.get(m.name, ()) for m in methods))
    dropped = {name: kept for name, skipped in dropped.items()
               if (kept := tuple(s for s in skipped if s in sizes))}
    return StudyPlan(config, sizes, n_targets, fixed, tuple(notices), dropped=dropped)


def _too_few_models(matrix: ResponseMatrix, n_targets: int, n_sources: int,
                    min_sources: int, *, fixed_targets: bool = False) -> str:
    """What to ask for when targets and sources need more models than there are; only
    values that can work are suggested (with `fixed_targets`, the targets are the
    target_models list: fewer sources, or a shorter list)."""
    n = matrix.n_models
    text = f"{matrix.source} has {n} models, fewer than {n_targets} targets + {n_sources} sources"
    if n < 2 + min_sources:
        return (f"{text}; a study needs at least {2 + min_sources} models (2 targets and "
                f"{min_sources} source{'s' if min_sources > 1 else ''} for these methods)")
    options = []
    if n - n_targets >= min_sources:
        options.append(f"sources {n - n_targets} or less with {n_targets} targets")
    if n - n_sources >= 2:
        options.append(f"target_models of {n - n_sources} or fewer with {n_sources} sources"
                       if fixed_targets else
                       f"n_targets {n - n_sources} or less with {n_sources} sources")
    if not options:  # n >= 2 + min_sources, so this one works
        options.append(f"n_targets 2 and sources {n - 2}")
    return f"{text}; use " + ", or ".join(options)
