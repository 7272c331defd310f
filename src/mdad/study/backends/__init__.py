"""Where a study's runs are computed: one protocol, three backends.

Every backend runs the same `compute_run`, one BLAS thread per run, so the numbers are
bit-identical whichever is used:

- `InProcessBackend`: here, one run after another;
- `ProcessBackend`: spawned worker processes on this machine;
- `DaskBackend`: a Dask cluster, local or remote.

`choose_backend` picks one by name; ``"auto"`` (the default) starts runs here and hands
the rest to worker processes only when the work left outweighs starting them.
"""

from __future__ import annotations

from mdad.errors import ConfigError
from mdad.study.backends.base import Backend, CellSink, RunSink
from mdad.study.backends.in_process import InProcessBackend
from mdad.study.backends.processes import WORKER_START_SECONDS, AutoBackend, ProcessBackend

BACKENDS = ("auto", "in-process", "processes", "dask")


def choose_backend(name: str = "auto", *, n_workers: int | None = None,
                   scheduler: str | None = None) -> Backend:
    """The backend called `name` (one of `BACKENDS`).

    `n_workers` is the number of worker processes (None: one per CPU core), for
    "dask" without `scheduler` the local Dask workers to start; `scheduler` is a
    running Dask scheduler's address (only with "dask").

    Raises
    ------
    ConfigError
        For an unknown name, n_workers < 1, or a scheduler without "dask".
    """
    if name not in BACKENDS:
        raise ConfigError(f"backend must be one of {', '.join(BACKENDS)}; got {name!r}",
                          parameters=("backend",))
    if n_workers is not None and n_workers < 1:
        raise ConfigError(f"n_workers must be >= 1; got {n_workers}", parameters=("n_workers",))
    if scheduler is not None and name != "dask":
        raise ConfigError("scheduler applies only with the dask backend; choose it, or drop "
                          "scheduler to run on this machine", parameters=("scheduler",))
    workers = n_workers or available_cores()
    if name == "in-process" or (name == "auto" and workers == 1):
        return InProcessBackend()
    if name == "processes":
        return ProcessBackend(workers)
    if name == "dask":
        from mdad.study.backends.dask_cluster import DaskBackend

        return DaskBackend(scheduler or "local", workers)
    return AutoBackend(workers)


def available_cores() -> int:
    """CPU cores this process may use."""
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def available_memory() -> int | None:
    """Bytes of memory available to new allocations (Linux's MemAvailable; else the
    free pages), or None where neither can be read."""
    import os

    try:
        with open("/proc/meminfo") as lines:
            for line in lines:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


__all__ = ["BACKENDS", "WORKER_START_SECONDS", "AutoBackend", "Backend", "CellSink",
           "InProcessBackend", "ProcessBackend", "RunSink", "available_cores",
           "available_memory", "choose_backend"]
