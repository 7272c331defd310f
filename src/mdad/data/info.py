"""A summary of a response matrix, for `mdad data info`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mdad.data.matrix import ResponseMatrix


@dataclass(frozen=True)
class DataInfo:
    """What a results matrix holds. Accuracies are fractions in [0, 1] over observed cells."""

    source: str
    sha256: str | None
    n_models: int
    n_items: int
    subtask_sizes: dict[str, int]
    min_accuracy: float
    max_accuracy: float
    mean_accuracy: float
    n_missing: int
    models_with_missing: int
    items_with_missing: int
    is_binary: bool
    has_confidence: bool


def describe(matrix: ResponseMatrix) -> DataInfo:
    """Summarise `matrix` (before any missing-data policy is applied)."""
    accuracy = matrix.accuracy()
    missing = matrix.missing
    sizes = np.bincount(matrix.subtask_codes, minlength=len(matrix.subtask_names))
    return DataInfo(
        source=matrix.source,
        sha256=matrix.sha256,
        n_models=matrix.n_models,
        n_items=matrix.n_items,
        subtask_sizes=dict(zip(matrix.subtask_names, sizes.tolist(), strict=True)),
        min_accuracy=float(accuracy.min()),
        max_accuracy=float(accuracy.max()),
        mean_accuracy=float(accuracy.mean()),
        n_missing=int(missing.sum()),
        models_with_missing=int(missing.any(axis=1).sum()),
        items_with_missing=int(missing.any(axis=0).sum()),
        is_binary=matrix.is_binary,
        has_confidence=matrix.confidence is not None,
    )
