"""Selection methods: build a micro-benchmark from the seen pool."""

from mdad.selection import random as _random  # noqa: F401  (registers the methods)
from mdad.selection.base import MicroBenchmark, SeenPool, SelectionMethod
from mdad.selection.registry import METHODS, get_method, register

__all__ = ["METHODS", "MicroBenchmark", "SeenPool", "SelectionMethod", "get_method", "register"]
