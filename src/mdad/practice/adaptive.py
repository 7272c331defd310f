"""An adaptive test of one new model, batch by batch, with lm-evaluation-harness.

`start_adaptive_test` fits the adaptive method's IRT model on every model of a dataset
and cross-validates the whole procedure on held-out models: each fold's models take
the test with the same budget and batch size on their real answers, and the root mean
square error of the estimate after each batch is stored. The test then alternates
between `next_items` (the batch most informative at the current ability, at the start
the prior mean: the fit is standardised, so the prior is the fitted models' spread)
and `record` (the model's answers, which move the MAP ability). The estimate at any
time is the predicted accuracy on all the dataset's items, with a 95% interval of
1.96 times the larger of the cross-validated error for that many answers and the
model-based standard error (the IRT fit's own view, which leaves out its
misfit). The test is finished when the budget is spent or the ability's standard
error falls below `target_se`.

Between batches the test lives in a JSON state file (`AdaptiveTest.save` / `load`).
Its schema (`mdad.practice.adaptive_state`) checks every field of it, types, ranges
and how fields relate, before any number reaches numpy: a damaged or tampered file is
refused naming the field.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mdad import streams
from mdad._version import version
from mdad.data.registry import Dataset
from mdad.errors import ConfigError, DataError, check_integer, check_path, check_type, check_whole
from mdad.irt.cat import AdaptiveSession, best_items, posterior_ability, predicted_accuracy, sigmoid
from mdad.irt.cat_cv import AdaptiveChoice
from mdad.practice.adaptive_state import (
    ADAPTIVE_METHODS,
    LM_EVAL_NAME,
    STATE_FORMAT,
    checked_state,
)
from mdad.practice.bundle import check_read_with, lm_eval_ids, samples_by_task
from mdad.practice.calibration import (
    CV_FOLDS,
    MIN_MODELS,
    Calibration,
    cross_validation_folds,
    deciles,
)
from mdad.practice.compare import Z95

if TYPE_CHECKING:
    from mdad.irt.model import MultidimensionalIrt
    from mdad.practice.results import ItemScores

STATE_MAX_BYTES = 64 << 20  # 12,032 MMLU-Pro items in 3-D take 1 MB
STATE_FIX = "pass the state file of `mdad adaptive start`, or start a test with it"


@dataclass(frozen=True)
class AdaptiveEstimate:
    """Where an adaptive test stands.

    Attributes
    ----------
    accuracy, low, high : the estimated accuracy on all the dataset's items and its
        95% interval (fractions).
    answered, budget : items answered, and the most the test gives.
    ability_standard_error : the ability's, on the IRT scale, not accuracy (for a
        multidimensional fit, along its least-determined direction).
    cv_error : the cross-validated root mean square error for this many answers.
    interval_how : how the interval was made.
    beyond : the estimate lies past the band of the strongest (weakest) held-out
        model's test: the model may lie beyond the dataset's models.
    low_censored, high_censored : that end of the interval is where the calibration
        stops speaking (`Calibration.censored`), not a bound the data set.
    finished : True once the budget is spent or `ability_standard_error` < the target.
    reason : why it finished, or what comes next.
    """

    accuracy: float
    low: float
    high: float
    answered: int
    budget: int
    ability_standard_error: float
    cv_error: float
    finished: bool
    reason: str
    interval_how: str = ""
    beyond: bool = False
    low_censored: bool = False
    high_censored: bool = False


@dataclass
class AdaptiveTest:
    """One model's adaptive test over a dataset's items (see the module docstring).

    Use `start_adaptive_test` to make one, `save`/`load` to keep it between batches.
    """

    dataset: str
    sha256: str
    method: str
    metric: str
    item_ids: list[str]
    lm_eval_items: list[str] | None
    discrimination: np.ndarray  # (n_items, dims)
    difficulty: np.ndarray  # (n_items,)
    budget: int
    batch: int
    target_se: float | None
    cv_answered: list[int]
    cv_error: list[float]
    # per cv_answered, `Calibration.to_list()`; None for a /1 state or too few models
    cv_calibration: list[list[float]] | None = None
    # adaptive-cv's cross-validated model; its stop is the budget
    choice: AdaptiveChoice | None = None
    answers: dict[str, float] = field(default_factory=dict)
    pending: list[str] = field(default_factory=list)
    round: int = 0
    applied: list[str] = field(default_factory=list)  # fingerprints of applied results
    mdad_version: str = field(default_factory=version)

    # ------------------------------------------------------------------ the test

    def _index(self) -> dict[str, int]:
        return {item: k for k, item in enumerate(self.item_ids)}

    def _posterior(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(ability (dims,), covariance (dims, dims), answered indices, scores)."""
        index = self._index()
        answered = np.array([index[item] for item in self.answers], dtype=np.int64)
        scores = np.array(list(self.answers.values()), dtype=np.float64)
        ability, covariance = posterior_ability(self.discrimination[answered][None],
                                                self.difficulty[answered][None], scores[None])
        return ability[0], covariance[0], answered, scores

    def next_items(self, k: int | None = None) -> list[str]:
        """The next `k` items (default: the batch size, at most what the budget leaves):
        those that add the most to the posterior information at the current ability,
        neither answered nor already pending. They become the pending batch; none when
        the test is finished or the pending items take the rest of the budget."""
        if k is not None:
            check_whole(k, "k")
        left = self.budget - len(self.answers) - len(self.pending)
        if self.finished or left < 1:
            return []
        k = min(self.batch if k is None else k, left)
        ability, covariance, _, _ = self._posterior()
        index = self._index()
        available = np.ones((1, len(self.item_ids)), dtype=bool)
        available[0, [index[item] for item in (*self.answers, *self.pending)]] = False
        a = self.discrimination
        chosen = best_items(ability[None], covariance[None], available, a, self.difficulty,
                            k)[0]
        self.pending = [*self.pending, *(self.item_ids[j] for j in chosen)]
        return [self.item_ids[j] for j in chosen]

    def record(self, item: str, correct: float) -> None:
        """The model's score on `item` (0/1, or partial credit in [0, 1])."""
        if item not in self._index():
            raise DataError(f"item {item!r} is not one of the test's items")
        if item in self.answers:
            raise DataError(f"item {item!r} was answered already; an answer is recorded once")
        if not isinstance(correct, numbers.Real | np.bool_):  # bool: 1 or 0
            raise DataError(f"item {item!r}: score must be a number in [0, 1]; got {correct!r}",
                            parameters=("correct",))
        value = float(correct)
        if not 0.0 <= value <= 1.0:
            raise DataError(f"item {item!r}: score {value} is not in [0, 1]")
        if len(self.answers) >= self.budget:
            raise ConfigError(f"the budget of {self.budget} items is spent")
        self.answers[item] = value
        if item in self.pending:
            self.pending.remove(item)

    @property
    def finished(self) -> bool:
        """The budget is spent, or the ability's standard error is below the target
        (a MAP solve only then: `estimate` says which)."""
        needs_se = self.target_se is not None and 0 < len(self.answers) < self.budget
        return self._status(self._standard_error(self._posterior()[1]) if needs_se
                            else None)[0]

    def _status(self, se: float | None) -> tuple[bool, str]:
        """Whether the test is finished, and why or what comes next, given the
        ability's standard error `se` (needed only with a target, before the budget
        is spent)."""
        n = len(self.answers)
        if n >= self.budget:
            return True, f"the budget of {self.budget} items is spent"
        if self.target_se is not None and n > 0 and se is not None and se < self.target_se:
            return True, (f"the ability's standard error {se:.3f} is below the target "
                          f"{self.target_se}")
        return False, f"{self.budget - n} of {self.budget} items left"

    def estimate(self) -> AdaptiveEstimate:
        """The estimate now, from the answers recorded so far."""
        ability, covariance, answered, scores = self._posterior()
        accuracy = float(predicted_accuracy(ability[None], self.discrimination,
                                            self.difficulty, answered[None], scores[None])[0])
        se = self._standard_error(covariance)
        cv = float(np.interp(len(self.answers), self.cv_answered, self.cv_error))
        low, high, how = self._interval(accuracy, ability, covariance, answered, cv)
        n = len(self.answers)
        finished, reason = self._status(se)
        calibration = self.calibration_at(n)
        low_censored, high_censored = (calibration.censored(low, high) if calibration
                                       else (False, False))
        return AdaptiveEstimate(accuracy, low, high, n, self.budget, se, cv, finished,
                                reason, how, bool(self.beyond_at(np.array(accuracy), n)),
                                bool(low_censored), bool(high_censored))

    def _standard_error(self, covariance: np.ndarray) -> float:
        """The ability's standard error along its least certain direction, on the
        standardised fit's scale (the reference models' spread 1): a chosen prior scale
        tau stretches the ability the state's discriminations see by 1/tau."""
        scale = 1.0 if self.choice is None else self.choice.prior_scale
        return scale * float(np.sqrt(np.linalg.eigvalsh(covariance).max()))

    def _interval(self, accuracy: float, ability: np.ndarray, covariance: np.ndarray,
                  answered: np.ndarray, cv: float) -> tuple[float, float, str]:
        """The 95% interval of the accuracy and how it was made: the Neyman belt of the
        held-out tests after as many answers (the last batch count at most the answers),
        or, in a /1 state or with too few models, 1.96 times the larger of the
        cross-validated error and the IRT model's own standard error."""
        n = len(self.answers)
        if self.cv_calibration is not None:
            low, high = self.interval_at(np.array(accuracy), n)
            k = int(np.searchsorted(self.cv_answered, n, side="right")) - 1
            return (float(low), float(high), f"calibrated on {int(self.cv_calibration[k][-1])} "
                    f"held-out tests after {self.cv_answered[k]} answers, at every accuracy")
        half = Z95 * max(cv, self._accuracy_se(ability, covariance, answered))
        return (max(0.0, accuracy - half), min(1.0, accuracy + half),
                "1.96 x the larger of the cross-validated and the model's standard error, "
                "on average over models only (a format /1 state, or too few models to "
                "calibrate at every accuracy)")

    def calibration_at(self, answered: int) -> Calibration | None:
        """The belt of the held-out tests after the largest batch count at most
        `answered` answers; None in a state without one (format /1, too few models)."""
        if self.cv_calibration is None:
            return None
        k = int(np.searchsorted(self.cv_answered, answered, side="right")) - 1
        return Calibration.from_list(self.cv_calibration[max(k, 0)], widen_past=True)

    def interval_at(self, accuracy: np.ndarray, answered: int
                    ) -> tuple[np.ndarray, np.ndarray]:
        """The calibrated 95% interval of estimates `accuracy` (any shape) after
        `answered` answers (`calibration_at`).

        Raises
        ------
        ConfigError
            For a state without calibration (format /1, or too few models).
        """
        calibration = self.calibration_at(answered)
        if calibration is None:
            raise ConfigError("this test has no calibrated interval (a format /1 state, or "
                              "too few models)")
        return calibration.interval(accuracy)

    def beyond_at(self, accuracy: np.ndarray, answered: int) -> np.ndarray:
        """Whether estimates `accuracy` after `answered` answers lie past the band of
        the strongest (weakest) held-out model's test (`Calibration.beyond`; False
        without a calibration)."""
        calibration = self.calibration_at(answered)
        if calibration is None:
            return np.zeros(np.shape(accuracy), dtype=bool)
        return calibration.beyond(accuracy)

    def _accuracy_se(self, ability: np.ndarray, covariance: np.ndarray,
                     answered: np.ndarray) -> float:
        """The delta-method standard error of the predicted accuracy (the IRT model's
        own uncertainty on the unanswered items)."""
        a, dims = self.discrimination, self.discrimination.shape[1]
        p = sigmoid(a @ ability - dims * self.difficulty)
        slope = p * (1 - p)
        slope[answered] = 0.0
        gradient = slope @ a / len(self.item_ids)
        return float(np.sqrt(gradient @ covariance @ gradient))

    # ------------------------------------------------------------- lm-eval files

    def samples_json(self, items: list[str] | None = None) -> dict[str, list[int]]:
        """``{task: [doc indices]}`` of `items` (default the pending batch), ascending,
        for lm-evaluation-harness's ``--samples``."""
        if self.lm_eval_items is None:
            raise ConfigError(f"dataset {self.dataset} has no lm-evaluation-harness task "
                              "mapping; give the model the items of the batch and pass a CSV")
        names = dict(zip(self.item_ids, self.lm_eval_items, strict=True))
        return samples_by_task([names[item] for item in (self.pending if items is None
                                                          else items)])

    def tasks(self) -> list[str]:
        """The lm-eval ``--tasks`` of the pending batch."""
        return sorted(self.samples_json())

    def apply_results(self, path: Path, *, metric: str | None = None,
                      allow_mixed_settings: bool = False) -> ItemScores:
        """Record the pending batch's answers from one model's results (an lm-eval
        ``--log_samples`` folder or file, or a CSV ``item_id,correct``); returns them as
        read: every one recorded, and the count of other items in the results (`extra`,
        not recorded). Results that hold more than the batch (a CSV of all the model's
        answers, given every round) are welcome: only the batch is recorded.

        The results are fingerprinted by the files read, and only those (`ItemScores`'
        `sha256`): a CSV, or the sample files of all the test's tasks (every batch's, so
        that the same folder gives the same fingerprint whichever batch is pending).

        Raises
        ------
        ConfigError
            When nothing is pending, or when results applied in an earlier round (the
            same files, by their fingerprint) do not hold the pending batch: the model
            has not been run on it yet.
        DataError
            When the results lack any item of the batch.
        """
        from mdad.practice.results import read_item_scores

        if not self.pending:
            raise ConfigError("no batch is pending: the test is finished or not started")
        metric = metric or self.metric
        if metric != self.metric:
            raise ConfigError(f"metric {metric}: the test was started on {self.metric}",
                              parameters=("metric",))
        path = Path(path)
        wanted = list(self.pending)
        names = tasks = None
        if self.lm_eval_items is not None:
            lm_names = dict(zip(self.item_ids, self.lm_eval_items, strict=True))
            names = [lm_names[item] for item in wanted]
            tasks = {name.rsplit("/", 1)[0] for name in self.lm_eval_items}
        scores = read_item_scores(path, wanted, names, metric=metric, dataset=self.dataset,
                                  what="batch", tasks=tasks, allow_none=True,
                                  allow_mixed_settings=allow_mixed_settings)
        if scores.missing:
            if scores.sha256 in self.applied:  # the likeliest slip: last round's again
                raise ConfigError(
                    f"{path}: these results were applied already (round "
                    f"{self.applied.index(scores.sha256) + 1}) and do not hold the pending "
                    "batch; run the model on the new batch first")
            if len(scores.missing) == len(wanted):
                raise DataError(f"{path}: none of the batch's {len(wanted)} items are in "
                                f"these results (e.g. {(names or wanted)[0]!r}); are they "
                                "for another task or dataset, or an earlier batch?")
            raise DataError(f"{path}: the results lack {len(scores.missing)} of the batch's "
                            f"{len(wanted)} items (e.g. {scores.missing[0]!r}); run the model "
                            "on the whole batch")
        for item, value in zip(wanted, scores.scores, strict=True):
            self.record(item, float(value))
        self.applied.append(scores.sha256)
        self.round += 1
        return scores

    # --------------------------------------------------------------- the state file

    def to_json(self) -> dict[str, Any]:
        return {
            "format": STATE_FORMAT, "mdad_version": self.mdad_version,
            "dataset": self.dataset, "sha256": self.sha256, "method": self.method,
            "metric": self.metric, "item_ids": self.item_ids,
            "lm_eval_items": self.lm_eval_items,
            "discrimination": self.discrimination.tolist(),
            "difficulty": self.difficulty.tolist(), "budget": self.budget,
            "batch": self.batch, "target_se": self.target_se,
            "cv_answered": self.cv_answered, "cv_error": self.cv_error,
            "cv_calibration": self.cv_calibration,
            "choice": None if self.choice is None else self.choice.to_json(),
            "answers": [[item, value] for item, value in self.answers.items()],
            "pending": self.pending, "round": self.round, "applied": self.applied,
        }

    @classmethod
    def from_json(cls, data: object, where: str = "the state file") -> AdaptiveTest:
        """Read a state written by `to_json`, checked against `STATE_SCHEMA` before any
        number of it is used.

        Raises
        ------
        DataError
            Naming the first field that is missing, unknown, or wrong.
        """
        return _validated(data, where)

    def save(self, path: Path) -> None:
        """Write the state atomically: a unique temporary file beside `path`, created
        exclusively (a link planted there is never followed), renamed over `path` (a
        link at `path` is replaced, not written through)."""
        from mdad.safe_io import atomic_write

        atomic_write(path, (json.dumps(self.to_json()) + "\n").encode("utf-8"))

    @classmethod
    def load(cls, path: Path) -> AdaptiveTest:
        """Read and check a state file (`from_json`). The file is opened once, not
        through a link and without blocking; that very descriptor is checked (a regular
        file of at most `STATE_MAX_BYTES`) and at most one byte more is read from it, so
        a file swapped in meanwhile (a link to /dev/zero, a pipe) is never read.

        Raises
        ------
        DataError
            For no regular file, a symbolic link, a file over `STATE_MAX_BYTES`, no
            JSON, or a field `STATE_SCHEMA` refuses.
        """
        check_path(path, "path")
        path = Path(path)
        data = _json_state(path, _read_state(path))
        return cls.from_json(data, str(path))


def _read_state(path: Path) -> bytes:
    """The bytes of the state file at `path`, read as `AdaptiveTest.load` says."""
    import errno
    import os
    import stat

    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        descriptor = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise DataError(f"{path}: a symbolic link; a state is read from the file "
                            "itself, never through a link; pass the file it points to"
                            ) from None
        check_state_file(path)  # says what is there instead, if anything
        raise DataError(f"{path}: cannot read it ({exc.strerror}); {STATE_FIX}") from None
    with os.fdopen(descriptor, "rb", buffering=0) as handle:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            from mdad.data.files import not_a_file

            raise DataError(f"{path}: {not_a_file(path)}; {STATE_FIX}")
        if status.st_size > STATE_MAX_BYTES:
            raise _too_big(path)
        chunks, size = [], 0
        while size <= STATE_MAX_BYTES:  # the size may grow after fstat: read a bounded part
            chunk = handle.read(STATE_MAX_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    if size > STATE_MAX_BYTES:
        raise _too_big(path)
    return b"".join(chunks)


def _too_big(path: Path) -> DataError:
    return DataError(f"{path}: over {STATE_MAX_BYTES >> 20} MB, not an adaptive test state; "
                     "start a new test")


def _json_state(path: Path, raw: bytes) -> object:
    """`raw` as JSON, or a one-line DataError naming `path`."""
    try:
        return json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else exc
        raise DataError(f"{path}: not an adaptive test state ({reason}); start a new "
                        "test") from None


def check_state_file(path: Path) -> None:
    """Refuse, naming `path`, a state that is no regular file (a pipe would block)."""
    from mdad.data.files import check_regular_file

    check_regular_file(Path(path), fix=STATE_FIX)


def _validated(data: object, where: str, fix: str = "start a new test") -> AdaptiveTest:
    """`data` checked against `STATE_SCHEMA` (`checked_state`) as a test; nothing
    unchecked reaches numpy."""
    data = checked_state(data, where, fix)
    return AdaptiveTest(
        dataset=data["dataset"], sha256=data["sha256"], method=data["method"],
        metric=data["metric"], item_ids=list(data["item_ids"]),
        lm_eval_items=None if data["lm_eval_items"] is None else list(data["lm_eval_items"]),
        discrimination=np.array(data["discrimination"], dtype=np.float64),
        difficulty=np.array(data["difficulty"], dtype=np.float64), budget=data["budget"],
        batch=data["batch"],
        target_se=None if data["target_se"] is None else float(data["target_se"]),
        cv_answered=list(data["cv_answered"]), cv_error=[float(x) for x in data["cv_error"]],
        cv_calibration=(None if data["cv_calibration"] is None
                        else [[float(x) for x in row] for row in data["cv_calibration"]]),
        choice=None if data["choice"] is None else AdaptiveChoice.from_json(data["choice"]),
        answers={item: float(value) for item, value in data["answers"]},
        pending=list(data["pending"]), round=data["round"], applied=list(data["applied"]),
        mdad_version=data["mdad_version"])


# ----------------------------------------------------------------------- start


def start_adaptive_test(dataset: Dataset, *, budget: int, batch: int = 1,
                        target_se: float | None = None, method: str = "adaptive",
                        metric: str | None = None, seed: int = 0,
                        models: Sequence[str] | Sequence[int] | np.ndarray | None = None,
                        cache: dict[Any, Any] | None = None) -> AdaptiveTest:
    """Start an adaptive test of one new model over `dataset`'s items.

    Fits `method`'s IRT model on every model of `dataset` (or only `models`),
    cross-validates the whole test on held-out models (5 folds by model: each fold's
    models take the test with the same budget and batch size on their real answers,
    and the error of the estimate after each batch is stored), and returns a test
    whose first batch is pending. The test then alternates between `next_items` and
    `record` (or `apply_results`) until the budget is spent or the ability's standard
    error falls below `target_se`; between batches it lives in a JSON state file
    (`AdaptiveTest.save` / `AdaptiveTest.load`).

    Parameters
    ----------
    dataset : Dataset
        The benchmark's models and items (`load_dataset`); at least 10 models, so that
        the test can be fitted and cross-validated.
    budget : int
        The most items the test gives, in 1..the dataset's items (keyword only,
        required).
    batch : int, default 1
        Items per batch, in 1..`budget`.
    target_se : float or None, default None
        Stop early once the ability's standard error (on the IRT scale, not accuracy)
        falls below it; a finite number > 0. None: run to the budget.
    method : str, default "adaptive"
        ``adaptive`` (a 1-D IRT model), ``adaptive-md`` (3-D), or ``adaptive-cv``: the
        dimension, prior scale and stop chosen by cross-validation on those folds for
        the budget (`mdad.irt.cat_cv`); its test's budget is then the chosen stop, and
        `AdaptiveTest.choice` says what was chosen and why.
    metric : str or None, default None
        The metric the data was read with; None: the dataset's own. It must not differ
        from the one `dataset` was read with.
    seed : int, default 0
        Seed of the fit and the cross-validation, >= 0.
    models : sequence of str, sequence of int, numpy.ndarray or None, default None
        The models to fit on: names, or distinct indices into the dataset's models.
        None: every model.
    cache : dict or None, default None
        A dict to pass to several calls on the same models and seed with other budgets
        or batches (an ``adaptive-cv`` test per budget): they then share their IRT fits,
        which depend on neither. The tests are the same as without it. It keeps every
        fit for as long as it lives, found by the scores' contents and the seed, never
        by names. None: nothing shared.

    Returns
    -------
    AdaptiveTest
        The test, its first batch pending (`next_items`); its estimate
        (`AdaptiveTest.estimate`) is the predicted accuracy on all the dataset's items
        as a fraction, with a 95% interval.

    Raises
    ------
    ConfigError
        For an unknown method, a budget outside 1..n_items, a batch outside
        1..budget, a target_se that is not a finite positive number, a negative seed,
        another `metric` than the data's, `models` indices repeated or out of range, or
        fewer than 10 models.
    DataError
        When every model gave the same answers, or the test would be a state
        `STATE_SCHEMA` refuses (item ids with control characters, a fit beyond
        `PARAMETER_BOUND`); for an unknown or repeated model name in `models`.
    """
    from mdad.selection.threads import one_thread

    check_type(dataset, Dataset, "dataset", "a Dataset (mdad.load_dataset(name))")
    check_read_with(dataset, metric)
    check_whole(seed, "seed", minimum=0)
    check_type(cache, dict | None, "cache", "a dict or None")
    check_integer(budget, "budget")
    check_integer(batch, "batch")
    if target_se is not None and (not isinstance(target_se, numbers.Real)
                                  or isinstance(target_se, bool)):
        raise ConfigError(f"target_se must be a finite number > 0; got {target_se!r}",
                          parameters=("target_se",))
    if method not in ADAPTIVE_METHODS:
        raise ConfigError(f"method must be one of {', '.join(ADAPTIVE_METHODS)}; got "
                          f"{method!r}", parameters=("method",))
    from mdad.practice.bundle import model_subset

    matrix = model_subset(dataset.matrix, models)
    if not 1 <= budget <= matrix.n_items:
        raise ConfigError(f"budget must lie in 1..{matrix.n_items}, the dataset's items; got "
                          f"{budget}", parameters=("budget",))
    if not 1 <= batch <= budget:
        raise ConfigError(f"batch must lie in 1..budget ({budget}); got {batch}",
                          parameters=("batch",))
    if target_se is not None and not 0 < target_se < math.inf:
        raise ConfigError(f"target_se must be a finite number > 0; got {target_se}",
                          parameters=("target_se",))
    if matrix.n_models < 2 * CV_FOLDS:
        raise ConfigError(f"an adaptive test needs at least {2 * CV_FOLDS} models to fit and "
                          f"cross-validate; {dataset.name} has {matrix.n_models}")
    scores = np.asarray(matrix.scores(), dtype=np.float64)
    if (scores == scores[:1]).all():
        # Its cross-validated error would be 0: these models agree, a new one may not.
        raise DataError(f"every model of {dataset.name} gave the same answers, so the test "
                        "cannot learn which items tell models apart, nor how well it "
                        "estimates a model unlike them; use data whose models differ")
    from mdad.selection import get_method

    # the method's libraries loaded first, so that the limit holds scipy's own BLAS too:
    # loaded later, inside a fit, it would run with a thread per core
    with one_thread([get_method(method)]):
        fitted = _fit_and_cross_validate(scores, method, budget, batch, seed, cache)
    ids = [str(i) for i in matrix.item_ids]
    spec = dataset.spec
    lm_eval = lm_eval_ids(ids, spec.lm_eval_task if spec else None)
    if lm_eval is not None and not all(LM_EVAL_NAME.fullmatch(name) for name in lm_eval):
        lm_eval = None  # no task/doc-number names for lm-eval's --samples: a CSV of answers
    test = AdaptiveTest(
        dataset=dataset.name, sha256=matrix.sha256 or "", method=method,
        metric=metric or dataset.metric or (spec.lm_eval_metric if spec else "acc"),
        item_ids=ids,
        lm_eval_items=lm_eval, discrimination=fitted.discrimination,
        difficulty=fitted.model.difficulty_, budget=fitted.answered[-1],
        batch=min(batch, fitted.answered[-1]), target_se=target_se,
        cv_answered=fitted.answered, cv_error=fitted.error,
        cv_calibration=fitted.calibration, choice=fitted.choice)
    test.next_items()
    # the state it will be: what `load` refuses is refused now, before a file is written
    return _validated(test.to_json(), f"the adaptive test of {dataset.name}",
                      fix="this data cannot make an adaptive test")


def run_batches(discrimination: np.ndarray, difficulty: np.ndarray, scores: np.ndarray,
                budget: int, batch: int) -> tuple[list[int], np.ndarray]:
    """Adaptive tests of many models at once, `batch` items at a time up to `budget`,
    reading their answers from `scores` (n_models, n_items).

    Returns
    -------
    answered : the number of items answered after each batch, starting with 0.
    estimates : array of shape (len(answered), n_models).
    """
    session = AdaptiveSession(discrimination, difficulty, scores.shape[0])
    rows = np.arange(scores.shape[0])[:, None]
    counts, estimates = [0], [session.accuracy()]
    while session.n_steps < budget:
        chosen = session.choose_batch(min(batch, budget - session.n_steps))
        session.record(chosen, scores[rows, chosen])
        counts.append(session.n_steps)
        estimates.append(session.accuracy())
    return counts, np.array(estimates)


@dataclass(frozen=True)
class _Fitted:
    """What `_fit_and_cross_validate` gives back: the standardised fit on every model
    with its discriminations scaled by the prior scale, the cross-validated choice
    (adaptive-cv only), the answers after each held-out batch up to the test's stop,
    the root mean square error there, and the belts (None with too few models)."""

    model: MultidimensionalIrt
    discrimination: np.ndarray  # (n_items, dims)
    choice: AdaptiveChoice | None
    answered: list[int]
    error: list[float]
    calibration: list[list[float]] | None


def _fit_and_cross_validate(scores: np.ndarray, method: str, budget: int, batch: int,
                            seed: int, cache: dict[Any, Any] | None = None) -> _Fitted:
    """The fit of `method`'s test on every model, and its held-out tests (5 folds by
    model, each fitted on the other models, the same budget and batches): the error
    of the estimate after each batch, and its Neyman belts.

    `adaptive-cv` first cross-validates every candidate of `mdad.irt.cat_cv` (dimension
    and prior scale) on those folds, and takes the one, and the stop, with the least
    held-out error; `adaptive` and `adaptive-md` are its candidates (1, 1.0) and (3,
    1.0), fitted with the same seeds, so that it would give the same test.

    A multidimensional test's belt also reads two folds beyond: the bottom decile of
    the models, tested by a fit on the others, and the top decile likewise. Their
    tests show what its prior does to a model past every model its fit saw, as a
    user's new model is: a strong one is read far lower than the random folds'
    strong models are, by fits that knew models like them. Held out past GPQA's top
    decile (`round_trip(..., split="top")`, 8 seeds), its belt without them covered
    86%, 85% and 88% of that decile after 10, 25 and 50 answers; with them 100%,
    100% and 98%, at 36, 23 and 15 points wide within the range (22.5, 15 and 12.4
    without). The 1-D test's belt covered 95% or more of either decile beyond without
    them, and with them grew twice as wide (49 points after 50 answers): its
    estimates of the beyond folds, by fits whose abilities are scaled without those
    models, spread far more than a model past its belt's range is read.

    The fits are independent, each with its own seed, and run in a thread per core
    (their passes over the data release Python's lock): the same numbers whatever the
    thread (on another CPU, BLAS's last bits may differ). None depends on the budget
    or the batch, so `cache` (a dict) keeps them for the next call, keyed by the
    scores' contents, the seed, the fit's role and dimension. The caller holds a
    one-BLAS-thread limit, with scipy's own BLAS loaded before it."""
    from mdad.irt.cat_cv import DIMS, PRIOR_SCALES, CrossValidatedTests

    truth = scores.mean(axis=1)
    folds = cross_validation_folds(seed, scores.shape[0])
    belt = scores.shape[0] >= MIN_MODELS and np.ptp(truth) >= 1e-6
    beyond: dict[str, np.ndarray] = {}
    for side, group in (("bottom", 0), ("top", 2)):
        held = np.flatnonzero(deciles(truth) == group)
        # ties at a decile's edge can take most models: fit on enough of the rest
        if belt and held.size and scores.shape[0] - held.size >= MIN_MODELS:
            beyond[side] = held

    memo = {} if cache is None else cache
    prefix = ("adaptive-fits", _digest(scores), seed)

    def fits(tasks: dict[tuple, tuple]) -> dict[tuple, Any]:
        """Each task's result, those `memo` lacks run in one round of threads."""
        missing = [key for key in tasks if (*prefix, *key) not in memo]
        results = _run([tasks[key] for key in missing], scores)
        memo.update(((*prefix, *key), value) for key, value in zip(missing, results,
                                                                   strict=True))
        return {key: memo[*prefix, *key] for key in tasks}

    def final_fits(dims: int) -> dict[tuple, tuple]:
        """The fit on every model; a multidimensional test's belt reads the folds beyond."""
        whole = (_standardised_fit, (scores, dims, streams.rng(seed, "fit")))
        return {("fit", dims): whole} | {
            ("beyond", side, dims): (_fold_fit, (scores, dims, streams.rng(
                seed, "cross-validation", "beyond", side), held))
            for side, held in (beyond.items() if dims > 1 else ())}

    fixed = ADAPTIVE_METHODS[method]
    candidates = DIMS if fixed is None else (fixed,)
    tasks = {("fold", k, dims): (_fold_fit, (scores, dims, streams.rng(
        seed, "cross-validation", "fit", k), folds[k]))
        for dims in candidates for k in range(len(folds))}
    # a fixed method's last fits are known already: one round of threads for all
    fold_fits = fits(tasks | (final_fits(fixed) if fixed else {}))
    cv = CrossValidatedTests(scores, folds, lambda k, dims: fold_fits["fold", k, dims],
                             path=[*range(0, budget, batch), budget], dims=candidates,
                             prior_scales=PRIOR_SCALES if fixed is None else (1.0,),
                             keep_sessions=False)
    choice = cv.choose(budget) if fixed is None else None
    dims, scale, stop = (fixed, 1.0, budget) if choice is None else (
        choice.dims, choice.prior_scale, choice.stop)
    final = fits(final_fits(dims))
    model = final["fit", dims]
    beyond = beyond if dims > 1 else {}
    beyond_tests = _run([(run_batches, (a * scale, b, scores[held], stop, batch))
                         for side, held in beyond.items()
                         for a, b in [final["beyond", side, dims]]], scores)
    counts = [int(c) for c in cv.checkpoints(stop)]
    estimates = cv.estimates(dims, scale, stop)
    error = [float(v) for v in np.sqrt(((estimates - truth[None, :]) ** 2).mean(axis=1))]
    calibration = None
    if belt:
        belt_truth = np.concatenate([truth, *(truth[held] for held in beyond.values())])
        belt_estimates = np.hstack([estimates, *(test[1] for test in beyond_tests)])
        calibration = [Calibration.fit(belt_truth, row, widen_past=True).to_list()
                       for row in belt_estimates]
    return _Fitted(model, model.discrimination_ * scale, choice, counts, error, calibration)


def _run(tasks: list, scores: np.ndarray) -> list[Any]:
    """The tasks' results, in their order (`run_fits`, a thread per core)."""
    if not tasks:
        return []
    # the fits' compiled pass loads here, not in the first fit threads: a load that
    # fails (memory) in one thread leaves the module half made for the others
    import mdad.irt._map_pass  # noqa: F401
    from mdad.practice.fit_pool import run_fits

    results = dict(run_fits(tasks, spawn_after=None, threads=_fit_threads(scores, len(tasks))))
    return [results[k] for k in range(len(tasks))]


def _standardised_fit(scores: np.ndarray, dims: int,
                      rng: np.random.Generator) -> MultidimensionalIrt:
    from mdad.selection.tinybenchmarks import fit_irt

    return fit_irt(scores, dims, rng).standardised()


def _fold_fit(scores: np.ndarray, dims: int, rng: np.random.Generator,
              held: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The standardised fit on the models outside `held`: (discrimination (n_items,
    dims), difficulty)."""
    model = _standardised_fit(np.delete(scores, held, axis=0), dims, rng)
    return model.discrimination_, model.difficulty_


def _digest(scores: np.ndarray) -> str:
    """A key for `scores`' contents (shape, type and values)."""
    import hashlib

    digest = hashlib.blake2b(repr((scores.shape, scores.dtype.str)).encode())
    digest.update(np.ascontiguousarray(scores).tobytes())
    return digest.hexdigest()


def _fit_threads(scores: np.ndarray, tasks: int) -> int:
    """`fit_threads` for fits that keep about three float64 copies of `scores`."""
    from mdad.practice.fit_pool import fit_threads

    return fit_threads(tasks, 24 * scores.size)
