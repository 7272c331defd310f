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


def _drain(queue, save_cell: SaveCell, stop: threading.Event) -> None:
    """Save the cells arriving on `queue` until `stop` is set and the queue is empty.

    Polls with batch gets: a blocking get with a timeout makes the scheduler log an
    error each time it expires."""
    while True:
        stopping = stop.is_set()
        items = queue.get(batch=True)
        for study, cell in items:
            save_cell(study, cell)
        if stopping and not items:
            return
        if not items:
            stop.wait(0.2)


def check_scheduler(address: str) -> None:
    """Fail early, with a one-line error, when no Dask scheduler answers at `address`."""
    try:
        from dask.distributed import Client
    except ImportError:
        raise ConfigError("--backend dask needs dask: pip install 'dask[distributed]'"
                          ) from None
    try:
        Client(address, timeout="10s").close()
    except OSError as exc:
        raise ConfigError(f"--scheduler {address}: cannot connect ({exc}); start one with "
                          "`dask scheduler` or use --workers N for a local cluster") from None


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
    drain, stop = None, threading.Event()
    try:
        queue_name = None
        if save_cell is not None:
            queue_name = f"mdad-cells-{uuid.uuid4().hex}"
            queue = Queue(queue_name, client=client)
            drain = threading.Thread(target=_drain, args=(queue, save_cell, stop), daemon=True)
            drain.start()
        shared = client.scatter(studies, broadcast=True)
        futures = {client.submit(_job, shared, job, queue_name, pure=False): job
                   for job in jobs}
        for future in as_completed(futures):
            out = future.result()
            yield futures[future], out
    finally:
        stop.set()
        if drain is not None:
            drain.join()
        client.close()
        if cluster is not None:
            cluster.close()
