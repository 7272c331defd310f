"""The partial files of a leaderboard pull (``.<out>.partial/`` beside its dataset
folder): one small ``.npz`` a finished model, and a marker naming the benchmark and
metric the folder holds, so an interrupted pull resumes without fetching a model again.

Files found there are not trusted: a link is never followed, a pipe never waited on, and
a file that cannot be read is fetched again and replaced by an atomic write, never
deleted.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Protocol

import numpy as np

from mdad.data.lm_eval import TaskScores
from mdad.errors import ConfigError, running_out
from mdad.safe_io import atomic_write

PARTIAL_MARKER = "mdad-partial.json"  # which benchmark and metric a partial folder holds
PARTIAL_FORMAT = "mdad-partial/1"


class BenchmarkLike(Protocol):
    """What a partial file is checked against: a benchmark's name, its metric and
    which tasks it holds (`mdad.data.leaderboard.Benchmark`)."""

    @property
    def name(self) -> str: ...

    @property
    def metric(self) -> str: ...

    def holds(self, task: str) -> bool: ...


def save_partial(path: Path, tasks: dict[str, TaskScores], provenance: dict) -> None:
    """Save one model's reduced `tasks` and its `provenance` (a JSON object) to `path`,
    atomically (`mdad.safe_io.atomic_write`): a killed pull leaves no half file."""
    arrays: dict[str, np.ndarray] = {"provenance": np.array(json.dumps(provenance))}
    for k, (task, scores) in enumerate(sorted(tasks.items())):
        arrays[f"task{k}"] = np.array(task)
        arrays[f"docs{k}"] = np.array(scores.doc_ids)
        arrays[f"scores{k}"] = scores.scores.astype(np.float32)
        arrays[f"confidence{k}"] = scores.confidence.astype(np.float32)
    atomic_write(path, lambda handle: np.savez(handle, **arrays))


def _open_regular(path: Path) -> int | None:
    """A read descriptor of `path` if it is a regular file (no link followed, a pipe
    not waited on), else None; open files running out raises (`running_out`)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as exc:
        if running_out(exc):  # too many open files: no fault of the file
            raise
        return None
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        return None
    return descriptor


def load_partial(path: Path, benchmark: BenchmarkLike
                  ) -> tuple[dict[str, TaskScores], dict] | None:
    """A saved model of `benchmark`, or None when the file is missing, damaged, a link,
    or of another benchmark or metric: the model is then fetched again and the file
    replaced by an atomic write (never deleted here).

    Raises
    ------
    MemoryError, OSError
        When memory, threads or open files run out while reading it
        (`mdad.errors.running_out`): no fault of the file, so it is not fetched again.
    """
    descriptor = _open_regular(path)
    if descriptor is None:
        return None
    try:
        with os.fdopen(descriptor, "rb") as handle, np.load(handle,
                                                             allow_pickle=False) as data:
            provenance = json.loads(str(data["provenance"]))
            tasks, k = {}, 0
            while f"task{k}" in data:
                tasks[str(data[f"task{k}"])] = TaskScores(
                    [str(d) for d in data[f"docs{k}"]], data[f"scores{k}"].astype(np.float64),
                    data[f"confidence{k}"].astype(np.float64))
                k += 1
    except Exception as exc:  # damaged: fetched again; memory or files running out: said
        if running_out(exc):
            raise
        return None
    if (provenance.get("benchmark", benchmark.name) != benchmark.name
            or provenance.get("metric", benchmark.metric) != benchmark.metric
            or not tasks or not all(benchmark.holds(task) for task in tasks)):
        return None  # an earlier mdad wrote no benchmark: its tasks tell
    return tasks, provenance


def recorded(path: Path) -> dict:
    """The JSON object in `path` (a regular file, no link followed), or {}."""
    descriptor = _open_regular(path)
    if descriptor is None:
        return {}
    try:
        with os.fdopen(descriptor, "rb") as handle:
            value = json.loads(handle.read(1 << 20 if path.name == PARTIAL_MARKER
                                           else 1 << 30))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def partial_folder(out: Path) -> Path:
    """``.<out>.partial`` beside `out` (the dataset folder is replaced whole), made if
    missing; a link or a file there is refused."""
    partial = out.parent / f".{out.name}.partial"
    for _ in range(2):  # before and after making it: nothing is planted between
        if partial.is_symlink() or (partial.exists() and not partial.is_dir()):
            raise ConfigError(f"{partial}: the pull's folder of partial files is a link or "
                              "a file; remove it, or give another out", parameters=("out",))
        partial.mkdir(parents=True, exist_ok=True)
    return partial


def claim(partial: Path, benchmark: BenchmarkLike, force: bool) -> None:
    """Record in `partial` the benchmark and metric its files belong to; refuse one of
    another benchmark unless `force` (its files are then fetched again and replaced
    by name as the models come, never read as this benchmark's)."""
    marker = partial / PARTIAL_MARKER
    held = recorded(marker)
    mine = {"format": PARTIAL_FORMAT, "benchmark": benchmark.name, "metric": benchmark.metric}
    if held.get("benchmark") and not force and (
            held.get("benchmark"), held.get("metric")) != (benchmark.name, benchmark.metric):
        raise ConfigError(
            f"{partial} holds the partial files of a {held.get('benchmark')} pull "
            f"({held.get('metric')}), not {benchmark.name}; give another out, or force to "
            "replace them", parameters=("out", "force"))
    if held != mine:
        atomic_write(marker, (json.dumps(mine) + "\n").encode())
