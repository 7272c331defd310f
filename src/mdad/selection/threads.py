"""Selection and estimation with one BLAS and OpenMP thread: the same bits on every
backend and core count of one machine (a CPU of another kind may run other BLAS
kernels, with other last bits: docs/explanation/reproduction.md), no contention
between worker processes, and no waiting on threads for matrices this small."""

from __future__ import annotations

import importlib
import sys
import time
from collections.abc import Iterable
from contextlib import AbstractContextManager


def load_libraries(methods: Iterable[object], *, include_after_fit: bool = True) -> float:
    """Import the `libraries` that `methods` (method classes or instances) load lazily,
    without their `libraries_after_fit` unless `include_after_fit`; returns the seconds
    it took (0 for those already loaded): what a new process would pay again."""
    started = time.perf_counter()
    for method in methods:
        later = () if include_after_fit else getattr(method, "libraries_after_fit", ())
        for module in getattr(method, "libraries", ()):
            if module not in sys.modules and module not in later:
                importlib.import_module(module)
    return time.perf_counter() - started


def one_thread(methods: Iterable[object] = (), *, include_after_fit: bool = True
               ) -> AbstractContextManager:
    """A context in which native libraries use one thread.

    threadpoolctl can limit only the libraries already loaded, so the `libraries`
    that `methods` (method classes or instances) import lazily are loaded first
    (without their `libraries_after_fit` unless `include_after_fit`).
    """
    from threadpoolctl import threadpool_limits

    load_libraries(methods, include_after_fit=include_after_fit)
    return threadpool_limits(limits=1)
