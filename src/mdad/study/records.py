"""What a study's computation produces: one cell, one run, and the whole study.

A *cell* is one method at one size and source count in one run; a *run* is one of the
study's repetitions (``n_runs``), with its own targets, sources and seen/unseen split.
Arrays are indexed ``[method, size, source count, ...]``, and a cell's key is
``(method, size, source count)`` indices in the plan's order, the same way round.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from mdad.data.matrix import ResponseMatrix
from mdad.study.config import StudyPlan

CellKey = tuple[int, int, int]  # (method, size, source count) indices
ProgressCallback = Callable[[int, int], None]  # (cells done, cells in all)
Study = tuple[ResponseMatrix, StudyPlan]


@dataclass(frozen=True, eq=False)
class RunAccuracies:
    """Reference accuracies of one run's targets, each of shape (n_targets,)."""

    seen: np.ndarray
    unseen: np.ndarray
    full: np.ndarray


# (distinct items the targets answered, share of targets that answered the most-used one)
NO_EXPOSURE = (float("nan"), float("nan"))


@dataclass(frozen=True, eq=False)
class CellOutput:
    """One finished cell of run `run`: `estimates` of shape (n_targets,), the
    `seconds` it took, the fallbacks (`notes`) the method reported, and the items'
    `exposure` (see `mdad.selection.ItemExposure`) as (distinct items, top share)."""

    run: int
    key: CellKey
    estimates: np.ndarray
    seconds: float
    notes: tuple[str, ...] = ()
    exposure: tuple[float, float] = NO_EXPOSURE


@dataclass(frozen=True, eq=False)
class RunOutput:
    """Everything one run contributes to a `StudyResult`.

    Attributes
    ----------
    estimates : float array of shape (n_methods, n_sizes, n_source_counts, n_targets)
    accuracies : the targets' reference accuracies.
    targets : int array of shape (n_targets,)
    method_seconds : float array of shape (n_methods,), time spent selecting and
        estimating (work shared between methods counts for the first that needs it).
    notes : count of each (method, size, note) the methods reported.
    exposure : float array of shape (n_methods, n_sizes, n_source_counts, 2), each
        cell's (distinct items, top share).
    """

    run: int
    estimates: np.ndarray
    accuracies: RunAccuracies
    targets: np.ndarray
    method_seconds: np.ndarray
    notes: Counter[tuple[str, int, str]]
    exposure: np.ndarray


@dataclass(frozen=True, eq=False)
class RunJob:
    """Run `run` of study number `study`, with the cells already `finished` (by key)."""

    study: int
    run: int
    finished: dict[CellKey, CellOutput] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class StudyResult:
    """Estimates of every cell and the reference accuracies they are judged against.

    Attributes
    ----------
    estimates : float array of shape (n_methods, n_sizes, n_source_counts, n_runs, n_targets)
        (NaN at a size the plan drops for a method: `StudyPlan.dropped`)
    seen, unseen, full : float arrays of shape (n_runs, n_targets)
        Targets' accuracy on the run's seen pool, unseen pool and all items.
    targets : int array of shape (n_runs, n_targets)
        Model indices of each run's targets.
    method_seconds : float array of shape (n_methods,)
        Compute time per method, summed over runs and processes.
    notices : fallbacks the methods reported, one line each, with how often.
    exposure : float array of shape (n_methods, n_sizes, n_source_counts, n_runs, 2),
        each cell's (distinct items the targets answered, share of the targets that
        answered the most-used item); None when unknown (NaN in the tables).
    """

    plan: StudyPlan
    model_names: np.ndarray
    estimates: np.ndarray
    seen: np.ndarray
    unseen: np.ndarray
    full: np.ndarray
    targets: np.ndarray
    method_seconds: np.ndarray = field(default_factory=lambda: np.zeros(0))
    notices: tuple[str, ...] = ()
    exposure: np.ndarray | None = None

    def to_frame(self):  # -> pandas.DataFrame
        """One row per run, method, size, source count and target model (none for a
        size the plan drops for a method)."""
        import pandas as pd

        config = self.plan.config
        shape = self.estimates.shape
        grid = np.indices(shape).reshape(len(shape), -1)
        built = self.plan.built()[grid[0], grid[1]]
        method, size, count, run, target = grid[:, built]
        return pd.DataFrame({
            "run": run.astype(np.int32),
            "method": pd.Categorical.from_codes(method, categories=list(config.methods)),
            "size": np.asarray(self.plan.sizes)[size].astype(np.int32),
            "n_sources": np.asarray(config.sources)[count].astype(np.int32),
            "model": self.model_names[self.targets[run, target]],
            "estimate": self.estimates.ravel()[built],
            "seen_accuracy": self.seen[run, target],
            "unseen_accuracy": self.unseen[run, target],
            "full_accuracy": self.full[run, target],
        })


class StudyCollector:
    """Assembles one study's `StudyResult` from its runs, in any order."""

    def __init__(self, matrix: ResponseMatrix, plan: StudyPlan) -> None:
        config = plan.config
        n_runs, n_targets, n_methods = config.n_runs, plan.n_targets, len(config.methods)
        self.matrix, self.plan = matrix, plan
        self.estimates = np.empty((n_methods, len(plan.sizes), len(config.sources), n_runs,
                                   n_targets))
        self.seen, self.unseen, self.full = (np.empty((n_runs, n_targets)) for _ in range(3))
        self.targets = np.empty((n_runs, n_targets), dtype=np.int64)
        self.exposure = np.full((*self.estimates.shape[:4], 2), np.nan)
        self.method_seconds = np.zeros(n_methods)
        self.notes: Counter[tuple[str, int, str]] = Counter()

    def add(self, out: RunOutput) -> None:
        self.estimates[:, :, :, out.run] = out.estimates
        self.exposure[:, :, :, out.run] = out.exposure
        self.seen[out.run], self.unseen[out.run] = out.accuracies.seen, out.accuracies.unseen
        self.full[out.run], self.targets[out.run] = out.accuracies.full, out.targets
        self.method_seconds += out.method_seconds
        self.notes.update(out.notes)

    def result(self) -> StudyResult:
        config = self.plan.config
        cells = config.n_runs * len(config.sources)  # per method and size
        notices = tuple(f"{method} at size {size}, {count} of {cells} cells: {note}"
                        for (method, size, note), count in sorted(self.notes.items()))
        return StudyResult(self.plan, self.matrix.model_names, self.estimates, self.seen,
                           self.unseen, self.full, self.targets, self.method_seconds, notices,
                           self.exposure)
