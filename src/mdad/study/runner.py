"""Compute a study's cells: every method at every size and source count, in every run.

`compute_run` is the unit of work every backend runs; `run_studies` feeds the runs of
one or more studies to a backend and assembles their results.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from mdad.data.matrix import ResponseMatrix
from mdad.selection import MicroBenchmark, SeenPool, get_method
from mdad.selection.threads import one_thread
from mdad.study.config import StudyPlan
from mdad.study.design import RunDesign, draw_run
from mdad.study.records import (
    CellKey,
    CellOutput,
    ProgressCallback,
    RunAccuracies,
    RunJob,
    RunOutput,
    Study,
    StudyCollector,
    StudyResult,
)
from mdad.study.seeds import cell_rng, pool_seed

if TYPE_CHECKING:
    from mdad.study.backends import Backend
    from mdad.study.checkpoint import StudyCheckpoint


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
    """The design and micro-benchmark of one cell, recomputed alone from its seeds."""
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
    in `finished` (by key) are taken as they are, not recomputed.
    """
    config = plan.config
    methods = [get_method(name) for name in config.methods]
    design = draw_design(matrix, plan, run)
    finished = finished or {}
    scores: dict[bool, np.ndarray] = {}  # built when a cell first needs them
    estimates = np.empty((len(methods), len(plan.sizes), len(config.sources), plan.n_targets))
    exposure = np.empty((*estimates.shape[:3], 2))
    seconds = np.zeros(len(methods))
    notes: Counter[tuple[str, int, str]] = Counter()
    with one_thread(methods):
        for c, n_sources in enumerate(config.sources):
            pool = seen_pool(matrix, design, n_sources, seed=config.seed, stream=plan.stream)
            for m, method in enumerate(methods):
                for s, size in enumerate(plan.sizes):
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


def run_studies(studies: list[Study], *, backend: Backend | None = None,
                progress: ProgressCallback | None = None,
                checkpoint: StudyCheckpoint | None = None) -> list[StudyResult]:
    """Run every cell of several studies (e.g. one per subtask), sharing the backend.

    Parameters
    ----------
    studies : (matrix, plan) pairs; each matrix without missing cells (see
        `resolve_missing`), each plan validated against it (see `plan_study`).
    backend : where the runs are computed (see `mdad.study.backends`); default here,
        in this process.
    progress : called as ``progress(cells_done, cells_total)`` in this thread, over all
        studies: first once with the cells found in the checkpoint, then as cells
        finish.
    checkpoint : where each finished cell is saved as it completes; cells and runs
        already saved there are loaded, not recomputed.
    The numbers depend on neither backend nor checkpoint.
    """
    from mdad.study.backends import InProcessBackend

    collectors = [StudyCollector(matrix, plan) for matrix, plan in studies]
    per_run = [plan.n_cells // plan.config.n_runs for _, plan in studies]
    total = sum(plan.n_cells for _, plan in studies)
    done = 0
    counted: Counter[tuple[int, int]] = Counter()  # cells reported, per unfinished run
    finished_runs: set[tuple[int, int]] = set()

    loading = True

    def cells_done(count: int) -> None:
        nonlocal done
        done += count
        if progress is not None and count and not loading:
            progress(done, total)

    def on_cell(study: int, cell: CellOutput) -> None:
        if (study, cell.run) not in finished_runs:  # a late report is counted already
            counted[(study, cell.run)] += 1
            cells_done(1)

    def on_run(job: RunJob, out: RunOutput) -> None:
        collectors[job.study].add(out)
        finished_runs.add((job.study, job.run))
        if checkpoint is not None:
            checkpoint.save(job.study, out)
        # a backend may report a run before all of its cells: count the rest now
        cells_done(per_run[job.study] - counted.pop((job.study, job.run), 0))

    jobs: list[RunJob] = []
    for index, (matrix, plan) in enumerate(studies):
        for run in range(plan.config.n_runs):
            saved = checkpoint.load(index, run) if checkpoint is not None else None
            if saved is not None:
                collectors[index].add(saved)
                cells_done(per_run[index])
                continue
            cells = checkpoint.load_cells(index, run) if checkpoint is not None else {}
            counted[(index, run)] = len(cells)
            cells_done(len(cells))
            if len(cells) == per_run[index]:  # every cell saved, the run not yet assembled
                on_run(RunJob(index, run, cells),
                       compute_run(matrix, plan, run, finished=cells))
            else:
                jobs.append(RunJob(index, run, cells))
    loading = False
    if progress is not None:
        progress(done, total)
    (backend or InProcessBackend()).execute(studies, jobs, checkpoint=checkpoint,
                                            on_cell=on_cell, on_run=on_run)
    return [collector.result() for collector in collectors]


def run_study(matrix: ResponseMatrix, plan: StudyPlan, *, backend: Backend | None = None,
              progress: ProgressCallback | None = None,
              checkpoint: StudyCheckpoint | None = None) -> StudyResult:
    """Run every cell of `plan` on a complete `matrix`; see `run_studies`."""
    return run_studies([(matrix, plan)], backend=backend, progress=progress,
                       checkpoint=checkpoint)[0]
