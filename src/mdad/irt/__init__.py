"""Item response theory: the multidimensional 2PL model behind tinyBenchmarks."""

from mdad.irt.model import IrtFit, MultidimensionalIrt, item_curve, map_ability

__all__ = ["IrtFit", "MultidimensionalIrt", "item_curve", "map_ability"]
