"""Item response theory: the multidimensional 2PL model behind tinyBenchmarks."""

from mdad.irt.model import IrtFit, MultidimensionalIrt, map_ability

__all__ = ["IrtFit", "MultidimensionalIrt", "map_ability"]
