"""Runs on a Dask cluster: the same `compute_run` as the local backend, so the numbers
are bit-identical (each run uses one BLAS thread on any machine).

Workers may be on other machines, so they do not write checkpoints: each finished cell
goes through a Dask queue to this process, which saves it.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator

from mdad.data.matrix import ResponseMatrix
from mdad.errors import ConfigError
from mdad.study.config import StudyPlan
from mdad.study.runner import CellOutput, Job, RunOutput, compute_run

SaveCell = Callable[[int, CellOutput], None]
TRIM_SETTING = "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_"


def _job(studies: list[tuple[ResponseMatrix, StudyPlan]], job: Job,
         queue_name: str | None) -> RunOutput:
    matrix, plan = studies[job.study]
    on_cell = None
    if queue_name is not None:
        from dask.distributed import Queue

        queue = Queue(queue_name)

        def on_cell(cell: CellOutput) -> None:
            queue.put((job.study, cell))

    return compute_run(matrix, plan, job.run, on_cell=on_cell, finished=job.finished)


class _CellDrain(threading.Thread):
    """Saves the cells arriving on a Dask queue, in this process, as they arrive.

    A cell of a run whose result is already here is skipped (the run's file replaces
    its cells); the run is marked under the same lock that guards saving, so no cell
    file is written after its run's. Polls with batch gets: a blocking get with a
    timeout makes the scheduler log an error each time it expires.
    """

    def __init__(self, queue, save_cell: SaveCell) -> None:
        super().__init__(daemon=True)
        self.queue, self.save_cell = queue, save_cell
        self.lock, self.stop = threading.Lock(), threading.Event()
        self.done_runs: set[tuple[int, int]] = set()
        self.error: BaseException | None = None

    def mark_done(self, job: Job) -> None:
        with self.lock:
            self.done_runs.add((job.study, job.run))
        if self.error is not None:
            raise self.error

    def run(self) -> None:
        try:
            while True:
                stopping = self.stop.is_set()
                items = self.queue.get(batch=True)
                with self.lock:
                    for study, cell in items:
                        if (study, cell.run) not in self.done_runs:
                            self.save_cell(study, cell)
                if stopping and not items:
                    return
                if not items:
                    self.stop.wait(0.2)
        except BaseException as exc:  # re-raised in the main thread by mark_done
            self.error = exc


def check_scheduler(address: str) -> None:
    """Fail early, with a one-line error, when no Dask scheduler answers at `address`."""
    try:
        from dask.distributed import Client
    except ImportError:
        raise ConfigError("--backend dask needs dask: pip install 'dask[distributed]'"
                          ) from None
    try:
        Client(address, timeout="10s").close()
    except (OSError, ValueError, TypeError) as exc:  # no answer, or not an address
        raise ConfigError(f"--scheduler {address}: cannot connect ({exc}); give an address "
                          "like tcp://host:8786, start a scheduler with `dask scheduler`, or "
                          "use --workers N for a local cluster") from None


def dask_runs(studies: list[tuple[ResponseMatrix, StudyPlan]], jobs: list[Job],
              scheduler: str, workers: int, save_cell: SaveCell | None = None
              ) -> Iterator[tuple[Job, RunOutput]]:
    """Jobs computed on a Dask cluster, yielded as they finish.

    `scheduler` is a running scheduler's address, or "local" for a cluster of
    `workers` single-threaded worker processes on this machine, closed afterwards.
    The studies are sent to every worker once (scattered with broadcast). With
    `save_cell`, every finished cell is passed to it here as it arrives.
    """
    try:
        import dask
        from dask.distributed import Client, LocalCluster, Queue, as_completed
    except ImportError:
        raise ConfigError("--backend dask needs dask: pip install 'dask[distributed]'"
                          ) from None
    cluster = None
    try:
        if scheduler == "local":
            # Dask's nanny sets MALLOC_TRIM_THRESHOLD_=65536 in its workers, which makes
            # every large numpy temporary a fresh mmap: runs take 1.5x as long.
            with dask.config.set({TRIM_SETTING: None}):
                cluster = LocalCluster(n_workers=max(workers, 1), threads_per_worker=1,
                                       processes=True, dashboard_address=None)
            client = Client(cluster)
        else:
            client = Client(scheduler, timeout="10s")
    except OSError as exc:
        raise ConfigError(f"--scheduler {scheduler}: cannot connect ({exc}); start one with "
                          "`dask scheduler` or use --workers N for a local cluster") from None
    drain = None
    try:
        queue_name = None
        if save_cell is not None:
            queue_name = f"mdad-cells-{uuid.uuid4().hex}"
            drain = _CellDrain(Queue(queue_name, client=client), save_cell)
            drain.start()
        shared = client.scatter(studies, broadcast=True)
        futures = {client.submit(_job, shared, job, queue_name, pure=False): job
                   for job in jobs}
        for future in as_completed(futures):
            out = future.result()
            if drain is not None:
                drain.mark_done(futures[future])
            yield futures[future], out
    finally:
        if drain is not None:
            drain.stop.set()
            drain.join()
            drain.queue.close()
        client.close()
        if cluster is not None:
            cluster.close()
