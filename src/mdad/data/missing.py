"""What to do with missing cells before a study: an explicit, reported policy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from mdad.data.choices import MissingPolicy
from mdad.data.matrix import ResponseMatrix
from mdad.errors import DataError, check_type


@dataclass(frozen=True)
class MissingReport:
    """What a policy removed, so that nothing is dropped silently.

    ``missing_by_model`` maps each model that had missing cells to their count;
    ``other_policy_works`` says whether the other drop policy would have left data
    (then `describe` offers it).
    `describe` names the policy by its `load_dataset` parameter, listed in `parameters`.
    """

    parameters: ClassVar[tuple[str, ...]] = ("missing",)

    policy: MissingPolicy
    n_missing: int
    dropped_items: tuple[str, ...]
    dropped_models: tuple[str, ...]
    missing_by_model: dict[str, int]
    other_policy_works: bool = True  # whether the other drop policy would leave data

    def describe(self) -> str:
        """One sentence saying what was dropped and why, or '' when nothing was. It
        names the other drop policy only when that one would leave data too."""
        if self.n_missing == 0:
            return ""
        culprits = ", ".join(f"{m} ({n})" for m, n in self.missing_by_model.items())
        if self.policy is MissingPolicy.DROP_ITEMS:
            return (
                f"dropped {len(self.dropped_items)} items that lack a result for at least one "
                f"model ({self.n_missing} cells without a result: {culprits})"
                + ("; set missing to drop-models to keep them and drop those models instead"
                   if self.other_policy_works else
                   "; drop-models is no alternative, as every model lacks some item")
            )
        return (
            f"dropped {len(self.dropped_models)} models that lack results "
            f"({self.n_missing} cells without a result: {culprits})"
            + ("; set missing to drop-items to keep them and drop the items instead"
               if self.other_policy_works else
               "; drop-items is no alternative, as every item lacks some model's result")
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
        With ``error`` when any cell is missing (naming the policies that would work),
        or when the policy would leave no data: then it names the other policy if that
        one would leave data, else (every model lacks some item and every item some
        model) the model and item with the most gaps and the fix, never a policy that
        would fail too.
    ConfigError
        For an unknown policy.
    """
    check_type(matrix, ResponseMatrix, "matrix", "a ResponseMatrix (read_results(path))")
    policy = MissingPolicy(missing)  # raises ConfigError naming `missing`
    gaps = matrix.missing
    per_model = gaps.sum(axis=1)
    report_counts = {
        str(name): int(n) for name, n in zip(matrix.model_names, per_model, strict=True) if n
    }
    n_missing = int(per_model.sum())
    if n_missing == 0:
        return matrix, MissingReport(policy, 0, (), (), {})
    complete_items = ~gaps.any(axis=0)
    complete_models = per_model == 0
    if not complete_items.any() and not complete_models.any():
        raise DataError(_neither_works(matrix, gaps, n_missing), parameters=("missing",))
    if policy is MissingPolicy.ERROR:
        model = next(iter(report_counts))
        working = [name for name, works in (("drop-items", complete_items.any()),
                                            ("drop-models", complete_models.any())) if works]
        raise DataError(
            f"{matrix.source}: {n_missing} cells lack a result (model {model} lacks "
            f"{report_counts[model]} items); set missing to {' or '.join(working)}",
            parameters=("missing",),
        )
    if policy is MissingPolicy.DROP_ITEMS:
        if not complete_items.any():
            raise DataError(
                f"{matrix.source}: every item lacks a result for some model, so drop-items "
                f"would leave no item; set missing to drop-models (it keeps "
                f"{int(complete_models.sum())} of {matrix.n_models} models)",
                parameters=("missing",))
        dropped = tuple(matrix.item_ids[~complete_items].tolist())
        return matrix.take(items=np.flatnonzero(complete_items)), MissingReport(
            policy, n_missing, dropped, (), report_counts, bool(complete_models.any())
        )
    if not complete_models.any():
        raise DataError(
            f"{matrix.source}: every model lacks some items, so drop-models would leave no "
            f"model; set missing to drop-items (it keeps {int(complete_items.sum())} of "
            f"{matrix.n_items} items)", parameters=("missing",))
    dropped = tuple(matrix.model_names[~complete_models].tolist())
    return matrix.take(models=np.flatnonzero(complete_models)), MissingReport(
        policy, n_missing, (), dropped, report_counts, bool(complete_items.any())
    )


def _neither_works(matrix: ResponseMatrix, gaps: np.ndarray, n_missing: int) -> str:
    """The message when every model lacks some item and every item lacks some model's
    result, so that both drop policies would leave nothing: the model and the item with
    the most gaps, and the fixes that work (fill the gaps, or trim the file)."""
    per_model, per_item = gaps.sum(axis=1), gaps.sum(axis=0)
    model, item = int(np.argmax(per_model)), int(np.argmax(per_item))
    return (
        f"{matrix.source}: {n_missing} of {gaps.size} cells lack a result, and neither "
        "drop-items nor drop-models would leave any data: every item lacks some model's "
        "result and every model lacks some item (model "
        f"{str(matrix.model_names[model])!r} lacks the most, {int(per_model[model])} of "
        f"{matrix.n_items} items; item {str(matrix.item_ids[item])!r} lacks the most, "
        f"{int(per_item[item])} of {matrix.n_models} models' results); fill the gaps, or "
        "remove the models or items with the most gaps from the file until one model or "
        "item is complete"
    )
