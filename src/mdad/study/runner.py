"""Run the paper's study protocol: runs x source counts x methods x sizes."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from mdad.data.matrix import ResponseMatrix

if TYPE_CHECKING:
    from mdad.study.checkpoint import RunCheckpoint
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
    method_seconds : float array of shape (n_methods,)
        Compute time per method, summed over runs and processes.
    notices : fallbacks the methods reported, one line each, with how often.
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
    with threadpool_limits(limits=1):
        return design, get_method(method).select(pool, size, rng=rng)


def run_cell(matrix: ResponseMatrix, plan: StudyPlan, *, run: int, method: str, size: int,
             n_sources: int) -> np.ndarray:
    """Estimates of one cell, recomputed alone: shape (n_targets,), in target order."""
    design, micro = select_cell(matrix, plan, run=run, method=method, size=size,
                                n_sources=n_sources)
    with threadpool_limits(limits=1):
        return micro.estimate(_target_scores(matrix, design, micro.uses_confidence))


def _target_scores(matrix: ResponseMatrix, design: RunDesign, confidence: bool) -> np.ndarray:
    """Targets' scores on the seen pool: gold-option confidence (float32) or correctness
    as stored (uint8 when compact: estimators convert only the items they read)."""
    if confidence:
        return matrix.gold_confidence(design.targets, design.seen)
    return matrix.correctness[design.targets][:, design.seen]


@dataclass(frozen=True, eq=False)
class CellOutput:
    """One finished cell: a method at one size and source count, in one run.

    `key` is (source count index, method index, size index) in the plan's order;
    `estimates` has shape (n_targets,); `seconds` is the time it took; `notes` are the
    fallbacks the method reported.
    """

    run: int
    key: tuple[int, int, int]
    estimates: np.ndarray
    seconds: float
    notes: tuple[str, ...] = ()


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
    """

    run: int
    estimates: np.ndarray
    accuracies: RunAccuracies
    targets: np.ndarray
    method_seconds: np.ndarray
    notes: Counter[tuple[str, int, str]]


def compute_run(matrix: ResponseMatrix, plan: StudyPlan, run: int, *,
                on_cell: Callable[[CellOutput], None] | None = None,
                finished: Mapping[tuple[int, int, int], CellOutput] | None = None
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
    seconds = np.zeros(len(methods))
    notes: Counter[tuple[str, int, str]] = Counter()
    # One BLAS thread: the same bits on every machine and backend, and no contention
    # between worker processes.
    with threadpool_limits(limits=1):
        for c, n_sources in enumerate(config.sources):
            pool = seen_pool(matrix, design, n_sources, seed=config.seed, stream=plan.stream)
            for m, method in enumerate(methods):
                for s, size in enumerate(plan.sizes):
                    cell = finished.get((c, m, s))
                    if cell is None:
                        start = time.perf_counter()
                        rng = _cell_rng(plan, run, method.name, size, n_sources)
                        micro = method.select(pool, size, rng=rng)
                        flag = micro.uses_confidence
                        if flag not in scores:
                            scores[flag] = _target_scores(matrix, design, flag)
                        cell = CellOutput(run, (c, m, s), micro.estimate(scores[flag]),
                                          time.perf_counter() - start, micro.notes)
                        if on_cell is not None:
                            on_cell(cell)
                    estimates[m, s, c] = cell.estimates
                    seconds[m] += cell.seconds
                    notes.update((method.name, size, note) for note in cell.notes)
    return RunOutput(run, estimates, _accuracies(matrix.correctness, design), design.targets,
                     seconds, notes)


@dataclass(frozen=True, eq=False)
class Job:
    """Run `run` of study `study`, with the cells already `finished` (by key)."""

    study: int
    run: int
    finished: dict[tuple[int, int, int], CellOutput] = field(default_factory=dict)


class _Collector:
    """Assembles one study's `StudyResult` from its runs, in any order."""

    def __init__(self, matrix: ResponseMatrix, plan: StudyPlan) -> None:
        config = plan.config
        n_runs, n_targets, n_methods = config.n_runs, plan.n_targets, len(config.methods)
        self.matrix, self.plan = matrix, plan
        self.estimates = np.empty((n_methods, len(plan.sizes), len(config.sources), n_runs,
                                   n_targets))
        self.seen, self.unseen, self.full = (np.empty((n_runs, n_targets)) for _ in range(3))
        self.targets = np.empty((n_runs, n_targets), dtype=np.int64)
        self.method_seconds = np.zeros(n_methods)
        self.notes: Counter[tuple[str, int, str]] = Counter()

    def add(self, out: RunOutput) -> None:
        self.estimates[:, :, :, out.run] = out.estimates
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
                           self.unseen, self.full, self.targets, self.method_seconds, notices)


def run_studies(studies: list[tuple[ResponseMatrix, StudyPlan]], *, workers: int = 1,
                progress: ProgressCallback | None = None,
                checkpoint: RunCheckpoint | None = None,
                scheduler: str | None = None) -> list[StudyResult]:
    """Run every cell of several studies (e.g. one per subtask), sharing the workers.

    Parameters
    ----------
    studies : (matrix, plan) pairs; each matrix without missing cells (see
        `resolve_missing`), each plan validated against it (see `plan_study`).
    workers : processes to run the runs in; 1 runs them here. With `scheduler`
        "local", the number of Dask worker processes to start.
    progress : called as ``progress(cells_done, cells_total)`` after each cell (with
        workers, after each run), counting over all studies.
    checkpoint : where each finished cell is saved as it completes; cells and runs
        already saved there are loaded, not recomputed.
    scheduler : run on a Dask cluster: the address of a running scheduler
        (``tcp://host:8786``), or "local" to start one with `workers` processes.
    The numbers depend on none of workers, checkpoint and scheduler.
    """
    collectors = [_Collector(matrix, plan) for matrix, plan in studies]
    total = sum(plan.n_cells for _, plan in studies)
    done = 0

    def cells_done(count: int) -> None:
        nonlocal done
        done += count
        if progress is not None and count:
            progress(done, total)

    def finish(index: int, out: RunOutput) -> None:
        collectors[index].add(out)
        if checkpoint is not None:
            checkpoint.save(index, out)

    save_cell = checkpoint.save_cell if checkpoint is not None else None
    jobs: list[Job] = []
    for index, (matrix, plan) in enumerate(studies):
        per_run = plan.n_cells // plan.config.n_runs
        for run in range(plan.config.n_runs):
            saved = checkpoint.load(index, run) if checkpoint is not None else None
            if saved is not None:
                collectors[index].add(saved)
                cells_done(per_run)
                continue
            cells = checkpoint.load_cells(index, run) if checkpoint is not None else {}
            cells_done(len(cells))
            if len(cells) == per_run:  # every cell saved, the run not yet assembled
                finish(index, compute_run(matrix, plan, run, finished=cells))
            else:
                jobs.append(Job(index, run, cells))
    if scheduler is not None:
        from mdad.study.distributed import dask_runs

        runs = dask_runs(studies, jobs, scheduler, workers, save_cell)
    elif workers <= 1 or len(jobs) <= 1:
        runs = None
        for job in jobs:
            matrix, plan = studies[job.study]

            def on_cell(cell: CellOutput, index: int = job.study) -> None:
                if save_cell is not None:
                    save_cell(index, cell)
                cells_done(1)

            finish(job.study, compute_run(matrix, plan, job.run, on_cell=on_cell,
                                          finished=job.finished))
    else:
        folder = None if checkpoint is None else checkpoint.folder
        runs = _parallel_runs(studies, jobs, min(workers, len(jobs)), folder)
    try:
        for job, out in runs or ():
            finish(job.study, out)
            plan = studies[job.study][1]
            cells_done(plan.n_cells // plan.config.n_runs - len(job.finished))
    finally:
        if runs is not None:  # an interrupt anywhere stops the workers before we return
            runs.close()
    return [collector.result() for collector in collectors]


def run_study(matrix: ResponseMatrix, plan: StudyPlan, *, workers: int = 1,
              progress: ProgressCallback | None = None,
              checkpoint: RunCheckpoint | None = None,
              scheduler: str | None = None) -> StudyResult:
    """Run every cell of `plan` on a complete `matrix`; see `run_studies`."""
    return run_studies([(matrix, plan)], workers=workers, progress=progress,
                       checkpoint=checkpoint, scheduler=scheduler)[0]


_WORKER_STUDIES: list[tuple[ResponseMatrix, StudyPlan]] = []


def _init_worker(studies: list[tuple[ResponseMatrix, StudyPlan]]) -> None:
    """A worker process's start: it takes the studies and leaves Ctrl-C to the parent
    (which prints how to resume); if the parent dies, it exits at once instead of
    waiting on its pipe forever."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    exit_with_parent()
    _set_worker_studies(studies)


def _set_worker_studies(studies: list[tuple[ResponseMatrix, StudyPlan]]) -> None:
    _WORKER_STUDIES[:] = studies


def exit_with_parent(interval: float = 0.5) -> None:
    """Start a daemon thread that ends this process within `interval` seconds of its
    parent's death (the parent's pid changes when it is reparented)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        os._exit(1)

    threading.Thread(target=watch, name="mdad-parent-watch", daemon=True).start()


def _worker_run(job: Job, folder: Path | None) -> tuple[Job, RunOutput]:
    matrix, plan = _WORKER_STUDIES[job.study]
    on_cell = None
    if folder is not None:
        from mdad.study.checkpoint import RunCheckpoint

        checkpoint = RunCheckpoint(folder)

        def on_cell(cell: CellOutput) -> None:
            checkpoint.save_cell(job.study, cell)

    return job, compute_run(matrix, plan, job.run, on_cell=on_cell, finished=job.finished)


@contextmanager
def _held_interrupts() -> Iterator[None]:
    """Hold SIGINT and SIGTERM, then deliver them once the block is done. Starting a
    worker writes its data into a pipe while the worker reads it; interrupted in
    between, the worker would be left half-started, out of reach of the cleanup.
    Outside the main thread (where handlers cannot be set) this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    signals = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, lambda signum, frame: received.append(signum))
                for sig in signals}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if received:
        signal.raise_signal(received[0])  # now handled as it would have been


def _parallel_runs(studies: list[tuple[ResponseMatrix, StudyPlan]], jobs: list[Job],
                   workers: int, folder: Path | None) -> Iterator[tuple[Job, RunOutput]]:
    """Jobs computed in `workers` spawned processes, yielded as they finish; each
    process saves its finished cells in the checkpoint `folder`. The data is sent once
    per process; an interrupt cancels the runs not yet started."""
    context = multiprocessing.get_context("spawn")
    executor = ProcessPoolExecutor(workers, mp_context=context, initializer=_init_worker,
                                   initargs=(studies,))
    try:
        with _held_interrupts():  # submitting starts the workers and sends them the data
            futures = [executor.submit(_worker_run, job, folder) for job in jobs]
        for future in as_completed(futures):
            yield future.result()
    except BaseException:
        # Interrupted: stop the workers now rather than let them finish their runs
        # (their finished cells are saved already).
        # Stop them before the pool releases its queues: a worker still starting would
        # find its semaphores gone and print a traceback.
        processes = list(getattr(executor, "_processes", {}).values())
        for process in processes:
            process.terminate()
        for process in processes:
            process.join(timeout=10)
        executor.shutdown(wait=False, cancel_futures=True)
        raise
    executor.shutdown(wait=True)
