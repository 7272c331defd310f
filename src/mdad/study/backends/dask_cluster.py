"""Runs computed on a Dask cluster, local or remote.

Workers may be on other machines, so they do not write checkpoints: each finished cell
goes through a Dask queue to this process, which saves it and counts it.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING

from mdad.errors import ConfigError
from mdad.study.backends.base import BackendDefaults, CellSink, RunSink
from mdad.study.cells import compute_run
from mdad.study.records import CellOutput, RunJob, RunOutput, Study

if TYPE_CHECKING:
    from mdad.study.checkpoint import StudyCheckpoint

TRIM_SETTING = "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_"
_POLL_SECONDS = 0.1
_NEEDS_DASK = "the dask backend needs dask: pip install 'dask[distributed]'"


class DaskBackend(BackendDefaults):
    """Runs on the Dask scheduler at `scheduler` ("local": a cluster of `n_workers`
    single-threaded processes started here and closed afterwards). The studies are sent
    to every worker once (scattered with broadcast)."""

    name = "dask"

    def __init__(self, scheduler: str = "local", n_workers: int = 1) -> None:
        self.scheduler, self.n_workers = scheduler, n_workers

    def check(self) -> None:
        """Fail early, with a one-line error, when no scheduler answers."""
        if self.scheduler == "local":
            return
        try:
            from dask.distributed import Client
        except ImportError:
            raise ConfigError(_NEEDS_DASK) from None
        try:
            Client(self.scheduler, timeout="10s").close()
        except (OSError, ValueError, TypeError) as exc:  # no answer, or not an address
            raise ConfigError(
                f"scheduler {self.scheduler}: cannot connect ({exc}); give an address like "
                "tcp://host:8786, start a scheduler with `dask scheduler`, or run on this "
                "machine's cores", parameters=("scheduler",)) from None

    def execute(self, studies: list[Study], jobs: list[RunJob], *,
                checkpoint: StudyCheckpoint | None, on_cell: CellSink,
                on_run: RunSink) -> None:
        if not jobs:
            return
        client, cluster = self._connect()
        try:
            from dask.distributed import Queue

            queue_name = f"mdad-cells-{uuid.uuid4().hex}"
            cells = Queue(queue_name, client=client)
            shared = client.scatter(studies, broadcast=True)
            pending = {client.submit(_job, shared, job, queue_name, pure=False): job
                       for job in jobs}
            finished_runs: set[tuple[int, int]] = set()

            def drain() -> None:
                # Batch gets: a blocking get with a timeout makes the scheduler log an
                # error each time it expires.
                for study, cell in cells.get(batch=True):
                    if (study, cell.run) in finished_runs:
                        continue  # its run's file replaces its cells
                    if checkpoint is not None:
                        checkpoint.save_cell(study, cell)
                    on_cell(study, cell)

            while pending:
                drain()
                done = [future for future in pending if future.done()]
                for future in done:
                    job = pending.pop(future)
                    out = future.result()
                    drain()
                    finished_runs.add((job.study, job.run))
                    on_run(job, out)
                if not done:
                    time.sleep(_POLL_SECONDS)
            cells.close()
        finally:
            client.close()
            if cluster is not None:
                cluster.close()

    def _connect(self):
        try:
            import dask
            from dask.distributed import Client, LocalCluster
        except ImportError:
            raise ConfigError(_NEEDS_DASK) from None
        try:
            if self.scheduler != "local":
                return Client(self.scheduler, timeout="10s"), None
            # Dask's nanny sets MALLOC_TRIM_THRESHOLD_=65536 in its workers, which makes
            # every large numpy temporary a fresh mmap: runs take 1.5x as long.
            with dask.config.set({TRIM_SETTING: None}):
                cluster = LocalCluster(n_workers=max(self.n_workers, 1), threads_per_worker=1,
                                       processes=True, dashboard_address=None)
            return Client(cluster), cluster
        except OSError as exc:
            raise ConfigError(f"scheduler {self.scheduler}: cannot connect ({exc}); start one "
                              "with `dask scheduler` or run on this machine's cores",
                              parameters=("scheduler",)) from None


def _job(studies: list[Study], job: RunJob, queue_name: str) -> RunOutput:
    from dask.distributed import Queue

    matrix, plan = studies[job.study]
    queue = Queue(queue_name)

    def on_cell(cell: CellOutput) -> None:
        queue.put((job.study, cell))

    return compute_run(matrix, plan, job.run, on_cell=on_cell, finished=job.finished)
