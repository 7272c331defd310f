"""Selection methods: build a micro-benchmark from the seen pool.

Each method is one class registered by its CLI name (see `MethodDefaults` for what
the project reads from it); other packages add methods through the ``mdad.methods``
entry point group.
"""

# Importing a method's module registers it; this order is the order users see.
# isort: off
from mdad.selection import random as _random  # noqa: F401
from mdad.selection import diversity as _diversity  # noqa: F401
from mdad.selection import strata as _strata  # noqa: F401
from mdad.selection import anchor_points as _anchor_points  # noqa: F401
from mdad.selection import tinybenchmarks as _tinybenchmarks  # noqa: F401
from mdad.selection import adaptive as _adaptive  # noqa: F401
from mdad.selection import adaptive_cv as _adaptive_cv  # noqa: F401
# isort: on
from mdad.selection.base import (
    ItemExposure,
    MethodDefaults,
    MicroBenchmark,
    SeenPool,
    SelectionMethod,
)
from mdad.selection.registry import (
    ENTRY_POINT_GROUP,
    METHODS,
    fast_methods,
    get_method,
    largest_size,
    method_class,
    paper_methods,
    register,
)

__all__ = ["ENTRY_POINT_GROUP", "METHODS", "ItemExposure", "MethodDefaults", "MicroBenchmark",
           "SeenPool", "SelectionMethod", "fast_methods", "get_method", "largest_size",
           "method_class", "paper_methods", "register"]
