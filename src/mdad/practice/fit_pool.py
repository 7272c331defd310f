"""Independent fits run in a thread here and, when they prove slow, in one spawned
worker process too; or, for fits that release Python's lock, in several threads here.

Threads alone do not use two cores for fits made of many small numpy calls: their
Python between the calls holds the GIL (six variational IRT fits on GPQA kept 1.3 of
2 cores busy). A worker process has its own GIL but costs about a second of another
core to start, so it is started only when the first fit is still running after
`spawn_after` seconds: selections that end sooner never pay for it. The wait is short
because a spawn costs the caller's core next to nothing: on GPQA, tinyBenchmarks' six
variational fits took 11.6 s with a 0.5 s wait and 13.1 s with 2.5 s, and its MAP-fit
variant 3.3 to 3.4 s whether its worker started at once or never (2026-12-02).
Every fit runs with one BLAS thread, here and in the worker, so its numbers do not
depend on where on this machine it ran. Fits whose time is in compiled code that
releases the lock (tinyBenchmarks' variational fit) run in one thread per core
instead: two threads ran two GPQA fits 1.7 times as fast as one, and no worker
imports the libraries again (a second or two of a core). A thread cannot be stopped:
after an error, the fits still running end on their own (a second or two on GPQA) and
their results are dropped; Ctrl-C does not wait for them (`mdad.cli.app.main` ends
the process).
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import (
    FIRST_COMPLETED,
    Executor,
    Future,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
    wait,
)
from typing import Any

from mdad.selection.threads import load_libraries

SPAWN_AFTER_SECONDS = 0.5
Task = tuple[Callable[..., Any], tuple[Any, ...]]


def _init_worker(methods: Sequence[object]) -> None:
    """Leave Ctrl-C to the parent, exit with it, and take one BLAS thread."""
    import signal

    from threadpoolctl import threadpool_limits

    from mdad.study.backends.processes import exit_with_parent

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    exit_with_parent()
    load_libraries(methods)
    threadpool_limits(limits=1)  # for the worker's lifetime


def fit_threads(tasks: int, bytes_per_fit: int) -> int:
    """Threads for `tasks` fits that release Python's lock: one per core, as many as
    the available memory holds at once (`bytes_per_fit` each; 0: not limited)."""
    from mdad.study.backends import available_cores, available_memory

    threads = min(available_cores(), tasks)
    free = available_memory()
    if bytes_per_fit > 0 and free is not None:
        threads = min(threads, max(1, free // bytes_per_fit))
    return max(threads, 1)


def run_fits(tasks: Sequence[Task], *, methods: Sequence[object] = (),
             spawn_after: float | None = SPAWN_AFTER_SECONDS, threads: int = 1,
             meanwhile: Callable[[], None] | None = None) -> Iterator[tuple[int, Any]]:
    """Yield ``(index, result)`` of each ``(function, args)`` of `tasks` as it
    finishes, in the order they finish. `meanwhile` runs in the caller's thread once
    the first tasks have started (work that would otherwise wait for them, or they
    for it: only fits that release Python's lock leave it the time).

    Tasks start in order, in `threads` threads of this process (the caller must hold a
    one-BLAS-thread limit, see `one_thread`) and, with one thread, when the first task
    is still running after `spawn_after` seconds (None: never), also in one spawned
    worker, which needs
    the functions and arguments picklable, imports `methods`' libraries before any
    fit, and imports the caller's main module again (a script must guard its work
    with ``if __name__ == "__main__":``).

    Raises
    ------
    Whatever a task raised, when its result is reached; the other tasks are cancelled.
    """
    here = ThreadPoolExecutor(max(threads, 1))
    if threads > 1:
        spawn_after = None  # every core is busy here already
    worker: ProcessPoolExecutor | None = None
    spawned: list[multiprocessing.process.BaseProcess] = []  # the worker's process
    pending: dict[Future, tuple[int, Executor]] = {}
    following = 0

    def start_next(executor: Executor) -> None:
        nonlocal following
        if following < len(tasks):
            function, args = tasks[following]
            pending[executor.submit(function, *args)] = (following, executor)
            following += 1

    if not tasks:
        return
    spawn_at = None if spawn_after is None else time.monotonic() + spawn_after
    interrupted = False
    try:
        # with no worker to share them with, every task is queued here at once
        for _ in range(len(tasks) if spawn_at is None else max(threads, 1)):
            start_next(here)
        first = next(iter(pending))
        if meanwhile is not None:
            meanwhile()
        while pending:
            timeout = None if spawn_at is None else max(0.0, spawn_at - time.monotonic())
            done, _ = wait(pending, timeout=timeout, return_when=FIRST_COMPLETED)
            if spawn_at is not None and time.monotonic() >= spawn_at:
                spawn_at = None
                if first in pending and first not in done and following < len(tasks):
                    # the executor's list of its processes is private: its process is
                    # the child that its first submit starts (spawn: at once, here)
                    before = set(multiprocessing.active_children())
                    worker = ProcessPoolExecutor(
                        1, mp_context=multiprocessing.get_context("spawn"),
                        initializer=_init_worker, initargs=(tuple(methods),))
                    start_next(worker)
                    spawned = [p for p in multiprocessing.active_children()
                               if p not in before]
            for future in done:
                index, executor = pending.pop(future)
                result = future.result()
                start_next(executor)
                yield index, result
    except BaseException as exc:
        interrupted = not isinstance(exc, Exception)  # Ctrl-C, SIGTERM, the caller closing
        raise
    finally:
        here.shutdown(wait=False, cancel_futures=True)
        if worker is not None:
            _stop(worker, spawned, now=bool(pending), interrupted=interrupted)


def _stop(worker: ProcessPoolExecutor, spawned: list[multiprocessing.process.BaseProcess],
          now: bool, interrupted: bool = False) -> None:
    """Shut the worker down; `now` (an error or interrupt): end its fit first, and
    terminate its process, even one still starting (it would print a traceback when
    this process releases the queues it is reading).
    `interrupted`: do not wait for the executor (its management thread can take as long
    as the fit); the terminated process is reaped, killed if it lingers past a second.

    `spawned`: the children started with the executor. Its pool has one process; if
    another thread started a child at the same moment, which one is the executor's is
    not known, and none is terminated: the fit then ends as it would (on an error, the
    shutdown waits for it; on an interrupt, the process ends when this one has)."""
    if not now:  # every fit ended: the worker ends when told
        worker.shutdown(wait=True, cancel_futures=True)
        return
    processes = spawned if len(spawned) == 1 else []
    for process in processes:
        process.terminate()
    if not interrupted:
        worker.shutdown(wait=True, cancel_futures=True)
        return
    worker.shutdown(wait=False, cancel_futures=True)
    deadline = time.monotonic() + 1.0
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()
