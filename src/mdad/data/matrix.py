"""The `ResponseMatrix`: who answered what, and how well."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mdad.errors import DataError


def _as_labels(values: Any, what: str, expected: int, source: str) -> np.ndarray:
    labels = np.asarray(values).astype(str)
    if labels.shape != (expected,):
        raise DataError(
            f"{source}: {what} must have shape ({expected},), got {labels.shape}"
        )
    return labels


def _first_duplicate(labels: np.ndarray) -> str | None:
    uniques, counts = np.unique(labels, return_counts=True)
    repeated = uniques[counts > 1]
    return str(repeated[0]) if repeated.size else None


def _is_binary(values: np.ndarray) -> bool:
    """True when every non-NaN value is exactly 0 or 1."""
    return bool(np.all((values == 0) | (values == 1) | np.isnan(values)))


def _block(values: np.ndarray, models: np.ndarray | slice | None,
           items: np.ndarray | slice | None) -> np.ndarray:
    """values[models][:, items], with None for all; a DataError naming `models` or
    `items` for an index outside `values`."""
    rows = values[slice(None) if models is None else _index(models, values.shape[0], "models")]
    return rows[:, slice(None) if items is None else _index(items, values.shape[1], "items")]


def _readonly(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class ResponseMatrix:
    """Per-item results of many models on one benchmark.

    Parameters
    ----------
    correctness : array of shape (n_models, n_items)
        Score of each model on each item as a fraction in [0, 1]: 0/1 for exact
        correctness, a float for partial credit. NaN marks a missing cell, which is
        never read as wrong. Stored as uint8 (one byte a cell) when every cell is
        observed and 0 or 1, as float32 otherwise; read it through `scores` for
        arithmetic.
    model_names : array of shape (n_models,)
        Unique model names.
    item_ids : array of shape (n_items,)
        Unique item identifiers.
    subtasks : array of shape (n_items,), optional
        Subtask label of each item. Defaults to one subtask named ``"all"``.
    confidence : array of shape (n_models, n_items), optional
        Each model's normalised probability of the gold option, in [0, 1], NaN where
        unknown. Stored as float32.
    source : str
        Where the data came from (a path or a dataset name), used in messages.
    sha256 : str, optional
        Digest of the file(s) the matrix was read from.
    notes : tuple of str
        What reading the source decided that the user should hear, one line each
        (the layout an ``auto`` reading chose, text columns left out as metadata,
        lm-eval folders not read).
        `take` keeps them.

    Raises
    ------
    DataError
        On shape mismatches, values outside [0, 1], duplicate names or ids, or a
        model or item without a single observed value.

    Examples
    --------
    >>> m = ResponseMatrix([[1, 0, 1], [0, 0, 1]], ["a", "b"], ["q1", "q2", "q3"])
    >>> m.n_models, m.n_items, m.accuracy().tolist()
    (2, 3, [0.6666666666666666, 0.3333333333333333])
    >>> m.correctness.dtype
    dtype('uint8')
    """

    correctness: np.ndarray
    model_names: np.ndarray
    item_ids: np.ndarray
    subtasks: np.ndarray | None = None
    confidence: np.ndarray | None = None
    source: str = "<memory>"
    sha256: str | None = None
    notes: tuple[str, ...] = ()
    _subtask_codes: np.ndarray = field(init=False, repr=False)
    _subtask_names: tuple[str, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        src = self.source
        correctness = np.asarray(self.correctness)
        if correctness.dtype.kind == "O":  # e.g. None for a missing cell
            try:
                correctness = np.asarray(correctness, dtype=np.float32)
            except (TypeError, ValueError):
                pass
        if correctness.dtype.kind not in "buif":  # text, complex, objects: no scores
            raise DataError(f"{src}: correctness must hold numbers, not {correctness.dtype}",
                            parameters=("correctness",))
        if correctness.dtype.kind not in "bu":  # bool and unsigned: complete already
            correctness = np.asarray(correctness, dtype=np.float32)
        if correctness.ndim != 2:
            raise DataError(f"{src}: correctness must be a 2-D models x items array")
        n_models, n_items = correctness.shape
        if n_models == 0 or n_items == 0:
            raise DataError(f"{src}: no data ({n_models} models x {n_items} items)")
        observed = ~np.isnan(correctness)
        bad = observed & ((correctness < 0) | (correctness > 1))
        if bad.any():
            m, i = np.argwhere(bad)[0]
            raise DataError(
                f"{src}: correctness of model {self.model_names[m]!s} on item "
                f"{self.item_ids[i]!s} is {correctness[m, i]:g}; scores must be in [0, 1]"
            )
        model_names = _as_labels(self.model_names, "model_names", n_models, src)
        item_ids = _as_labels(self.item_ids, "item_ids", n_items, src)
        for labels, what in ((model_names, "model"), (item_ids, "item")):
            blank = np.flatnonzero(np.char.strip(labels.astype(str)) == "")
            if blank.size:
                raise DataError(f"{src}: {what} {blank[0] + 1} of {labels.size} has an empty "
                                f"name; give every {what} a name")
        if (dup := _first_duplicate(model_names)) is not None:
            raise DataError(
                f"{src}: model name {str(dup)!r} appears more than once; names must be unique"
            )
        if (dup := _first_duplicate(item_ids)) is not None:
            raise DataError(f"{src}: item id {str(dup)!r} appears more than once; ids must be "
                            "unique")
        empty_models = ~observed.any(axis=1)
        if empty_models.any():
            raise DataError(
                f"{src}: model {model_names[empty_models][0]} has no data on any item; "
                "remove it from the input"
            )
        empty_items = ~observed.any(axis=0)
        if empty_items.any():
            raise DataError(
                f"{src}: item {item_ids[empty_items][0]} has no data for any model; "
                "remove it from the input"
            )
        subtasks = (
            np.full(n_items, "all")
            if self.subtasks is None
            else _as_labels(self.subtasks, "subtasks", n_items, src)
        )
        names, first, codes = np.unique(subtasks, return_index=True, return_inverse=True)
        order = np.argsort(first)  # subtasks numbered in order of first appearance
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        confidence = self.confidence
        if confidence is not None:
            confidence = np.array(confidence, dtype=np.float32)  # always a copy
            if confidence.shape != correctness.shape:
                raise DataError(
                    f"{src}: confidence has shape {confidence.shape}, "
                    f"correctness {correctness.shape}; they must match"
                )
            finite = ~np.isnan(confidence)
            if (finite & ((confidence < 0) | (confidence > 1))).any():
                raise DataError(f"{src}: gold-option confidences must be probabilities in [0, 1]")
        if correctness.dtype.kind in "bu" or (observed.all() and _is_binary(correctness)):
            correctness = correctness.astype(np.uint8)
        else:  # never a view of the caller's array (a memmap, a DataFrame, ...)
            correctness = correctness.copy()
        set_ = object.__setattr__
        set_(self, "correctness", _readonly(correctness))
        set_(self, "model_names", _readonly(model_names))
        set_(self, "item_ids", _readonly(item_ids))
        set_(self, "subtasks", _readonly(subtasks))
        set_(self, "confidence", None if confidence is None else _readonly(confidence))
        set_(self, "_subtask_codes", _readonly(rank[codes].astype(np.int64)))
        set_(self, "_subtask_names", tuple(str(n) for n in names[order]))

    @property
    def n_models(self) -> int:
        return int(self.correctness.shape[0])

    @property
    def n_items(self) -> int:
        return int(self.correctness.shape[1])

    @property
    def subtask_names(self) -> tuple[str, ...]:
        """Subtask names in order of first appearance."""
        return self._subtask_names

    @property
    def subtask_codes(self) -> np.ndarray:
        """Integer subtask of each item, shape (n_items,), indexing `subtask_names`."""
        return self._subtask_codes

    @property
    def missing(self) -> np.ndarray:
        """Boolean mask of missing cells, shape (n_models, n_items)."""
        if self.correctness.dtype == np.uint8:
            return np.zeros(self.correctness.shape, dtype=bool)
        return np.isnan(self.correctness)

    @property
    def n_missing(self) -> int:
        return int(self.missing.sum())

    @property
    def is_binary(self) -> bool:
        """True when every observed score is exactly 0 or 1."""
        return self.correctness.dtype == np.uint8 or _is_binary(self.correctness)

    def accuracy(self) -> np.ndarray:
        """Mean score of each model over its observed items, shape (n_models,), float64."""
        if self.correctness.dtype == np.uint8:
            return self.correctness.mean(axis=1, dtype=np.float64)
        return np.nanmean(self.correctness, axis=1, dtype=np.float64)

    def scores(self, models: np.ndarray | slice | None = None,
               items: np.ndarray | slice | None = None) -> np.ndarray:
        """Correctness of the given models (rows) on the given items (columns) as
        float32, NaN where missing: shape (len(models), len(items)), all when None."""
        return _block(self.correctness, models, items).astype(np.float32)

    def gold_confidence(self, models: np.ndarray | slice | None = None,
                        items: np.ndarray | slice | None = None) -> np.ndarray:
        """Gold-option confidence, or correctness where no confidence is known, of the
        given models on the given items (all when None).

        Returns float32 of shape (len(models), len(items)); only that block is built.
        """
        if self.confidence is None:
            return self.scores(models, items)
        block = _block(self.confidence, models, items)
        if not block.flags.writeable:  # a view of the read-only confidences
            block = block.copy()
        unknown = np.isnan(block)
        if unknown.any():
            block[unknown] = _block(self.correctness, models, items)[unknown]
        return block

    def take(
        self, models: np.ndarray | slice | None = None, items: np.ndarray | slice | None = None
    ) -> ResponseMatrix:
        """A new matrix with only the given model and item indices (or boolean masks).

        Raises
        ------
        DataError
            For an index outside the matrix, naming `models` or `items`.
        """
        rows = slice(None) if models is None else _index(models, self.n_models, "models")
        cols = slice(None) if items is None else _index(items, self.n_items, "items")
        conf = None if self.confidence is None else self.confidence[rows][:, cols]
        return ResponseMatrix(
            correctness=self.correctness[rows][:, cols],
            model_names=self.model_names[rows],
            item_ids=self.item_ids[cols],
            subtasks=self.subtasks[cols] if self.subtasks is not None else None,
            confidence=conf,
            source=self.source,
            sha256=self.sha256,
            notes=self.notes,
        )

    def model_index(self, names: list[str], *, what: str = "model",
                    parameter: str | None = None) -> np.ndarray:
        """Indices of the named models, in the given order; `what` starts the error
        message, which names `parameter` (the caller's, that holds `names`).

        Raises
        ------
        DataError
            If a name is unknown or repeated.
        """
        parameters = () if parameter is None else (parameter,)
        lookup = {name: i for i, name in enumerate(self.model_names.tolist())}
        unknown = [n for n in names if n not in lookup]
        if unknown:
            raise DataError(
                f"{what} {str(unknown[0])!r} is not in {self.source} "
                f"({len(unknown)} of {len(names)} names unknown); check the spelling",
                parameters=parameters)
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise DataError(f"{what} {str(dup)!r} is listed more than once",
                            parameters=parameters)
        return np.array([lookup[n] for n in names], dtype=np.int64)


def _index(index: np.ndarray | slice, size: int, parameter: str) -> np.ndarray | slice:
    """`index` (a slice, a boolean mask or indices) into `size` rows or columns, or a
    DataError naming `parameter`."""
    if isinstance(index, slice):
        return index
    values = np.asarray(index)
    if values.size == 0:
        return values.astype(np.int64).reshape(0)
    if values.dtype == bool:
        if values.shape != (size,):
            raise DataError(f"{parameter}: a mask must have {size} entries; got "
                            f"{values.shape}", parameters=(parameter,))
        return values
    if (values.ndim != 1 or not np.issubdtype(values.dtype, np.integer)
            or ((values < -size) | (values >= size)).any()):
        raise DataError(f"{parameter} must be indices in -{size}..{size - 1} (or a mask of "
                        f"{size}); got {values.dtype} of shape {values.shape}",
                        parameters=(parameter,))
    return values

