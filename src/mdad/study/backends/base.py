"""The protocol every backend follows."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from mdad.study.records import CellOutput, RunJob, RunOutput, Study

if TYPE_CHECKING:
    from mdad.study.checkpoint import StudyCheckpoint

CellSink = Callable[[int, CellOutput], None]  # (study index, cell)
RunSink = Callable[[RunJob, RunOutput], None]


class Backend(Protocol):
    """Computes runs of several studies.

    `execute` computes every job and returns when all are done. It saves each newly
    finished cell in `checkpoint` (when given) before it reports it to `on_cell`,
    and reports each finished run to `on_run`; both callbacks are called in the
    calling thread. An interrupt (KeyboardInterrupt, or any exception from a
    callback) stops every worker before `execute` re-raises it.
    """

    name: str
    n_workers: int

    def execute(self, studies: list[Study], jobs: list[RunJob], *,
                checkpoint: StudyCheckpoint | None, on_cell: CellSink,
                on_run: RunSink) -> None: ...
