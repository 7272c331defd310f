"""Runs computed here, one after another."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mdad.study.backends.base import BackendDefaults, CellSink, RunSink
from mdad.study.cells import compute_run
from mdad.study.records import CellOutput, RunJob, Study

if TYPE_CHECKING:
    from mdad.study.checkpoint import StudyCheckpoint


class InProcessBackend(BackendDefaults):
    """Every run in this process: no start-up cost, one core."""

    name = "in-process"
    n_workers = 1

    def execute(self, studies: list[Study], jobs: list[RunJob], *,
                checkpoint: StudyCheckpoint | None, on_cell: CellSink,
                on_run: RunSink) -> None:
        for job in jobs:
            run_here(studies, job, checkpoint=checkpoint, on_cell=on_cell, on_run=on_run)


def run_here(studies: list[Study], job: RunJob, *, checkpoint: StudyCheckpoint | None,
             on_cell: CellSink, on_run: RunSink) -> None:
    """Compute `job` in this process, saving and reporting each cell as it finishes."""
    matrix, plan = studies[job.study]

    def finished(cell: CellOutput) -> None:
        if checkpoint is not None:
            checkpoint.save_cell(job.study, cell)
        on_cell(job.study, cell)

    on_run(job, compute_run(matrix, plan, job.run, on_cell=finished, finished=job.finished))
