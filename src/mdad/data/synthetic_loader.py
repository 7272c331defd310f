"""The loader of ``synthetic:<shape>`` datasets (see `mdad.data.synthetic`).

It hands `mdad.data.synthetic` the real data to calibrate on: the named datasets, read
by the function the registry gives it, so that neither this module nor
`mdad.data.synthetic` imports the registry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from mdad.data.datasets import DATASETS, DatasetSpec, find_dataset_file
from mdad.data.matrix import ResponseMatrix
from mdad.data.missing import resolve_missing
from mdad.data.synthetic import PREFIX, synthetic_matrix

DEFAULT_MODELS = 420


@dataclass(frozen=True)
class NamedRealData:
    """`mdad.data.synthetic.RealData` from the named datasets on the data search path.

    `read_named` reads a named dataset's matrix as its spec says (before any
    missing-data policy).
    """

    read_named: Callable[[str], ResponseMatrix]

    def path(self, name: str) -> Path:
        return find_dataset_file(DATASETS[name])

    def matrix(self, name: str) -> ResponseMatrix:
        return resolve_missing(self.read_named(name))[0]


@dataclass(frozen=True)
class SyntheticLoader:
    """``synthetic:<shape>``: a leaderboard drawn from an IRT model fitted on real data.

    Options: `n_models` (2 to 5,000; default 420) and `data_seed` (the seed that draws
    the leaderboard; default 0).
    """

    read_named: Callable[[str], ResponseMatrix]
    name: ClassVar[str] = "synthetic"
    reads: ClassVar[str] = "a synthetic:<shape> name"
    options: ClassVar[tuple[str, ...]] = ("n_models", "data_seed")

    def recognises(self, source: str | Path) -> bool:
        return str(source).startswith(PREFIX)

    def load(self, source: str | Path, *, n_models: int = DEFAULT_MODELS,
             data_seed: int = 0) -> ResponseMatrix:
        return synthetic_matrix(str(source).removeprefix(PREFIX),
                                NamedRealData(self.read_named),
                                n_models=n_models, data_seed=data_seed)

    def dataset_spec(self, source: str | Path) -> DatasetSpec:
        """GPQA's sizes for ``synthetic:gpqa``; no other defaults."""
        shape = str(source).removeprefix(PREFIX)
        return DatasetSpec(str(source), "", f"synthetic {shape}",
                           sizes=DATASETS["gpqa"].sizes if shape == "gpqa" else None)
