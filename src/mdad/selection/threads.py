"""Selection and estimation with one BLAS and OpenMP thread: the same bits on every
machine and backend, no contention between worker processes, and no waiting on
threads for matrices this small."""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from contextlib import AbstractContextManager


def one_thread(methods: Iterable[object] = ()) -> AbstractContextManager:
    """A context in which native libraries use one thread.

    threadpoolctl can limit only the libraries already loaded, so the `libraries`
    that `methods` (method classes or instances) import lazily are loaded first.
    """
    from threadpoolctl import threadpool_limits

    for method in methods:
        for module in getattr(method, "libraries", ()):
            importlib.import_module(module)
    return threadpool_limits(limits=1)
