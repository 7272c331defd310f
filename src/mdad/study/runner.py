"""Compute a study's cells: every method at every size and source count, in every run.

`run_studies` feeds the runs of one or more studies to a backend, which computes each
with `mdad.study.cells.compute_run`, and assembles their results.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from mdad.data.matrix import ResponseMatrix
from mdad.errors import DataError
from mdad.study.backends import Backend, InProcessBackend
from mdad.study.cells import compute_run
from mdad.study.config import StudyPlan
from mdad.study.records import (
    CellOutput,
    ProgressCallback,
    RunJob,
    RunOutput,
    Study,
    StudyCollector,
    StudyResult,
)

if TYPE_CHECKING:
    from mdad.study.checkpoint import StudyCheckpoint


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

    Notes
    -----
    The numbers depend on neither backend nor checkpoint.

    Raises
    ------
    DataError
        For a plan made for more models than its matrix has (plan it on this one).
    """
    for matrix, plan in studies:
        needed = plan.n_targets + max(plan.config.sources or (0,))
        if needed > matrix.n_models:
            raise DataError(f"the plan needs {needed} models ({plan.n_targets} targets and "
                            f"{max(plan.config.sources or (0,))} sources); the matrix has "
                            f"{matrix.n_models}: make the plan on it (plan_study)",
                            parameters=("plan",))
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
        # a backend may report a run before all of its cells (a worker's cells travel
        # through a queue that can lag its result): count the rest now, one at a time,
        # so that progress still moves one event per cell
        for _ in range(per_run[job.study] - counted.pop((job.study, job.run), 0)):
            cells_done(1)

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
