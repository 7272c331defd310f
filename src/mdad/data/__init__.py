"""Loading per-item evaluation results into a `ResponseMatrix`.

`load_dataset` and `read_results` read any dataset name or results path through the
registry of loaders (`mdad.data.registry.LOADERS`); `mdad.data.loader.Loader` says what
a loader is.

Each name loads its module on first use (PEP 562), so that importing one module of this
package (e.g. `mdad.data.synthetic`) does not import the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mdad._lazy import lazy_exports

# public name -> the module that defines it
_EXPORTS = {
    "DATASETS": "mdad.data.datasets",
    "DatasetSpec": "mdad.data.datasets",
    "data_search_path": "mdad.data.datasets",
    "locate": "mdad.data.datasets",
    "DataInfo": "mdad.data.info",
    "describe": "mdad.data.info",
    "Loader": "mdad.data.loader",
    "ResponseMatrix": "mdad.data.matrix",
    "MissingPolicy": "mdad.data.choices",
    "MissingReport": "mdad.data.missing",
    "resolve_missing": "mdad.data.missing",
    "LOADERS": "mdad.data.registry",
    "Dataset": "mdad.data.registry",
    "RawDataset": "mdad.data.registry",
    "dataset_options": "mdad.data.registry",
    "find_loader": "mdad.data.registry",
    "load_dataset": "mdad.data.registry",
    "read_dataset": "mdad.data.registry",
    "read_results": "mdad.data.registry",
    "Orientation": "mdad.data.choices",
    "load_wide_csv": "mdad.data.wide_csv",
}

__all__ = [
    "DATASETS",
    "LOADERS",
    "DataInfo",
    "Dataset",
    "DatasetSpec",
    "Loader",
    "MissingPolicy",
    "MissingReport",
    "Orientation",
    "RawDataset",
    "ResponseMatrix",
    "data_search_path",
    "dataset_options",
    "describe",
    "find_loader",
    "load_dataset",
    "load_wide_csv",
    "locate",
    "read_dataset",
    "read_results",
    "resolve_missing",
]

if TYPE_CHECKING:
    from mdad.data.choices import MissingPolicy, Orientation
    from mdad.data.datasets import DATASETS, DatasetSpec, data_search_path, locate
    from mdad.data.info import DataInfo, describe
    from mdad.data.loader import Loader
    from mdad.data.matrix import ResponseMatrix
    from mdad.data.missing import MissingReport, resolve_missing
    from mdad.data.registry import (
        LOADERS,
        Dataset,
        RawDataset,
        dataset_options,
        find_loader,
        load_dataset,
        read_dataset,
        read_results,
    )
    from mdad.data.wide_csv import load_wide_csv


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
