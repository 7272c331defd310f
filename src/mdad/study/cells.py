"""One run of a study, alone: its design, each cell's seen pool and seeds, and
`compute_run`, the unit of work every backend runs (`mdad.study.backends`)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import replace

import numpy as np

from mdad.data.matrix import ResponseMatrix
from mdad.errors import ConfigError, check_whole
from mdad.selection import MicroBenchmark, SeenPool, get_method
from mdad.selection.threads import one_thread
from mdad.study.config import StudyPlan
from mdad.study.design import RunDesign, draw_run
from mdad.study.records import (
    CellKey,
    CellOutput,
    RunAccuracies,
    RunOutput,
)
from mdad.study.seeds import cell_rng, pool_seed


def _accuracies(correctness: np.ndarray, design: RunDesign) -> RunAccuracies:
    rows = correctness[design.targets]
    return RunAccuracies(
        seen=rows[:, design.seen].mean(axis=1, dtype=np.float64),
        unseen=rows[:, design.unseen].mean(axis=1, dtype=np.float64),
        full=rows[:, np.concatenate([design.seen, design.unseen])].mean(axis=1,
                                                                       dtype=np.float64),
    )


def seen_pool(matrix: ResponseMatrix, design: RunDesign, n_sources: int, *,
              seed: int, stream: str = "") -> SeenPool:
    """The source models' view of run `design`'s seen pool."""
    sources = design.sources(n_sources)
    _, codes = np.unique(matrix.subtask_codes[design.seen], return_inverse=True)
    return SeenPool(
        correctness=matrix.scores(sources, design.seen),
        confidence=matrix.gold_confidence(sources, design.seen),
        subtask_codes=codes,
        seed=pool_seed(seed, design.run, n_sources, stream),
    )


def draw_design(matrix: ResponseMatrix, plan: StudyPlan, run: int) -> RunDesign:
    """Run `run`'s design; for a plan limited to some `items`, the whole matrix's
    design restricted to them."""
    design = draw_run(
        matrix.n_models, matrix.subtask_codes, seed=plan.config.seed, run=run,
        n_targets=plan.n_targets, fixed_targets=plan.fixed_targets,
    )
    if plan.items is None:
        return design
    return replace(design, seen=design.seen[np.isin(design.seen, plan.items)],
                   unseen=design.unseen[np.isin(design.unseen, plan.items)])


def _cell_rng(plan: StudyPlan, run: int, method: str, size: int,
              n_sources: int) -> np.random.Generator:
    label = f"{plan.stream}/{method}" if plan.stream else method
    return cell_rng(plan.config.seed, run, label, size, n_sources)


def select_cell(matrix: ResponseMatrix, plan: StudyPlan, *, run: int, method: str, size: int,
                n_sources: int) -> tuple[RunDesign, MicroBenchmark]:
    """The design and micro-benchmark of one cell, recomputed alone from its seeds.

    Raises
    ------
    ConfigError
        For a run, method, size or source count that is not one of the plan's.
    """
    check_whole(run, "run", minimum=0, maximum=plan.config.n_runs - 1)
    for value, among, name in ((method, plan.config.methods, "method"),
                               (size, plan.sizes, "size"),
                               (n_sources, plan.config.sources, "n_sources")):
        if value not in (among or ()):
            raise ConfigError(f"{name} must be one of the plan's: "
                              f"{', '.join(map(str, among or ()))}; got {value!r}",
                              parameters=(name,))
    if size not in plan.sizes_of(method):
        raise ConfigError(f"size must be one of the plan's sizes for method {method}: "
                          f"{', '.join(map(str, plan.sizes_of(method)))} (it cannot build "
                          f"{size} items from this seen pool); got {size!r}",
                          parameters=("size",))
    design = draw_design(matrix, plan, run)
    pool = seen_pool(matrix, design, n_sources, seed=plan.config.seed, stream=plan.stream)
    rng = _cell_rng(plan, run, method, size, n_sources)
    selector = get_method(method)
    with one_thread([selector]):
        return design, selector.select(pool, size, rng=rng)


def run_cell(matrix: ResponseMatrix, plan: StudyPlan, *, run: int, method: str, size: int,
             n_sources: int) -> np.ndarray:
    """Estimates of one cell, recomputed alone: shape (n_targets,), in target order."""
    design, micro = select_cell(matrix, plan, run=run, method=method, size=size,
                                n_sources=n_sources)
    with one_thread([get_method(method)]):
        return micro.estimate(_target_scores(matrix, design, micro.uses_confidence))


def _target_scores(matrix: ResponseMatrix, design: RunDesign, confidence: bool) -> np.ndarray:
    """Targets' scores on the seen pool: gold-option confidence (float32) or correctness
    as stored (uint8 when compact: estimators convert only the items they read)."""
    if confidence:
        return matrix.gold_confidence(design.targets, design.seen)
    return matrix.correctness[design.targets][:, design.seen]


def compute_run(matrix: ResponseMatrix, plan: StudyPlan, run: int, *,
                on_cell: Callable[[CellOutput], None] | None = None,
                finished: Mapping[CellKey, CellOutput] | None = None
                ) -> RunOutput:
    """All cells of run `run`, from its own seeds.

    `on_cell` is called with each cell as it finishes (to save or count it); cells
    in `finished` (by key) are taken as they are, not recomputed. A size the plan
    drops for a method (`StudyPlan.dropped`) is no cell: its estimates and exposure
    are NaN.
    """
    config = plan.config
    methods = [get_method(name) for name in config.methods]
    design = draw_design(matrix, plan, run)
    finished = finished or {}
    scores: dict[bool, np.ndarray] = {}  # built when a cell first needs them
    estimates = np.full((len(methods), len(plan.sizes), len(config.sources), plan.n_targets),
                        np.nan)
    exposure = np.full((*estimates.shape[:3], 2), np.nan)
    seconds = np.zeros(len(methods))
    notes: Counter[tuple[str, int, str]] = Counter()
    with one_thread(methods):
        for c, n_sources in enumerate(config.sources):
            pool = seen_pool(matrix, design, n_sources, seed=config.seed, stream=plan.stream)
            for m, method in enumerate(methods):
                for s, size in enumerate(plan.sizes):
                    if not plan.builds(m, s):
                        continue
                    cell = finished.get((m, s, c))
                    if cell is None:
                        start = time.perf_counter()
                        rng = _cell_rng(plan, run, method.name, size, n_sources)
                        micro = method.select(pool, size, rng=rng)
                        flag = micro.uses_confidence
                        if flag not in scores:
                            scores[flag] = _target_scores(matrix, design, flag)
                        estimated, seen = micro.estimate_with_exposure(scores[flag])
                        cell = CellOutput(run, (m, s, c), estimated, time.perf_counter() - start,
                                          micro.notes, (seen.distinct_items, seen.top_share))
                        if on_cell is not None:
                            on_cell(cell)
                    estimates[m, s, c] = cell.estimates
                    exposure[m, s, c] = cell.exposure
                    seconds[m] += cell.seconds
                    notes.update((method.name, size, note) for note in cell.notes)
    return RunOutput(run, estimates, _accuracies(matrix.correctness, design), design.targets,
                     seconds, notes, exposure)
