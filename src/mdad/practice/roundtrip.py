"""Round trips: how often `estimate`'s intervals and lists hold for models the
micro-benchmark was not selected with, measured as a user meets them.

The dataset's models are split into folds; each fold's micro-benchmarks (every size at
once) are selected from the other models (`select_microbenchmarks(..., models=...)`) and
every model of the fold is estimated from its real answers on the selected items
(`estimate_score`), with its 95% interval and its above and below lists. An adaptive
method is started on the other models (`start_adaptive_test(..., models=...)`) and the
fold's models take the test on their real answers. `split="top"` (or "bottom") selects
from the models outside the top (bottom) decile and estimates that decile: new models
beyond the reference models.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from mdad import streams
from mdad.data.registry import Dataset
from mdad.errors import ConfigError, check_type, check_whole
from mdad.practice.calibration import deciles

if TYPE_CHECKING:
    from mdad.practice.bundle import MicroBenchmarkFile

SPLITS = ("folds", "top", "bottom")
GROUPS = ("bottom decile", "middle", "top decile")


@dataclass(frozen=True)
class RoundTrip:
    """Held-out estimates, one row per (size, seed, held-out model).

    Attributes
    ----------
    method, dataset, split : what was run.
    size, seed, model : int arrays of shape (rows,); `model` indexes the dataset's models.
    truth, estimate, low, high : float arrays of shape (rows,), fractions.
    listed, wrong : int arrays of shape (rows,), the reference models listed above or
        below, and how many of those the true accuracies order the other way or tie
        (0 for adaptive methods, which list none).
    beyond : bool array of shape (rows,), the estimate carries the notice that the model
        may lie beyond the models the interval was calibrated on.
    group : int array of shape (rows,), 0 bottom decile, 1 middle, 2 top decile, by the
        model's true accuracy among all the dataset's models.
    fold : int array of shape (rows,), the fold of the seed the row was held out in.
    belts : for a calibrated static method, each (seed, fold, size)'s belt inputs: dicts
        of "seed", "fold", "size", and "cv_truth" and "cv_estimate" (float arrays, the
        micro-benchmark file's held-out pairs its belt is fitted on); empty otherwise.
        With them another belt can be tried on the same round trip without selecting
        again (`Calibration.fit(cv_truth, cv_estimate).interval(estimate)` is the row's
        interval).
    """

    method: str
    dataset: str
    split: str
    size: np.ndarray
    seed: np.ndarray
    model: np.ndarray
    truth: np.ndarray
    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    listed: np.ndarray
    wrong: np.ndarray
    beyond: np.ndarray
    group: np.ndarray
    fold: np.ndarray
    belts: tuple[dict[str, Any], ...] = ()

    @property
    def covered(self) -> np.ndarray:
        return (self.low <= self.truth) & (self.truth <= self.high)

    def summary(self) -> list[dict[str, object]]:
        """One row per size: coverage (fraction) in each group and overall, the mean
        interval width (fraction), the listed verdicts and the share of them wrong
        (None when none were listed), and how many estimates each figure rests on."""
        rows = []
        for size in np.unique(self.size):
            at = self.size == size
            row: dict[str, object] = {"method": self.method, "dataset": self.dataset,
                                      "split": self.split, "size": int(size),
                                      "estimates": int(at.sum()),
                                      "coverage": float(self.covered[at].mean())}
            for k, name in enumerate(GROUPS):
                part = at & (self.group == k)
                row[name] = float(self.covered[part].mean()) if part.any() else None
                row[f"{name} estimates"] = int(part.sum())
            row["width"] = float((self.high - self.low)[at].mean())
            row["notice"] = float(self.beyond[at].mean())
            listed = int(self.listed[at].sum())
            row["listed"] = listed
            row["wrong share"] = float(self.wrong[at].sum() / listed) if listed else None
            rows.append(row)
        return rows


def round_trip(dataset: Dataset, method: str, sizes: Sequence[int], *,
               seeds: Sequence[int] = (0, 1), folds: int = 5, split: str = "folds",
               progress: Callable[[str], None] | None = None,
               cache: dict[Any, Any] | None = None) -> RoundTrip:
    """Held-out round trips of `method` at each of `sizes`: do `estimate`'s intervals hold?

    The dataset's models are split into folds; each fold's micro-benchmarks (every size
    at once) are selected from the other models (`select_microbenchmarks(...,
    models=...)`) and every model of the fold is estimated from its real answers on the
    selected items (`estimate_score`), with its 95% interval and its above and below
    lists. An adaptive method is started on the other models (`start_adaptive_test(...,
    models=...)`) and the fold's models take the test (batch 1) on their real answers,
    read after each of `sizes` answers. See the module docstring.

    Parameters
    ----------
    dataset : Dataset
        The benchmark's models and items (`load_dataset`).
    method : str
        The selection method, or an adaptive one (``adaptive``, ``adaptive-md``,
        ``adaptive-cv``; the last is started once per size, its budget that size).
    sizes : Sequence[int]
        Micro-benchmark sizes (for an adaptive method, items answered): a non-empty
        list of whole numbers >= 1.
    seeds : Sequence[int], default (0, 1)
        Seeds, a non-empty list of whole numbers >= 0: each draws its own folds and
        selections.
    folds : int, default 5
        Folds of the models, at least 2 (with ``split="folds"``).
    split : str, default "folds"
        ``"folds"``: every model is held out once per seed. ``"top"`` (or
        ``"bottom"``): select from the models outside the top (bottom) decile of
        accuracy and estimate that decile: new models beyond the reference models.
    progress : Callable[[str], None] or None, default None
        Called with one line of text as each seed's fold is done.
    cache : dict or None, default None
        Passed to `select_microbenchmarks`: give one dict to the round trips of several
        methods of one dataset, seeds, folds and split, and they share their pools'
        work (tinyBenchmarks' MAP, p-IRT and gp-IRT variants fit one IRT model); the
        results are the same as without. Unused by adaptive methods.

    Returns
    -------
    RoundTrip
        One row per (size, seed, held-out model): the model's true accuracy, its
        estimate and 95% interval (accuracy fractions), the reference models listed
        above or below it and how many of those are wrong, whether the estimate was
        flagged as beyond the reference models, and the model's decile group.
        `RoundTrip.summary` gives the coverage by size.

    Raises
    ------
    ConfigError
        For a dataset that is not a `Dataset`, sizes or seeds that are not non-empty
        lists of whole numbers, an unknown split, fewer than 2 folds, or a progress
        that is not a function; and as `select_microbenchmarks` or
        `start_adaptive_test` do (an unknown method, a size it cannot build).
    DataError
        As `select_microbenchmarks` or `start_adaptive_test` do.
    """
    from mdad.practice.adaptive_state import ADAPTIVE_METHODS

    check_type(dataset, Dataset, "dataset", "a Dataset (mdad.load_dataset(name))")
    _whole_numbers(sizes, "sizes", minimum=1)
    _whole_numbers(seeds, "seeds", minimum=0)
    if progress is not None and not callable(progress):
        raise ConfigError("progress must be a function of one line of text, or None",
                          parameters=("progress",))
    if split not in SPLITS:
        raise ConfigError(f"split must be one of {', '.join(SPLITS)}; got {split!r}",
                          parameters=("split",))
    check_whole(folds, "folds", minimum=2)
    matrix = dataset.matrix
    truth = matrix.accuracy()
    group = deciles(truth)
    rows: dict[str, list] = {k: [] for k in ("size", "seed", "fold", "model", "truth",
                                             "estimate", "low", "high", "listed", "wrong",
                                             "beyond")}
    belts: list[dict[str, Any]] = []
    say = progress or (lambda message: None)
    for seed in seeds:
        for fold, held in enumerate(_held_out(group, split, folds, seed)):
            train = np.setdiff1d(np.arange(matrix.n_models), held)
            # each fold its own draw: a seed's folds share items otherwise
            selection_seed = streams.derived_seed(seed, "round-trip", "select", fold)
            if method in ADAPTIVE_METHODS:
                parts = _adaptive(dataset, method, sizes, selection_seed, train, held)
            else:
                parts, inputs = _static(dataset, method, sizes, selection_seed, train, held,
                                        cache)
                belts += [{"seed": seed, "fold": fold, **part} for part in inputs]
            for size, estimate, low, high, listed, wrong, beyond in parts:
                for key, value in (("size", np.full(held.size, size)),
                                   ("seed", np.full(held.size, seed)),
                                   ("fold", np.full(held.size, fold)), ("model", held),
                                   ("truth", truth[held]), ("estimate", estimate),
                                   ("low", low), ("high", high), ("listed", listed),
                                   ("wrong", wrong), ("beyond", beyond)):
                    rows[key].append(value)
            say(f"{method}: seed {seed}, {held.size} held-out models done")
    arrays = {k: np.concatenate(v) for k, v in rows.items()}
    return RoundTrip(method, dataset.name, split, group=group[arrays["model"]],
                     belts=tuple(belts), **arrays)



def _whole_numbers(values: object, parameter: str, minimum: int) -> None:
    """Refuse `values` unless a non-empty list (or 1-D array) of whole numbers >=
    `minimum`, naming `parameter`."""
    if (isinstance(values, str) or not isinstance(values, Sequence | np.ndarray)
            or np.ndim(values) != 1 or not len(values)):
        raise ConfigError(f"{parameter} must be a non-empty list of whole numbers; got "
                          f"{values!r}", parameters=(parameter,))
    for value in values:
        check_whole(value, parameter, minimum=minimum)

def _held_out(group: np.ndarray, split: str, folds: int, seed: int) -> list[np.ndarray]:
    if split == "top":
        return [np.flatnonzero(group == 2)]
    if split == "bottom":
        return [np.flatnonzero(group == 0)]
    order = streams.rng(seed, "round-trip", "folds").permutation(group.size)
    return [np.sort(part) for part in np.array_split(order, folds)]


def _static(dataset: Dataset, method: str, sizes: Sequence[int], seed: int,
            train: np.ndarray, held: np.ndarray, cache: dict[Any, Any] | None
            ) -> tuple[list[tuple], list[dict[str, Any]]]:
    """For each of `sizes`: (size, estimates, lows, highs, listed and wrong counts,
    notices) of the `held` models by a micro-benchmark of that size selected from the
    `train` models; and the belt inputs of those with a belt (`RoundTrip.belts`)."""
    from mdad.practice.bundle import select_microbenchmarks

    bundles = select_microbenchmarks(dataset, method, sizes, seed=seed, models=train,
                                     cache=cache)
    inputs = [{"size": size, "cv_truth": np.asarray(bundle.cv_truth, dtype=np.float64),
               "cv_estimate": np.asarray(bundle.cv_estimate, dtype=np.float64)}
              for size, bundle in zip(sizes, bundles, strict=True)
              if bundle.calibration() is not None]
    return [(size, *_estimates(dataset, bundle, held))
            for size, bundle in zip(sizes, bundles, strict=True)], inputs


def _estimates(dataset: Dataset, bundle: MicroBenchmarkFile,
               held: np.ndarray) -> tuple[np.ndarray, ...]:
    from mdad.practice.estimate import estimate_score
    from mdad.practice.results import ItemScores

    matrix = dataset.matrix
    column = {str(item): k for k, item in enumerate(matrix.item_ids)}
    items = [column[item] for item in bundle.items]
    scores = matrix.scores(held)[:, items]  # what their results give a user
    truth, reference = matrix.accuracy()[held], np.asarray(bundle.reference_accuracy)
    where = {name: k for k, name in enumerate(bundle.reference_models)}
    out = np.empty((6, held.size))
    for k, model in enumerate(held):
        answer = estimate_score(bundle, ItemScores(str(matrix.model_names[model]),
                                                   scores[k].astype(np.float64), [], 0))
        above = reference[[where[name] for name in answer.above]]
        below = reference[[where[name] for name in answer.below]]
        out[:, k] = (answer.accuracy, answer.low, answer.high, above.size + below.size,
                     np.sum(truth[k] <= above) + np.sum(truth[k] >= below), answer.beyond)
    return (out[0], out[1], out[2], out[3].astype(np.int64), out[4].astype(np.int64),
            out[5].astype(bool))


def _adaptive(dataset: Dataset, method: str, sizes: Sequence[int], seed: int,
              train: np.ndarray, held: np.ndarray) -> list[tuple]:
    """The `held` models' adaptive tests (batch 1) by a test started on the `train`
    models, read after each of `sizes` answers: (size, estimate, low, high, 0, 0,
    beyond). A test that chooses its model for its budget (`adaptive-cv`) is started
    once per size, with that size as its budget (the starts share their fits), and
    read where it stops."""
    from mdad.practice.adaptive import run_batches, start_adaptive_test
    from mdad.practice.adaptive_state import ADAPTIVE_METHODS

    scores = dataset.matrix.scores(held).astype(np.float64)
    zeros = np.zeros(held.size, dtype=np.int64)
    chooses = ADAPTIVE_METHODS[method] is None
    parts: list[tuple] = []
    fits: dict = {}  # the sizes' tests share their fits
    for budget in (sizes if chooses else [max(sizes)]):
        test = start_adaptive_test(dataset, budget=budget, seed=seed, method=method,
                                   models=train, cache=fits)
        a = test.discrimination
        counts, estimates = run_batches(a if a.shape[1] > 1 else a[:, 0], test.difficulty,
                                        scores, test.budget, 1)
        for size in ([budget] if chooses else sizes):
            given = min(size, test.budget)  # a chosen test may stop before its budget
            estimate = estimates[counts.index(given)]
            low, high = test.interval_at(estimate, given)
            parts.append((size, estimate, low, high, zeros, zeros,
                          test.beyond_at(estimate, given)))
    return parts
