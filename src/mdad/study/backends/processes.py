"""Runs computed in spawned worker processes on this machine.

Each worker receives the studies once, computes whole runs, saves each finished cell
in the checkpoint folder itself (so an interrupt loses no finished cell), and reports
it to the parent through a queue, so progress counts cells as they finish.
"""

from __future__ import annotations

import multiprocessing
import os
import queue as queue_module
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from mdad.selection import get_method
from mdad.selection.threads import load_libraries
from mdad.study.backends.base import BackendDefaults, CellSink, RunSink
from mdad.study.backends.in_process import run_here
from mdad.study.cells import compute_run
from mdad.study.records import CellOutput, RunJob, RunOutput, Study

if TYPE_CHECKING:
    from mdad.study.checkpoint import StudyCheckpoint

# Seconds to spawn the workers and send them the data, as measured on GPQA with two
# workers (benchmarks/bench_backends.py); the automatic choice weighs work against it.
WORKER_START_SECONDS = 1.0
_POLL_SECONDS = 0.05
_OBSERVE = 0.2  # share of the start-up cost spent here before the rate is trusted


class ProcessBackend(BackendDefaults):
    """Runs spread over `n_workers` spawned processes."""

    name = "processes"

    def __init__(self, n_workers: int) -> None:
        self.n_workers = n_workers

    def execute(self, studies: list[Study], jobs: list[RunJob], *,
                checkpoint: StudyCheckpoint | None, on_cell: CellSink,
                on_run: RunSink) -> None:
        if not jobs:
            return
        folder = None if checkpoint is None else checkpoint.folder
        context = multiprocessing.get_context("spawn")
        cells = context.Queue()
        executor = ProcessPoolExecutor(min(self.n_workers, len(jobs)), mp_context=context,
                                       initializer=_init_worker, initargs=(studies, cells))
        try:
            with _held_interrupts():  # submitting starts the workers and sends them data
                pending = {executor.submit(worker_run, job, folder) for job in jobs}
            while pending:
                done, pending = wait(pending, timeout=_POLL_SECONDS,
                                     return_when=FIRST_COMPLETED)
                _drain(cells, on_cell)
                for future in done:
                    job, out = future.result()
                    _drain(cells, on_cell)
                    on_run(job, out)
        except BaseException:
            # Stop the workers now rather than let them finish their runs (their
            # finished cells are saved), and before the pool releases its queues: a
            # worker still starting would find its semaphores gone and print a traceback.
            processes = list(getattr(executor, "_processes", {}).values())
            for process in processes:
                process.terminate()
            for process in processes:
                process.join(timeout=10)
            executor.shutdown(wait=False, cancel_futures=True)
            raise
        finally:
            cells.close()
            cells.cancel_join_thread()
        executor.shutdown(wait=True)


class AutoBackend(BackendDefaults):
    """Runs here while the work left is smaller than the cost of starting workers, the
    rest in `n_workers` processes.

    Runs are computed here one after another; after each cell the time spent so far
    gives the cost of a run. The remaining runs (and the unfinished cells of the
    current one) go to worker processes as soon as they would finish sooner there,
    i.e. when the estimated work left exceeds the start cost x n/(n-1). The start
    cost is `start_seconds` plus the time the methods' libraries took to import here
    (each worker imports them again); that import is not counted as work.
    """

    name = "auto"

    def __init__(self, n_workers: int, start_seconds: float = WORKER_START_SECONDS) -> None:
        self.n_workers = n_workers
        self.start_seconds = start_seconds
        self._used = "in-process"

    @property
    def used(self) -> str:
        """What the last `execute` ended up using: "in-process" or "processes"."""
        return self._used

    def execute(self, studies: list[Study], jobs: list[RunJob], *,
                checkpoint: StudyCheckpoint | None, on_cell: CellSink,
                on_run: RunSink) -> None:
        self._used = "in-process"
        cells_per_run = [plan.n_cells // plan.config.n_runs for _, plan in studies]
        cells_left = sum(cells_per_run[job.study] - len(job.finished) for job in jobs)
        methods = {name for _, plan in studies for name in plan.config.methods}
        imports = load_libraries(get_method(name) for name in sorted(methods))
        threshold = ((self.start_seconds + imports) * self.n_workers
                     / max(self.n_workers - 1, 1))
        started, computed = time.perf_counter(), 0
        queue = list(jobs)
        while queue:
            job = queue.pop(0)
            partial = dict(job.finished)

            def cell_here(study: int, cell: CellOutput, partial: dict = partial) -> None:
                nonlocal computed
                partial[cell.key] = cell
                computed += 1
                on_cell(study, cell)
                left, elapsed = cells_left - computed, time.perf_counter() - started
                # A first cell may carry one-off costs: judge the rate only after a while.
                if (self.n_workers > 1 and left > 0 and elapsed > _OBSERVE * self.start_seconds
                        and elapsed / computed * left > threshold):
                    raise _HandOff

            try:
                run_here(studies, job, checkpoint=checkpoint, on_cell=cell_here,
                         on_run=on_run)
            except _HandOff:
                queue.insert(0, RunJob(job.study, job.run, partial))
                break
        if queue:
            self._used = "processes"
            ProcessBackend(self.n_workers).execute(studies, queue, checkpoint=checkpoint,
                                                   on_cell=on_cell, on_run=on_run)


class _HandOff(Exception):
    """The work left is worth worker processes: stop computing here."""


def _drain(cells: multiprocessing.Queue, on_cell: CellSink) -> None:
    while True:
        try:
            study, cell = cells.get_nowait()
        except queue_module.Empty:
            return
        on_cell(study, cell)


_WORKER: dict = {}


def _init_worker(studies: list[Study], cells: multiprocessing.Queue | None = None) -> None:
    """A worker process's start: it takes the studies and leaves Ctrl-C to the parent
    (which prints how to resume); if the parent dies, it exits at once instead of
    waiting on its pipe forever."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    exit_with_parent()
    set_worker_studies(studies, cells)


def set_worker_studies(studies: list[Study], cells: multiprocessing.Queue | None = None
                       ) -> None:
    """What a worker holds: the studies, and the queue it reports finished cells to."""
    _WORKER.update(studies=studies, cells=cells)


def exit_with_parent(interval: float = 0.5) -> None:
    """Start a daemon thread that ends this process within `interval` seconds of its
    parent's death (the parent's pid changes when it is reparented)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        os._exit(1)

    threading.Thread(target=watch, name="mdad-parent-watch", daemon=True).start()


def worker_run(job: RunJob, folder: Path | None) -> tuple[RunJob, RunOutput]:
    """Compute `job` in a worker, saving each cell in the checkpoint `folder`."""
    matrix, plan = _WORKER["studies"][job.study]
    cells = _WORKER.get("cells")
    checkpoint = None
    if folder is not None:
        from mdad.study.checkpoint import StudyCheckpoint

        checkpoint = StudyCheckpoint(folder)

    def on_cell(cell: CellOutput) -> None:
        if checkpoint is not None:
            checkpoint.save_cell(job.study, cell)
        if cells is not None:
            cells.put((job.study, cell))

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
