"""Run the paper's study protocol: runs x source counts x methods x sizes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mdad.data.matrix import ResponseMatrix
from mdad.selection import MicroBenchmark, SeenPool, get_method
from mdad.study.config import StudyPlan
from mdad.study.design import RunDesign, draw_run
from mdad.study.seeds import cell_rng, pool_seed

ProgressCallback = Callable[[int, int], None]


@dataclass(frozen=True, eq=False)
class RunAccuracies:
    """Reference accuracies of one run's targets, each of shape (n_targets,)."""

    seen: np.ndarray
    unseen: np.ndarray
    full: np.ndarray


@dataclass(frozen=True, eq=False)
class StudyResult:
    """Estimates of every cell and the reference accuracies they are judged against.

    Attributes
    ----------
    estimates : float array of shape (n_methods, n_sizes, n_source_counts, n_runs, n_targets)
    seen, unseen, full : float arrays of shape (n_runs, n_targets)
        Targets' accuracy on the run's seen pool, unseen pool and all items.
    targets : int array of shape (n_runs, n_targets)
        Model indices of each run's targets.
    """

    plan: StudyPlan
    model_names: np.ndarray
    estimates: np.ndarray
    seen: np.ndarray
    unseen: np.ndarray
    full: np.ndarray
    targets: np.ndarray

    def to_frame(self) -> pd.DataFrame:
        """One row per run, method, size, source count and target model."""
        config = self.plan.config
        shape = self.estimates.shape
        grid = np.indices(shape).reshape(len(shape), -1)
        method, size, count, run, target = grid
        return pd.DataFrame({
            "run": run.astype(np.int32),
            "method": pd.Categorical.from_codes(method, categories=list(config.methods)),
            "size": np.asarray(self.plan.sizes)[size].astype(np.int32),
            "n_sources": np.asarray(config.sources)[count].astype(np.int32),
            "model": self.model_names[self.targets[run, target]],
            "estimate": self.estimates.ravel(),
            "seen_accuracy": self.seen[run, target],
            "unseen_accuracy": self.unseen[run, target],
            "full_accuracy": self.full[run, target],
        })


def _accuracies(correctness: np.ndarray, design: RunDesign) -> RunAccuracies:
    rows = correctness[design.targets]
    return RunAccuracies(
        seen=rows[:, design.seen].mean(axis=1, dtype=np.float64),
        unseen=rows[:, design.unseen].mean(axis=1, dtype=np.float64),
        full=rows.mean(axis=1, dtype=np.float64),
    )


def seen_pool(matrix: ResponseMatrix, design: RunDesign, n_sources: int, *,
              seed: int) -> SeenPool:
    """The source models' view of run `design`'s seen pool."""
    sources = design.sources(n_sources)
    _, codes = np.unique(matrix.subtask_codes[design.seen], return_inverse=True)
    return SeenPool(
        correctness=matrix.correctness[sources][:, design.seen],
        confidence=matrix.gold_confidence()[sources][:, design.seen],
        subtask_codes=codes,
        seed=pool_seed(seed, design.run, n_sources),
    )


def draw_design(matrix: ResponseMatrix, plan: StudyPlan, run: int) -> RunDesign:
    return draw_run(
        matrix.n_models, matrix.subtask_codes, seed=plan.config.seed, run=run,
        n_targets=plan.n_targets, fixed_targets=plan.fixed_targets,
    )


def select_cell(matrix: ResponseMatrix, plan: StudyPlan, *, run: int, method: str, size: int,
                n_sources: int) -> tuple[RunDesign, MicroBenchmark]:
    """The design and micro-benchmark of one cell, recomputed alone from its seeds."""
    design = draw_design(matrix, plan, run)
    pool = seen_pool(matrix, design, n_sources, seed=plan.config.seed)
    rng = cell_rng(plan.config.seed, run, method, size, n_sources)
    return design, get_method(method).select(pool, size, rng=rng)


def run_cell(matrix: ResponseMatrix, plan: StudyPlan, *, run: int, method: str, size: int,
             n_sources: int) -> np.ndarray:
    """Estimates of one cell, recomputed alone: shape (n_targets,), in target order."""
    design, micro = select_cell(matrix, plan, run=run, method=method, size=size,
                                n_sources=n_sources)
    return micro.estimate(_target_scores(matrix, design, micro.uses_confidence))


def _target_scores(matrix: ResponseMatrix, design: RunDesign, confidence: bool) -> np.ndarray:
    """Targets' scores on the seen pool: gold-option confidence or correctness."""
    values = matrix.gold_confidence() if confidence else matrix.correctness
    return values[design.targets][:, design.seen]


def run_study(matrix: ResponseMatrix, plan: StudyPlan, *,
              progress: ProgressCallback | None = None) -> StudyResult:
    """Run every cell of `plan` on a complete `matrix` (see `resolve_missing`).

    Parameters
    ----------
    matrix : ResponseMatrix without missing cells.
    plan : the validated study (see `plan_study`).
    progress : called as ``progress(cells_done, cells_total)`` after each cell.
    """
    config = plan.config
    methods = [get_method(name) for name in config.methods]
    n_runs, n_targets = config.n_runs, plan.n_targets
    estimates = np.empty((len(methods), len(plan.sizes), len(config.sources), n_runs, n_targets))
    seen, unseen, full = (np.empty((n_runs, n_targets)) for _ in range(3))
    targets = np.empty((n_runs, n_targets), dtype=np.int64)
    done = 0
    for run in range(n_runs):
        design = draw_design(matrix, plan, run)
        accuracies = _accuracies(matrix.correctness, design)
        seen[run], unseen[run], full[run] = accuracies.seen, accuracies.unseen, accuracies.full
        targets[run] = design.targets
        scores = {flag: _target_scores(matrix, design, flag) for flag in (False, True)}
        for c, n_sources in enumerate(config.sources):
            pool = seen_pool(matrix, design, n_sources, seed=config.seed)
            for m, method in enumerate(methods):
                for s, size in enumerate(plan.sizes):
                    rng = cell_rng(config.seed, run, method.name, size, n_sources)
                    micro = method.select(pool, size, rng=rng)
                    estimates[m, s, c, run] = micro.estimate(scores[micro.uses_confidence])
                    done += 1
                    if progress is not None:
                        progress(done, plan.n_cells)
    return StudyResult(plan, matrix.model_names, estimates, seen, unseen, full, targets)
