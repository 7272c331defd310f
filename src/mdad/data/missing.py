"""What to do with missing cells before a study: an explicit, reported policy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from mdad.data.choices import MissingPolicy
from mdad.data.matrix import ResponseMatrix
from mdad.errors import ConfigError, DataError


@dataclass(frozen=True)
class MissingReport:
    """What a policy removed, so that nothing is dropped silently.

    ``missing_by_model`` maps each model that had missing cells to their count.
    `describe` names the policy by its `load_dataset` parameter, listed in `parameters`.
    """

    parameters: ClassVar[tuple[str, ...]] = ("missing",)

    policy: MissingPolicy
    n_missing: int
    dropped_items: tuple[str, ...]
    dropped_models: tuple[str, ...]
    missing_by_model: dict[str, int]

    def describe(self) -> str:
        """One sentence saying what was dropped and why, or '' when nothing was."""
        if self.n_missing == 0:
            return ""
        culprits = ", ".join(f"{m} ({n})" for m, n in self.missing_by_model.items())
        if self.policy is MissingPolicy.DROP_ITEMS:
            return (
                f"dropped {len(self.dropped_items)} items that lack a result for at least one "
                f"model ({self.n_missing} cells without a result: {culprits}); "
                "set missing to drop-models to keep them and drop those models instead"
            )
        return (
            f"dropped {len(self.dropped_models)} models that lack results "
            f"({self.n_missing} cells without a result: {culprits}); "
            "set missing to drop-items to keep them and drop the items instead"
        )


def resolve_missing(
    matrix: ResponseMatrix, missing: MissingPolicy | str = MissingPolicy.DROP_ITEMS
) -> tuple[ResponseMatrix, MissingReport]:
    """Return a matrix without missing cells, and a report of what was removed.

    Parameters
    ----------
    matrix : ResponseMatrix
    missing : MissingPolicy or str
        ``drop-items`` (default; every model is kept, items any model lacks are
        dropped), ``drop-models`` (every item is kept, models with a gap are dropped)
        or ``error``.

    Raises
    ------
    DataError
        With ``error`` when any cell is missing, or when the policy would leave no data.
    ConfigError
        For an unknown policy.
    """
    try:
        policy = MissingPolicy(missing)
    except ValueError:
        raise ConfigError(f"missing must be one of {', '.join(MissingPolicy)}; got "
                          f"{missing!r}", parameters=("missing",)) from None
    gaps = matrix.missing
    per_model = gaps.sum(axis=1)
    report_counts = {
        str(name): int(n) for name, n in zip(matrix.model_names, per_model, strict=True) if n
    }
    n_missing = int(per_model.sum())
    if n_missing == 0:
        return matrix, MissingReport(policy, 0, (), (), {})
    if policy is MissingPolicy.ERROR:
        model = next(iter(report_counts))
        raise DataError(
            f"{matrix.source}: {n_missing} cells lack a result (model {model} lacks "
            f"{report_counts[model]} items); set missing to drop-items or drop-models",
            parameters=("missing",),
        )
    if policy is MissingPolicy.DROP_ITEMS:
        keep = ~gaps.any(axis=0)
        if not keep.any():
            raise DataError(
                f"{matrix.source}: every item lacks a result for some model; "
                "set missing to drop-models", parameters=("missing",)
            )
        dropped = tuple(matrix.item_ids[~keep].tolist())
        return matrix.take(items=np.flatnonzero(keep)), MissingReport(
            policy, n_missing, dropped, (), report_counts
        )
    keep = per_model == 0
    if not keep.any():
        raise DataError(
            f"{matrix.source}: every model lacks some items; set missing to drop-items",
            parameters=("missing",),
        )
    dropped = tuple(matrix.model_names[~keep].tolist())
    return matrix.take(models=np.flatnonzero(keep)), MissingReport(
        policy, n_missing, (), dropped, report_counts
    )
