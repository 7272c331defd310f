"""Runs on a Dask cluster: the same `compute_run` as the local backend, so the numbers
are bit-identical (each run uses one BLAS thread on any machine)."""

from __future__ import annotations

from collections.abc import Iterator

from mdad.data.matrix import ResponseMatrix
from mdad.errors import ConfigError
from mdad.study.config import StudyPlan
from mdad.study.runner import RunOutput, compute_run


def _job(studies: list[tuple[ResponseMatrix, StudyPlan]], index: int, run: int) -> RunOutput:
    matrix, plan = studies[index]
    return compute_run(matrix, plan, run)


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


def dask_runs(studies: list[tuple[ResponseMatrix, StudyPlan]], jobs: list[tuple[int, int]],
              scheduler: str, workers: int) -> Iterator[tuple[int, RunOutput]]:
    """(study index, run) jobs computed on a Dask cluster, yielded as they finish.

    `scheduler` is a running scheduler's address, or "local" for a cluster of
    `workers` single-threaded worker processes on this machine, closed afterwards.
    The studies are sent to every worker once (scattered with broadcast).
    """
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise ConfigError("--backend dask needs dask: pip install 'dask[distributed]'"
                          ) from None
    cluster = None
    try:
        if scheduler == "local":
            cluster = LocalCluster(n_workers=max(workers, 1), threads_per_worker=1,
                                   processes=True, dashboard_address=None)
            client = Client(cluster)
        else:
            client = Client(scheduler, timeout="10s")
    except OSError as exc:
        raise ConfigError(f"--scheduler {scheduler}: cannot connect ({exc}); start one with "
                          "`dask scheduler` or use --workers N for a local cluster") from None
    try:
        shared = client.scatter(studies, broadcast=True)
        futures = {client.submit(_job, shared, index, run, pure=False): index
                   for index, run in jobs}
        for future in as_completed(futures):
            yield futures[future], future.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
