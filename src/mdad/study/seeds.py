"""Random streams derived from (seed, run, method, size, n_sources).

Every random choice of a study comes from one of these generators, so any cell can
be recomputed alone, in any order, on any backend, to the same numbers.
"""

from __future__ import annotations

import zlib

import numpy as np

_RUN_STREAM = 0
_CELL_STREAM = 1
_METRIC_STREAM = 2
_POOL_STREAM = 3


def _stable_id(name: str) -> int:
    return zlib.crc32(name.encode("utf-8"))


def run_rng(seed: int, run: int) -> np.random.Generator:
    """The generator of a run's shared design: model draws and seen/unseen split."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_RUN_STREAM, run)))


def cell_rng(seed: int, run: int, method: str, size: int, n_sources: int) -> np.random.Generator:
    """The generator of one cell: a method building a micro-benchmark of one size."""
    key = (_CELL_STREAM, run, _stable_id(method), size, n_sources)
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


def pool_seed(seed: int, run: int, n_sources: int, stream: str = "") -> np.random.SeedSequence:
    """The seed of work shared by all cells on one seen pool (e.g. an IRT fit); a
    non-empty `stream` (a subtask) gets seeds of its own."""
    key = (_POOL_STREAM, run, n_sources, *((_stable_id(stream),) if stream else ()))
    return np.random.SeedSequence(seed, spawn_key=key)


def metric_rng(seed: int, *labels: str | int) -> np.random.Generator:
    """The generator of a metric's bootstrap for one group (method, size, ...)."""
    key = (_METRIC_STREAM, *(_stable_id(x) if isinstance(x, str) else x for x in labels))
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))
