"""Selection methods: build a micro-benchmark from the seen pool."""

# Importing a method's module registers it; this order is the order users see.
# isort: off
from mdad.selection import random as _random  # noqa: F401
from mdad.selection import diversity as _diversity  # noqa: F401
from mdad.selection import strata as _strata  # noqa: F401
from mdad.selection import anchor_points as _anchor_points  # noqa: F401
from mdad.selection import tinybenchmarks as _tinybenchmarks  # noqa: F401
# isort: on
from mdad.selection.base import MethodDefaults, MicroBenchmark, SeenPool, SelectionMethod
from mdad.selection.registry import METHODS, get_method, register

__all__ = ["METHODS", "MethodDefaults", "MicroBenchmark", "SeenPool", "SelectionMethod",
           "get_method", "register"]
