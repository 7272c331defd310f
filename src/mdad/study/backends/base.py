"""The protocol every backend follows."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from mdad.study.records import CellOutput, RunJob, RunOutput, Study

if TYPE_CHECKING:
    from mdad.study.checkpoint import StudyCheckpoint

CellSink = Callable[[int, CellOutput], None]  # (study index, cell)
RunSink = Callable[[RunJob, RunOutput], None]


@runtime_checkable
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

    @property
    def used(self) -> str:
        """The backend the last `execute` computed on: `name`, but for "auto" the one
        it chose ("in-process" or "processes")."""
        ...

    def check(self) -> None:
        """Refuse, before any work and in one line (`ConfigError`), a backend that
        cannot run here, such as an unreachable scheduler."""
        ...

    def execute(self, studies: list[Study], jobs: list[RunJob], *,
                checkpoint: StudyCheckpoint | None, on_cell: CellSink,
                on_run: RunSink) -> None: ...


class BackendDefaults:
    """What most backends do for `Backend.used` and `Backend.check`: they compute
    where their name says, and can always start. A backend of one's own can extend it
    for both."""

    name: str

    @property
    def used(self) -> str:
        return self.name

    def check(self) -> None:
        return None
