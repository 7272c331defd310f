"""Random streams derived from (seed, run, method, size, n_sources).

Every random choice of a study comes from one of these generators, so any cell can
be recomputed alone, in any order, on any backend, to the same numbers. They are
`mdad.streams` whose first label is a small whole number (the study's streams
predate the names the rest of the library uses; their draws are kept).
"""

from __future__ import annotations

import numpy as np

from mdad.streams import rng, stream

_RUN_STREAM = 0
_CELL_STREAM = 1
_METRIC_STREAM = 2
_POOL_STREAM = 3


def run_rng(seed: int, run: int) -> np.random.Generator:
    """The generator of a run's shared design: model draws and seen/unseen split."""
    return rng(seed, _RUN_STREAM, run)


def cell_rng(seed: int, run: int, method: str, size: int, n_sources: int) -> np.random.Generator:
    """The generator of one cell: a method building a micro-benchmark of one size."""
    return rng(seed, _CELL_STREAM, run, method, size, n_sources)


def pool_seed(seed: int, run: int, n_sources: int, stream_name: str = "") -> np.random.SeedSequence:
    """The seed of work shared by all cells on one seen pool (e.g. an IRT fit); a
    non-empty `stream_name` (a subtask) gets seeds of its own."""
    return stream(seed, _POOL_STREAM, run, n_sources, *((stream_name,) if stream_name else ()))


def metric_rng(seed: int, *labels: str | int) -> np.random.Generator:
    """The generator of a metric's bootstrap for one group (method, size, ...)."""
    return rng(seed, _METRIC_STREAM, *labels)
