"""Loading per-item evaluation results into a `ResponseMatrix`."""

from mdad.data.info import DataInfo, describe
from mdad.data.matrix import ResponseMatrix
from mdad.data.missing import MissingPolicy, MissingReport, resolve_missing
from mdad.data.registry import (
    DATASETS,
    Dataset,
    DatasetSpec,
    data_search_path,
    load_dataset,
    locate,
    read_results,
)
from mdad.data.wide_csv import Orientation, load_wide_csv

__all__ = [
    "DATASETS",
    "DataInfo",
    "Dataset",
    "DatasetSpec",
    "MissingPolicy",
    "MissingReport",
    "Orientation",
    "ResponseMatrix",
    "data_search_path",
    "describe",
    "load_dataset",
    "load_wide_csv",
    "locate",
    "read_results",
    "resolve_missing",
]
