"""The whole study, from a request to a study folder: load, plan, checkpoint, compute,
evaluate, write, and resume after an interruption.

    >>> from mdad.study import StudyConfig, StudyRequest, conduct_study, prepare_study
    >>> request = StudyRequest("gpqa", StudyConfig(methods=("random",), n_runs=10))
    >>> outcome = conduct_study(prepare_study(request), "runs/gpqa-random")  # doctest: +SKIP

The library never prints: notices come back in the outcome, and progress goes to a
callback.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mdad.errors import ConfigError, DataError, MdadError
from mdad.safe_io import remove_stale_staging
from mdad.study.checkpoint import StudyCheckpoint, checkpoint_dir
from mdad.study.config import StudyDefaults, StudyPlan, plan_study
from mdad.study.folder import check_out_dir, study_config_json, write_study_folder
from mdad.study.request import StudyRequest

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from mdad.data.registry import Dataset
    from mdad.study.backends import Backend
    from mdad.study.evaluation import StudyTables
    from mdad.study.subtasks import SubtaskStudy


@dataclass(frozen=True)
class StudyProgress:
    """Where a study stands, passed to the progress callback.

    `stage` is "cells" while cells are computed (`cells_done` of `cells_total`, of
    which `cells_resumed` were found in the checkpoint) and "metrics" once they are
    all done; `elapsed_seconds` counts from the start of the cells.
    """

    stage: str
    cells_done: int
    cells_total: int
    cells_resumed: int
    elapsed_seconds: float

    @property
    def remaining_seconds(self) -> float | None:
        """Time left for the cells at the rate of those computed so far; None before
        the first."""
        computed = self.cells_done - self.cells_resumed
        if self.stage != "cells" or computed <= 0:
            return None
        return self.elapsed_seconds / computed * (self.cells_total - self.cells_done)


ProgressReporter = Callable[[StudyProgress], None]


@dataclass(frozen=True, eq=False)
class PreparedStudy:
    """A request resolved against its data: the dataset, the validated plan(s), the
    number of cells, and the notices a user should see before the work starts.

    `plan` is the whole-benchmark plan; a per-subtask study has one plan per subtask
    in `subtasks` (then `plan` is the first subtask's, for the shared counts)."""

    request: StudyRequest
    dataset: Dataset
    plan: StudyPlan
    subtasks: list[SubtaskStudy] | None
    n_cells: int
    notices: tuple[str, ...]
    fractions: tuple[float, ...] | None = None


@dataclass(frozen=True, eq=False)
class StudyOutcome:
    """A finished study: the folder written, its tables, its config.json content, and
    every notice of the plan and the runs (also in config.json)."""

    path: Path
    tables: StudyTables
    config: dict[str, Any]
    notices: tuple[str, ...]
    prepared: PreparedStudy


class StudyInterrupted(BaseException):
    """The study stopped before its end (Ctrl-C, SIGTERM): what it had finished is saved
    in `checkpoint` unless nothing was (then the checkpoint is removed).

    Continue with ``resume_study(out_dir)``; `cause` is the
    exception that stopped it.
    """

    def __init__(self, out_dir: Path, checkpoint: Path, runs_saved: int, cells_saved: int,
                 cause: BaseException) -> None:
        super().__init__(f"{runs_saved} finished run{'s' * (runs_saved != 1)} and "
                         f"{cells_saved} cell{'s' * (cells_saved != 1)} saved in {checkpoint}")
        self.out_dir, self.checkpoint = out_dir, checkpoint
        self.runs_saved, self.cells_saved, self.cause = runs_saved, cells_saved, cause

    @property
    def saved_anything(self) -> bool:
        return bool(self.runs_saved or self.cells_saved)


def load_study_data(request: StudyRequest) -> Dataset:
    """The request's dataset, loaded with its options (see `mdad.data.load_dataset`)."""
    from mdad.data import load_dataset

    options = dict(request.load_options)
    missing = options.pop("missing", "drop-items")
    return load_dataset(request.dataset, missing=missing, **options)


def prepare_study(request: StudyRequest, *, dataset: Dataset | None = None) -> PreparedStudy:
    """Load a study request's data and validate its plan, before any work.

    The unset target and source counts take the dataset's defaults; a per-subtask
    request is planned for each subtask. Nothing is computed or written: the returned
    study is what `conduct_study` runs, and its notices are what a user should see
    before the work starts.

    Parameters
    ----------
    request : StudyRequest
        What to study and how: the dataset, the study's parameters (`StudyConfig`),
        the load options, and whether per subtask.
    dataset : Dataset or None, default None
        The request's data, already loaded by `load_study_data(request)`; None: it is
        loaded here.

    Returns
    -------
    PreparedStudy
        The request with its dataset, its validated plan (one per subtask for a
        per-subtask study), the number of cells to compute, and the plan's notices.

    Raises
    ------
    ConfigError, DataError
        For a request that cannot be run on this data, naming the parameter; for data
        that cannot be loaded.
    """
    if dataset is None:
        dataset = load_study_data(request)
    config, defaults = request.config, StudyDefaults.of(dataset.spec)
    if not request.per_subtask:
        plan = plan_study(dataset.matrix, config, defaults=defaults)
        return PreparedStudy(request, dataset, plan, None, plan.n_cells, plan.notices)
    from mdad.study.subtasks import PAPER_FRACTIONS, plan_per_subtask

    fractions = request.fractions or PAPER_FRACTIONS
    subtasks = plan_per_subtask(dataset.matrix, config, fractions, defaults=defaults)
    notices = tuple(f"subtask {study.name}: {notice}"
                    for study in subtasks for notice in study.plan.notices)
    return PreparedStudy(request, dataset, subtasks[0].plan, subtasks,
                         sum(study.plan.n_cells for study in subtasks), notices, fractions)


def resume_study(out_dir: str | Path, *, backend: Backend | None = None,
                 progress: ProgressReporter | None = None,
                 command: list[str] | None = None) -> StudyOutcome:
    """Continue the interrupted study that was writing to `out_dir`.

    Its saved request is read from the checkpoint beside `out_dir`, prepared again
    (`prepare_study`) and run by `conduct_study` with `resume`: finished cells are
    reused, the rest computed.

    Parameters
    ----------
    out_dir : str or pathlib.Path
        The folder the interrupted study was writing to.
    backend : Backend or None, default None
        As in `conduct_study`.
    progress : ProgressReporter or None, default None
        As in `conduct_study`.
    command : list of str or None, default None
        As in `conduct_study`: a resumed study records the command it started with
        (kept in its checkpoint), not this one.

    Returns
    -------
    StudyOutcome
        As `conduct_study` returns.

    Raises
    ------
    ConfigError, DataError
        When `out_dir` has no interrupted study or its request cannot be read, the data
        changed since it started, or as `prepare_study` and `conduct_study` do.
    StudyInterrupted
        As `conduct_study` does.
    """
    out_dir = Path(out_dir).expanduser()
    return conduct_study(prepare_study(saved_request(out_dir)), out_dir, resume=True,
                         backend=backend, progress=progress, command=command)


def saved_request(out_dir: Path) -> StudyRequest:
    """The request of the interrupted study that was writing to `out_dir`.

    Raises
    ------
    ConfigError
        When `out_dir` has no interrupted study, or its request cannot be read.
    """
    saved = StudyCheckpoint(checkpoint_dir(Path(out_dir))).request()
    return StudyRequest.from_json(saved.get("request"))


def conduct_study(prepared: PreparedStudy, out_dir: str | Path, *, resume: bool = False,
                  backend: Backend | None = None, progress: ProgressReporter | None = None,
                  command: list[str] | None = None, version: str | None = None
                  ) -> StudyOutcome:
    """Run a study and write its folder `out_dir`.

    Computes every cell of the prepared plan, evaluates the tables, and writes
    config.json, mdad.csv, agreement.csv, summary.csv and results.parquet to `out_dir`.
    Finished cells are saved as they complete, so an interrupted study can resume
    (`resume_study`). The library never prints: notices come back in the outcome and
    progress goes to `progress`.

    Parameters
    ----------
    prepared : PreparedStudy
        The request with its data and plan, validated (`prepare_study`).
    out_dir : str or pathlib.Path
        The study folder to write; it must not exist or be empty. Finished cells are
        saved beside it (see `checkpoint_dir`) as they complete.
    resume : bool, default False
        Continue the interrupted study that was writing to `out_dir`, reusing what it
        finished; the request must be the saved one (`resume_study` reads it), on the
        same data.
    backend : Backend or None, default None
        Where runs are computed (`mdad.study.backends.choose_backend`; None: "auto",
        one process per core). The numbers do not depend on it.
    progress : ProgressReporter or None, default None
        Called with a `StudyProgress` as cells finish, then once for the metrics.
    command : list of str or None, default None
        The command line recorded in config.json; a resumed study records the command
        it started with (kept in its checkpoint), not the one that resumed it.
    version : str or None, default None
        The mdad version recorded in config.json; None: the installed one.

    Returns
    -------
    StudyOutcome
        The folder written, its tables, its config.json content, and every notice of
        the plan and the runs (also in config.json).

    Raises
    ------
    ConfigError, DataError
        Before any work, for a `prepared` that is not a PreparedStudy, a `backend` that
        is not a Backend, or a folder that cannot be used (not empty, holding an
        interrupted study without `resume`, or with `resume` another request or changed
        data); during it, for a write that fails (naming what was saved).
    StudyInterrupted
        On KeyboardInterrupt or another interrupt, once the workers have stopped; what
        was finished stays in the checkpoint for `resume_study` (removed when nothing
        was).
    """
    from mdad._version import version as installed
    from mdad.study.backends import Backend, choose_backend

    if not isinstance(prepared, PreparedStudy):
        raise ConfigError(f"prepared must be a PreparedStudy, not {type(prepared).__name__}; "
                          "pass prepare_study(request)", parameters=("prepared",))
    if backend is not None and not isinstance(backend, Backend):
        raise ConfigError("backend must follow mdad.study.backends.Backend (name, n_workers, "
                          "used, check, execute; extend BackendDefaults for used and check), "
                          "e.g. choose_backend('processes')", parameters=("backend",))
    out_dir = check_out_dir(Path(out_dir).expanduser())
    checkpoint = StudyCheckpoint(checkpoint_dir(out_dir))
    chosen = backend if backend is not None else choose_backend()
    chosen.check()
    sha256 = prepared.dataset.matrix.sha256
    command = _open_checkpoint(checkpoint, out_dir, prepared.request, sha256, resume=resume,
                               command=command, layout=_layout(prepared))
    started = time.perf_counter()
    try:
        computed = _compute(prepared, chosen, checkpoint, progress, started)
    except BaseException as exc:
        _stopped(exc, checkpoint, out_dir)
        raise  # _stopped raises for every exception; this keeps type checkers content
    cells_done = time.perf_counter()
    if progress is not None:
        progress(StudyProgress("metrics", prepared.n_cells, prepared.n_cells, 0,
                               cells_done - started))
    try:
        tables, frame, notices, method_seconds = _evaluate(prepared, computed)
        from mdad.study.trust import thin_data_notices

        notices = (*notices, *thin_data_notices(tables.mdad))
        config = study_config_json(
            prepared.dataset, prepared.plan, version=version or installed(), command=command,
            per_subtask=_subtask_json(prepared), notices=(*prepared.notices, *notices))
        used = chosen.used  # what "auto" ended up using
        config["timing"] = {
            "backend": used,
            "workers": 1 if used == "in-process" else chosen.n_workers,
            "cells_seconds": round(cells_done - started, 3),
            "metrics_seconds": round(time.perf_counter() - cells_done, 3),
            "method_cpu_seconds": {
                name: round(float(seconds), 3) for name, seconds in
                zip(prepared.plan.config.methods, method_seconds, strict=True)},
        }
        write_study_folder(out_dir, frame, tables, config)
    except BaseException as exc:
        _stopped(exc, checkpoint, out_dir)
        raise
    shutil.rmtree(checkpoint.folder, ignore_errors=True)
    checkpoint.unlock()  # only now: the folder is written and the checkpoint gone
    return StudyOutcome(out_dir, tables, config, (*prepared.notices, *notices), prepared)


def _layout(prepared: PreparedStudy) -> list[dict[str, list[int]]]:
    """The sizes each method runs at, per plan: what the saved runs' arrays hold."""
    plans = [s.plan for s in prepared.subtasks] if prepared.subtasks else [prepared.plan]
    return [{name: list(plan.sizes_of(name)) for name in plan.config.methods}
            for plan in plans]


def _open_checkpoint(checkpoint: StudyCheckpoint, out_dir: Path, request: StudyRequest,
                     sha256: str | None, *, resume: bool, command: list[str] | None = None,
                     layout: list[dict[str, list[int]]] | None = None) -> list[str] | None:
    """Lock the checkpoint and record the request, the `command` that started it and
    the cells' `layout`, or check them against the saved ones; the command the study
    started with (a resumed study's own, ``mdad run --resume DIR``, cannot repeat it).

    The same request can plan other cells after an upgrade of mdad or of a method's
    plug-in (a size it can now build, or no longer): the saved runs would not fit them."""
    exists = checkpoint.folder.exists()
    if exists and not resume:
        raise ConfigError(f"out_dir {out_dir} has an interrupted study ({checkpoint.folder}); "
                          f"continue it with resume {out_dir}, or remove that folder",
                          parameters=("out_dir", "resume"))
    if resume and not (checkpoint.folder / "request.json").is_file():
        checkpoint.request()  # raises: nothing to resume
    checkpoint.lock()
    try:
        remove_stale_staging(out_dir)
        checkpoint.start({"request": request.to_json(), "sha256": sha256, "command": command,
                          "layout": layout})
        saved = checkpoint.request()
        if saved.get("request") != json.loads(json.dumps(request.to_json())):
            raise ConfigError(f"resume {out_dir} continues the saved request as it was; "
                              "start a new study for another", parameters=("resume",))
        if saved.get("sha256") != sha256:
            raise ConfigError(f"resume {out_dir}: the data changed since the study started "
                              "(sha256 differs); start a new study", parameters=("resume",))
        kept = saved.get("layout")
        if kept is None and layout is not None:  # saved before the layout was: every
            kept = [dict.fromkeys(plan, sorted({s for v in plan.values() for s in v}))
                    for plan in layout]  # method ran at every size of its plan
        if layout is not None and kept != layout:
            raise ConfigError(f"resume {out_dir}: the study now plans other sizes for its "
                              "methods than when it started (mdad or a method's plug-in "
                              "changed: a method can build other sizes); start a new study",
                              parameters=("resume",))
    except BaseException:
        checkpoint.unlock()
        raise
    first = saved.get("command")  # None in checkpoints written before it was kept
    return first if isinstance(first, list) and all(isinstance(a, str) for a in first) else (
        None if resume else command)


def _compute(prepared: PreparedStudy, backend: Backend, checkpoint: StudyCheckpoint,
             progress: ProgressReporter | None, started: float) -> list:
    """Every cell, through `backend`: one StudyResult per study."""
    from mdad.study.runner import run_studies

    resumed: list[int] = []

    def report(done: int, total: int) -> None:
        if not resumed:  # the first report counts the cells found in the checkpoint
            resumed.append(done)
        if progress is not None:
            progress(StudyProgress("cells", done, total, resumed[0],
                                   time.perf_counter() - started))

    studies = ([(s.matrix, s.plan) for s in prepared.subtasks] if prepared.subtasks
               else [(prepared.dataset.matrix, prepared.plan)])
    return run_studies(studies, backend=backend, progress=report, checkpoint=checkpoint)


def _evaluate(prepared: PreparedStudy, results: list
              ) -> tuple[StudyTables, pd.DataFrame, tuple[str, ...], np.ndarray]:
    """Tables, rows of results.parquet, the methods' notices and CPU seconds per method."""
    if prepared.subtasks is None:
        from mdad.study.evaluation import evaluate

        (result,) = results
        return evaluate(result), result.to_frame(), result.notices, result.method_seconds
    from mdad.study.subtasks import collect_per_subtask

    output = collect_per_subtask(prepared.subtasks, results, prepared.fractions)
    return output.tables, output.frame, output.notices, output.method_seconds


def _subtask_json(prepared: PreparedStudy) -> dict[str, Any] | None:
    if prepared.subtasks is None:
        return None
    return {"fractions": list(prepared.fractions),
            "sizes": {study.name: list(study.plan.sizes) for study in prepared.subtasks}}


def _stopped(exc: BaseException, checkpoint: StudyCheckpoint, out_dir: Path) -> None:
    """Release the checkpoint after `exc` stopped the study (removing it when it holds
    nothing), then raise what the caller should see. SIGKILL cannot be caught: then the
    checkpoint stays, and a new study into `out_dir` is refused, naming resume."""
    checkpoint.unlock()
    runs_saved, cells_saved = checkpoint.finished()
    if runs_saved == cells_saved == 0:
        shutil.rmtree(checkpoint.folder, ignore_errors=True)
    interrupted = StudyInterrupted(out_dir, checkpoint.folder, runs_saved, cells_saved, exc)
    if not isinstance(exc, Exception):  # KeyboardInterrupt, a signal's exception
        raise interrupted from exc
    saved = (f"{interrupted}; continue with resume {out_dir}" if interrupted.saved_anything
             else "nothing was finished")
    if isinstance(exc, OSError):  # e.g. a full disk: one line, and how to go on
        raise DataError(f"{exc.filename or out_dir}: {exc.strerror or exc}; {saved}",
                        parameters=("resume",)) from None
    if isinstance(exc, MdadError) and interrupted.saved_anything:
        raise type(exc)(f"{exc}; {saved}", parameters=(*exc.parameters, "resume")) from None
    raise exc


