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
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mdad import __version__
from mdad.data.registry import Dataset
from mdad.errors import ConfigError, DataError, check_whole
from mdad.irt.cat import map_ability, predicted_accuracy
from mdad.practice.bundle import _lm_eval_ids

if TYPE_CHECKING:
    from mdad.practice.estimate import ItemScores

STATE_FORMAT = "mdad-adaptive/1"
CV_FOLDS = 5
Z_95 = 1.959963984540054
ADAPTIVE_METHODS = {"adaptive": 1, "adaptive-md": 3}  # method -> IRT dimensions


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
    answers: dict[str, float] = field(default_factory=dict)
    pending: list[str] = field(default_factory=list)
    round: int = 0
    applied: list[str] = field(default_factory=list)  # fingerprints of applied results
    mdad_version: str = __version__

    # ------------------------------------------------------------------ the test

    def _index(self) -> dict[str, int]:
        return {item: k for k, item in enumerate(self.item_ids)}

    def _posterior(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(ability (dims,), covariance (dims, dims), answered indices, scores)."""
        index = self._index()
        answered = np.array([index[item] for item in self.answers], dtype=np.int64)
        scores = np.array(list(self.answers.values()), dtype=np.float64)
        dims = self.discrimination.shape[1]
        ability, covariance = map_ability(self.discrimination[answered][None],
                                          dims * self.difficulty[answered][None],
                                          scores[None])
        return ability[0], covariance[0], answered, scores

    def next_items(self, k: int | None = None) -> list[str]:
        """The next `k` items (default: the batch size, at most what the budget leaves):
        those that add the most to the posterior information at the current ability,
        neither answered nor already pending. They become the pending batch."""
        if self.finished:
            return []
        left = self.budget - len(self.answers)
        k = min(self.batch if k is None else int(k), left)
        if k < 1:
            raise ConfigError(f"k must be >= 1; got {k}", parameters=("k",))
        ability, covariance, _, _ = self._posterior()
        a, dims = self.discrimination, self.discrimination.shape[1]
        p = 1.0 / (1.0 + np.exp(-(a @ ability - dims * self.difficulty)))
        gain = p * (1 - p) * np.einsum("nd,de,ne->n", a, covariance, a)
        index = self._index()
        for item in (*self.answers, *self.pending):
            gain[index[item]] = -np.inf
        chosen = np.argsort(-gain, kind="stable")[:k]
        self.pending = [*self.pending, *(self.item_ids[j] for j in chosen)]
        return [self.item_ids[j] for j in chosen]

    def record(self, item: str, correct: float) -> None:
        """The model's score on `item` (0/1, or partial credit in [0, 1])."""
        if item not in self._index():
            raise DataError(f"item {item!r} is not one of the test's items")
        if item in self.answers:
            raise DataError(f"item {item!r} was answered already; an answer is recorded once")
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
        return self.estimate().finished

    def estimate(self) -> AdaptiveEstimate:
        """The estimate now, from the answers recorded so far."""
        ability, covariance, answered, scores = self._posterior()
        dims = self.discrimination.shape[1]
        accuracy = float(predicted_accuracy(ability[None], self.discrimination,
                                            dims * self.difficulty, answered[None],
                                            scores[None])[0])
        se = float(np.sqrt(np.linalg.eigvalsh(covariance).max()))
        cv = float(np.interp(len(self.answers), self.cv_answered, self.cv_error))
        model_se = self._accuracy_se(ability, covariance, answered)
        half = Z_95 * max(cv, model_se)
        n = len(self.answers)
        if n >= self.budget:
            finished, reason = True, f"the budget of {self.budget} items is spent"
        elif self.target_se is not None and n > 0 and se < self.target_se:
            finished, reason = True, (f"the ability's standard error {se:.3f} is below the "
                                      f"target {self.target_se}")
        else:
            finished, reason = False, (f"{self.budget - n} of {self.budget} items left")
        return AdaptiveEstimate(accuracy, max(0.0, accuracy - half), min(1.0, accuracy + half),
                                n, self.budget, se, cv, finished, reason)

    def _accuracy_se(self, ability: np.ndarray, covariance: np.ndarray,
                     answered: np.ndarray) -> float:
        """The delta-method standard error of the predicted accuracy (the IRT model's
        own uncertainty on the unanswered items)."""
        a, dims = self.discrimination, self.discrimination.shape[1]
        p = 1.0 / (1.0 + np.exp(-(a @ ability - dims * self.difficulty)))
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
        tasks: dict[str, list[int]] = {}
        for item in self.pending if items is None else items:
            task, doc = names[item].rsplit("/", 1)
            tasks.setdefault(task, []).append(int(doc))
        return {task: sorted(docs) for task, docs in sorted(tasks.items())}

    def tasks(self) -> list[str]:
        """The lm-eval ``--tasks`` of the pending batch."""
        return sorted(self.samples_json())

    def apply_results(self, path: Path, *, metric: str | None = None) -> ItemScores:
        """Record the pending batch's answers from one model's results (an lm-eval
        ``--log_samples`` folder or file, or a CSV ``item_id,correct``); returns them as
        read: every one recorded, and the count of other items in the results (`extra`,
        not recorded).

        Raises
        ------
        ConfigError
            When these very results were applied before (a `next` is applied once),
            or nothing is pending.
        DataError
            When the results lack any item of the batch.
        """
        from mdad.practice.estimate import read_item_scores

        if not self.pending:
            raise ConfigError("no batch is pending: the test is finished or not started")
        metric = metric or self.metric
        if metric != self.metric:
            raise ConfigError(f"metric {metric}: the test was started on {self.metric}",
                              parameters=("metric",))
        fingerprint = _fingerprint(Path(path))
        if fingerprint in self.applied:
            raise ConfigError(f"{path}: these results were applied already (round "
                              f"{self.applied.index(fingerprint) + 1}); run the model on the "
                              "new batch first")
        names = dict(zip(self.item_ids, self.lm_eval_items or self.item_ids, strict=True))
        wanted = list(self.pending)
        scores = read_item_scores(Path(path), wanted,
                                  None if self.lm_eval_items is None
                                  else [names[i] for i in wanted],
                                  metric=metric, dataset=self.dataset, what="batch")
        if scores.missing:
            raise DataError(f"{path}: the results lack {len(scores.missing)} of the batch's "
                            f"{len(wanted)} items (e.g. {scores.missing[0]!r}); run the model "
                            "on the whole batch")
        for item, value in zip(wanted, scores.scores, strict=True):
            self.record(item, float(value))
        self.applied.append(fingerprint)
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
            "answers": [[item, value] for item, value in self.answers.items()],
            "pending": self.pending, "round": self.round, "applied": self.applied,
        }

    @classmethod
    def from_json(cls, data: object, where: str = "the state file") -> AdaptiveTest:
        """Read a state written by `to_json`, field by field.

        Raises
        ------
        DataError
            Naming the first field that is missing or wrong.
        """
        return _validated(data, where)

    def save(self, path: Path) -> None:
        """Write the state atomically (a temporary file, then a rename)."""
        path = Path(path)
        temporary = path.with_name(f".{path.name}.tmp")
        temporary.write_text(json.dumps(self.to_json()) + "\n", encoding="utf-8")
        os.replace(temporary, path)

    @classmethod
    def load(cls, path: Path) -> AdaptiveTest:
        from mdad.data.files import check_regular_file

        path = Path(path)
        check_regular_file(path, fix="pass the state file of `mdad adaptive start`, or start "
                           "a test with it")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise DataError(f"{path}: not an adaptive test state ({exc})") from None
        return cls.from_json(data, str(path))


def _fingerprint(path: Path) -> str:
    """The sha256 of the result files' contents (a folder: every file, by name)."""
    from mdad.data.files import check_regular_file

    if not path.is_dir():
        check_regular_file(path, fix="pass the model's results: an lm-eval --log_samples "
                           "folder or file, or a CSV item_id,correct")
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    if not files:
        raise DataError(f"{path}: no result files found; pass the model's results: an lm-eval "
                        "--log_samples folder or file, or a CSV item_id,correct")
    for file in files:
        digest.update(str(file.relative_to(path) if path.is_dir() else file.name).encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()


def _validated(data: object, where: str) -> AdaptiveTest:
    def bad(name: str, rule: str) -> DataError:
        return DataError(f"{where}: field {name!r} {rule}; start a new test")

    if not isinstance(data, dict):
        raise DataError(f"{where}: not an adaptive test state (a JSON object expected)")
    if data.get("format") != STATE_FORMAT:
        raise bad("format", f"must be {STATE_FORMAT!r}, got {data.get('format')!r}")
    items = data.get("item_ids")
    if not isinstance(items, list) or not items or not all(isinstance(i, str) for i in items):
        raise bad("item_ids", "must be a non-empty list of strings")
    if len(set(items)) != len(items):
        raise bad("item_ids", "lists an item twice")
    n = len(items)
    lm = data.get("lm_eval_items")
    if lm is not None and (not isinstance(lm, list) or len(lm) != n):
        raise bad("lm_eval_items", f"must be null or a list of {n} strings")
    try:
        a = np.asarray(data["discrimination"], dtype=np.float64)
        b = np.asarray(data["difficulty"], dtype=np.float64)
    except (KeyError, TypeError, ValueError):
        raise bad("discrimination", "and difficulty must be numbers") from None
    if a.ndim != 2 or a.shape[0] != n or b.shape != (n,) or not (
            np.isfinite(a).all() and np.isfinite(b).all()):
        raise bad("discrimination", f"must be {n} rows of finite numbers, difficulty {n} "
                  "numbers")
    for name in ("budget", "batch", "round"):
        value = data.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or value < (
                0 if name == "round" else 1):
            raise bad(name, "must be a positive whole number")
    if data["budget"] > n:
        raise bad("budget", f"exceeds the {n} items")
    target = data.get("target_se")
    if target is not None and (not isinstance(target, int | float) or target <= 0):
        raise bad("target_se", "must be null or a positive number")
    cv_n, cv_e = data.get("cv_answered"), data.get("cv_error")
    if (not isinstance(cv_n, list) or not isinstance(cv_e, list) or len(cv_n) != len(cv_e)
            or not cv_n or sorted(cv_n) != cv_n):
        raise bad("cv_answered", "and cv_error must be equal-length lists, ascending")
    if not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x for x in cv_n):
        raise bad("cv_answered", "must be whole numbers >= 0")
    if not all(isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
               and x >= 0 for x in cv_e):
        raise bad("cv_error", "must be finite numbers >= 0")
    answers = data.get("answers")
    if not isinstance(answers, list) or not all(
            isinstance(x, list) and len(x) == 2 and x[0] in set(items)
            and isinstance(x[1], int | float) and 0 <= x[1] <= 1 for x in answers):
        raise bad("answers", "must be [item, score in [0, 1]] pairs of the test's items")
    if len({x[0] for x in answers}) != len(answers) or len(answers) > data["budget"]:
        raise bad("answers", "repeats an item or exceeds the budget")
    pending = data.get("pending")
    if not isinstance(pending, list) or not set(pending) <= set(items) or set(pending) & {
            x[0] for x in answers} or len(set(pending)) != len(pending):
        raise bad("pending", "must list unanswered items of the test, each once")
    applied = data.get("applied")
    if not isinstance(applied, list) or not all(isinstance(x, str) for x in applied):
        raise bad("applied", "must be a list of fingerprints")
    for name in ("dataset", "sha256", "method", "metric"):
        if not isinstance(data.get(name), str):
            raise bad(name, "must be a string")
    if data["method"] not in ADAPTIVE_METHODS or a.shape[1] != ADAPTIVE_METHODS[data["method"]]:
        raise bad("method", f"must be one of {', '.join(ADAPTIVE_METHODS)} with its dimensions")
    return AdaptiveTest(
        dataset=data["dataset"], sha256=data["sha256"], method=data["method"],
        metric=data["metric"], item_ids=items, lm_eval_items=lm, discrimination=a,
        difficulty=b, budget=data["budget"], batch=data["batch"],
        target_se=None if target is None else float(target),
        cv_answered=[int(x) for x in cv_n], cv_error=[float(x) for x in cv_e],
        answers={x[0]: float(x[1]) for x in answers}, pending=list(pending),
        round=data["round"], applied=list(applied),
        mdad_version=str(data.get("mdad_version", "")))


# ----------------------------------------------------------------------- start


def start_adaptive_test(dataset: Dataset, *, budget: int, batch: int = 1,
                        target_se: float | None = None, method: str = "adaptive",
                        metric: str | None = None, seed: int = 0) -> AdaptiveTest:
    """Fit `method`'s IRT model on every model of `dataset`, cross-validate the test on
    held-out models, and return a test whose first batch is pending.

    Raises
    ------
    ConfigError
        For an unknown method, a budget outside 1..n_items, a batch outside
        1..budget, or a target_se that is not positive.
    DataError
        When every model gave the same answers.
    """
    from mdad.selection.threads import one_thread
    from mdad.selection.tinybenchmarks import fit_irt

    check_whole(seed, "seed", minimum=0)
    if method not in ADAPTIVE_METHODS:
        raise ConfigError(f"method must be one of {', '.join(ADAPTIVE_METHODS)}; got "
                          f"{method!r}", parameters=("method",))
    matrix = dataset.matrix
    if not 1 <= budget <= matrix.n_items:
        raise ConfigError(f"budget must lie in 1..{matrix.n_items}, the dataset's items; got "
                          f"{budget}", parameters=("budget",))
    if not 1 <= batch <= budget:
        raise ConfigError(f"batch must lie in 1..budget ({budget}); got {batch}",
                          parameters=("batch",))
    if target_se is not None and not target_se > 0:
        raise ConfigError(f"target_se must be > 0; got {target_se}", parameters=("target_se",))
    if matrix.n_models < 2 * CV_FOLDS:
        raise ConfigError(f"an adaptive test needs at least {2 * CV_FOLDS} models to fit and "
                          f"cross-validate; {dataset.name} has {matrix.n_models}")
    dims = ADAPTIVE_METHODS[method]
    scores = np.asarray(matrix.scores(), dtype=np.float64)
    if (scores == scores[:1]).all():
        # Its cross-validated error would be 0: these models agree, a new one may not.
        raise DataError(f"every model of {dataset.name} gave the same answers, so the test "
                        "cannot learn which items tell models apart, nor how well it "
                        "estimates a model unlike them; use data whose models differ")
    with one_thread():
        model = fit_irt(scores, dims, np.random.default_rng(seed)).standardised()
        answered, error = _cross_validated_error(scores, dims, budget, batch, seed)
    ids = [str(i) for i in matrix.item_ids]
    spec = dataset.spec
    test = AdaptiveTest(
        dataset=dataset.name, sha256=matrix.sha256 or "", method=method,
        metric=metric or (spec.lm_eval_metric if spec else "acc"), item_ids=ids,
        lm_eval_items=_lm_eval_ids(ids, spec.lm_eval_task if spec else None),
        discrimination=model.discrimination_, difficulty=model.difficulty_, budget=budget,
        batch=batch, target_se=target_se, cv_answered=answered, cv_error=error)
    test.next_items()
    return test


def run_batches(discrimination: np.ndarray, difficulty: np.ndarray, scores: np.ndarray,
                budget: int, batch: int) -> tuple[list[int], np.ndarray]:
    """Adaptive tests of many models at once, `batch` items at a time up to `budget`,
    reading their answers from `scores` (n_models, n_items).

    Returns
    -------
    answered : the number of items answered after each batch, starting with 0.
    estimates : array of shape (len(answered), n_models).
    """
    a = discrimination if discrimination.ndim == 2 else discrimination[:, None]
    dims = a.shape[1]
    offset = dims * np.asarray(difficulty, dtype=np.float64)
    n_models = scores.shape[0]
    rows = np.arange(n_models)[:, None]
    given = np.empty((n_models, 0), dtype=np.int64)
    answers = np.empty((n_models, 0))
    ability = np.zeros((n_models, dims))
    covariance = np.broadcast_to(np.eye(dims), (n_models, dims, dims)).copy()
    counts, estimates = [0], [predicted_accuracy(ability, a, offset, given, answers)]
    while given.shape[1] < budget:
        k = min(batch, budget - given.shape[1])
        p = 1.0 / (1.0 + np.exp(-(ability @ a.T - offset)))
        gain = p * (1 - p) * ((a @ covariance) * a).sum(axis=2)
        gain[rows, given] = -np.inf
        chosen = np.argsort(-gain, axis=1, kind="stable")[:, :k]
        given = np.concatenate([given, chosen], axis=1)
        answers = np.concatenate([answers, scores[rows, chosen]], axis=1)
        ability, covariance = map_ability(a[given], offset[given], answers, ability,
                                          exact_covariance=False)
        counts.append(given.shape[1])
        estimates.append(predicted_accuracy(ability, a, offset, given, answers))
    return counts, np.array(estimates)


def _cross_validated_error(scores: np.ndarray, dims: int, budget: int, batch: int,
                           seed: int) -> tuple[list[int], list[float]]:
    """The root mean square error, after each batch, of held-out models' estimates
    against their accuracy on all items: 5 folds, each fitted on the other models."""
    from mdad.selection.tinybenchmarks import fit_irt

    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(9,)))
    folds = np.array_split(rng.permutation(scores.shape[0]), CV_FOLDS)
    truth = scores.mean(axis=1)
    squared = []
    for k, held in enumerate(folds):
        train = np.setdiff1d(np.arange(scores.shape[0]), held)
        model = fit_irt(scores[train], dims, np.random.default_rng([seed, k])).standardised()
        discrimination = model.discrimination_ if dims > 1 else model.discrimination_[:, 0]
        counts, estimates = run_batches(discrimination, model.difficulty_, scores[held],
                                        budget, batch)
        squared.append((estimates - truth[held][None, :]) ** 2)
    return counts, [float(v) for v in np.sqrt(np.concatenate(squared, axis=1).mean(axis=1))]
