"""Build a micro-benchmark from a whole dataset and save everything needed to use it
later without the data: `mdad select`."""

from __future__ import annotations

import hashlib
import json
import numbers
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mdad import streams
from mdad._version import version
from mdad.data.matrix import ResponseMatrix
from mdad.data.registry import Dataset
from mdad.errors import ConfigError, DataError, check_open_unit, check_path, check_type, check_whole
from mdad.metrics.mdad import DEFAULT_THRESHOLD
from mdad.practice.bundle_format import (
    FORMAT,
    OLDER_FORMAT,
    READABLE_FORMATS,
    compact_ids,
    validate,
)
from mdad.practice.calibration import CV_FOLDS, cross_validation_folds
from mdad.practice.fit_pool import SPAWN_AFTER_SECONDS, fit_threads, run_fits
from mdad.practice.planner import mdad_curve, pair_structure
from mdad.selection import MethodDefaults, MicroBenchmark, SeenPool, method_class
from mdad.selection.threads import load_libraries, one_thread

if TYPE_CHECKING:
    from mdad.practice.calibration import Calibration

PASS_A_FILE = "pass a micro-benchmark file written by `mdad select`"  # the fix, in errors
# progress(done, total, step): steps of `select_microbenchmark` as they start.
SelectProgress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class MicroBenchmarkFile:
    """A saved micro-benchmark: its items, how to estimate from them, and the
    dataset's models to compare a new model with.

    Attributes
    ----------
    items : item ids, in the estimator's order.
    lm_eval_items : the same items as ``task/doc_id`` when the dataset maps to an
        lm-evaluation-harness task, else None.
    lm_eval_tasks : the tasks that have selected items, for lm-eval's ``--tasks``
        (never a group name), else None.
    lm_eval_metric : the metric the dataset was read with (estimate and compare refuse
        another unless allowed).
    estimator : the estimator's kind and parameters (see `to_microbenchmark`).
    pool_size : items the estimate stands for (the full benchmark or the --pool).
    dataset_items : the dataset's items when `pool_size` is a --pool of fewer, else
        None; the estimate, the reference accuracies and the MDAD are the pool's.
    reference_models, reference_accuracy : the dataset's models and their accuracy on
        the pool.
    reference_answers : each reference model's scores on `items`, in their order: a
        string of 0/1 digits when binary, else a list of floats. `estimate` compares a
        new model with them exactly as `compare` compares two models' answers.
    mdad, mdad_reached, max_gap, mdad_pairs, mdad_how : this size's MDAD for the
        method (None when not reached within the observed gaps, i.e. above
        `max_gap`), the pairs it is computed from (None when a study does not say),
        and where it comes from ("analytic" for random sampling, "interpolated" from a
        study's seen split, or "random-analytic" when the method has no MDAD of its
        own here). Measured against the whole pool.
    mdad_curve_sizes, mdad_curve : the MDAD at every size the file knows (1..size for
        analytic values; the study's smallest size..size when interpolated), None
        where not reached; a partial result is judged with the value at its size.
    mdad_curve_crossing_pairs : for analytic curves, the pairs in the gap bin that
        sets each size's MDAD (0 where not reached); None when interpolated from a
        study (its rows' flags say when they rest on few pairs) or not recorded.
    error_sd : unless each sample is a simple random one (`MethodDefaults.simple_random`:
        uniform random sampling, a subtask method on one subtask), the root mean square
        error of the estimate over held-out dataset models (5-fold, by model).
    cv_truth, cv_estimate : for those methods, each source model's accuracy on the pool
        and its estimate by a micro-benchmark selected without its fold, in
        `reference_models`' order as saved: what calibrates the 95% interval
        (`mdad.practice.calibration`); None for simple random samples and in files
        older than format /4.
    source_models, source_models_sha256 : how many models it was selected from and the
        sha256 of their names (one per line, in order): the reference models; for a
        method that ships a fold's draw (`MethodDefaults.ships_fold_draw`), those whose
        cross-validation fold 1 (drawn from `seed`) was left out, as a note says with
        the count; dataset_models : how many the dataset has (None in files older
        than /4).
    dataset_item_ids : every item id of the dataset (`compact_ids`), so that answers
        to another benchmark's items are told apart (None in files older than /4).
    """

    dataset: str
    sha256: str
    mdad_version: str
    method: str
    size: int
    seed: int
    items: list[str]
    lm_eval_items: list[str] | None
    lm_eval_tasks: list[str] | None
    lm_eval_metric: str
    estimator: dict[str, Any]
    pool_size: int
    reference_models: list[str]
    reference_accuracy: list[float]
    reference_answers: list[Any]
    mdad: float | None
    mdad_reached: bool
    max_gap: float | None
    mdad_pairs: int | None
    mdad_how: str
    mdad_curve_sizes: list[int]
    mdad_curve: list[float | None]
    threshold: float
    error_sd: float | None
    format: str = FORMAT
    notes: list[str] = field(default_factory=list)
    dataset_items: int | None = None
    mdad_curve_crossing_pairs: list[int] | None = None
    cv_truth: list[float] | None = None
    cv_estimate: list[float] | None = None
    source_models: int | None = None
    source_models_sha256: str | None = None
    dataset_models: int | None = None
    dataset_item_ids: dict[str, list] | None = None
    # the belts fitted so far, by confidence: an estimate reads each more than once
    _belts: dict[float, Calibration | None] = field(default_factory=dict, init=False,
                                                    repr=False, compare=False)
    # the reference models' IRT jackknife estimates so far, by observed items: every
    # estimate's lists compare the model with them
    _jackknives: dict[bytes, dict[int, np.ndarray]] = field(
        default_factory=dict, init=False, repr=False, compare=False)

    def calibration(self, confidence: float = 0.95) -> Calibration | None:
        """The held-out calibration of the 95% interval, or None when the file has none
        (simple random samples, whose interval is exact; files older than /4) or too
        few models to fit one (fewer than `calibration.MIN_MODELS`)."""
        from mdad.practice.calibration import MIN_MODELS, Calibration

        if (self.cv_truth is None or self.cv_estimate is None
                or len(self.cv_truth) < MIN_MODELS or np.ptp(self.cv_truth) < 1e-6):
            return None
        if confidence not in self._belts:
            # a static micro-benchmark's band does not grow past the range (see the module)
            self._belts[confidence] = Calibration.fit(
                np.asarray(self.cv_truth), np.asarray(self.cv_estimate), confidence,
                widen_past=False)
        return self._belts[confidence]

    def calibration_caveat(self) -> str:
        """'' unless the file's interval was calibrated on the held-out models'
        confidences rather than their scores (a format /4 file of a method that
        estimates from confidences), then a clause that says so and what to do."""
        from mdad.practice.bundle_format import CONFIDENCE_CALIBRATED

        confident = bool(self.estimator.get("confidence")) or (
            self.estimator.get("kind") == "predictor")
        if self.format != CONFIDENCE_CALIBRATED or not confident:
            return ""
        return ("; but on the held-out models' confidences, not their scores, which is "
                "not what your results give where the data has confidences (a format /4 "
                "file of a method that estimates from confidences): select again")

    def subset_note(self) -> str:
        """'' when selected from all the dataset's models, else a sentence saying from
        how many."""
        if self.dataset_models is None or self.source_models in (None, self.dataset_models):
            return ""
        return (f"selected from {self.source_models} of {self.dataset}'s "
                f"{self.dataset_models} models (sha256 of their names "
                f"{(self.source_models_sha256 or '')[:12]}...), not from all of them")

    def scope(self) -> str:
        """What the estimate stands for: 'gpqa', or 'a pool of 3 of gpqa's 448 items'."""
        if self.dataset_items is None:
            return self.dataset
        return f"a pool of {self.pool_size} of {self.dataset}'s {self.dataset_items} items"

    def to_json(self) -> str:
        """The file's text (`load` reads it back); a file read from an older format is
        written in it again, without the fields that format lacks."""
        from mdad.practice.bundle_format import CALIBRATED_FORMATS, NEW_IN_4

        data = {k: v for k, v in asdict(self).items() if not k.startswith("_")}
        if self.format not in CALIBRATED_FORMATS:
            data = {k: v for k, v in data.items() if k not in NEW_IN_4}
        return json.dumps(data, indent=1) + "\n"

    def save(self, path: Path) -> None:
        Path(path).write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> MicroBenchmarkFile:
        check_path(path, "path")
        from mdad.data.files import check_regular_file

        check_regular_file(path, fix=PASS_A_FILE)
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8-sig"))
        except (OSError, ValueError, RecursionError) as exc:
            reason = "nested too deeply" if isinstance(exc, RecursionError) else exc
            raise DataError(f"{path}: cannot read the micro-benchmark file ({reason}); "
                            f"{PASS_A_FILE}") from None
        found = data.get("format") if isinstance(data, dict) else None
        if isinstance(found, str) and found.startswith("mdad-microbenchmark/") and (
                found not in READABLE_FORMATS):
            raise DataError(f"{path}: written by another version of mdad (format {found}, "
                            f"this version reads {OLDER_FORMAT} to {FORMAT}); select again "
                            "with `mdad select`")
        if found not in READABLE_FORMATS:
            raise DataError(f"{path}: not a micro-benchmark file written by `mdad select` "
                            f"(format {FORMAT})")
        validate(data, path)
        bundle = cls(**data)
        bundle._estimator(where=path)  # a kind the method does not save fails here
        return bundle

    def reference_scores(self) -> np.ndarray:
        """The reference models' scores on the items, shape (n_models, size)."""
        rows = [np.frombuffer(a.encode("ascii"), dtype=np.uint8) - ord("0")
                if isinstance(a, str) else np.asarray(a) for a in self.reference_answers]
        return np.asarray(rows, dtype=np.float64).reshape(len(rows), len(self.items))

    def reference_jackknife(self, observed: np.ndarray, indices: np.ndarray) -> np.ndarray:
        """The IRT jackknife estimates (`estimators.irt_jackknife_estimates`) of the
        reference models `indices` (int array) on the `observed` items (bool, (size,)),
        shape (len(indices), observed.sum() + 1); kept for the next call on the same
        items, as the lists of every model estimated on this file ask for them."""
        from mdad.practice.estimators import irt_jackknife_estimates

        indices = np.asarray(indices, dtype=np.int64)
        kept = self._jackknives.setdefault(np.asarray(observed, dtype=bool).tobytes(), {})
        missing = [int(i) for i in dict.fromkeys(indices.tolist()) if i not in kept]
        if missing:
            rows = irt_jackknife_estimates(self, self.reference_scores()[missing], observed)
            kept.update(zip(missing, rows, strict=True))
        return np.array([kept[int(i)] for i in indices]).reshape(indices.size,
                                                                 int(observed.sum()) + 1)

    def mdad_at(self, size: int) -> tuple[bool, float | None]:
        """(known, value) of the MDAD for `size` items: known False when the file's curve
        does not cover that size; value None when not reached."""
        curve = dict(zip(self.mdad_curve_sizes, self.mdad_curve, strict=True))
        if size not in curve:
            return False, None
        return True, curve[size]

    def crossing_pairs_at(self, size: int) -> int | None:
        """Pairs in the gap bin that sets the MDAD for `size` items (0 when not
        reached), or None when the file does not record them for that size."""
        if self.mdad_curve_crossing_pairs is None or size not in self.mdad_curve_sizes:
            return None
        return self.mdad_curve_crossing_pairs[self.mdad_curve_sizes.index(size)]

    def to_microbenchmark(self) -> MicroBenchmark:
        """The estimator, with `items` as positions 0..size-1 of a model's scores,
        loaded by the file's method (see `MethodDefaults.load_estimator`).

        Raises
        ------
        DataError
            For a method no installed package registers, or an estimator kind the
            method does not save.
        """
        return self._estimator(where="the micro-benchmark file")

    def _estimator(self, where: object) -> MicroBenchmark:
        try:
            method = method_class(self.method)
        except ConfigError:
            raise DataError(f"{where}: made by method {self.method!r}, which no installed "
                            "package registers (see `mdad methods`)") from None
        return method.load_estimator(self.estimator, len(self.items), where=where)


def select_microbenchmark(dataset: Dataset, method: str, size: int, *, seed: int = 0,
                          pool: list[str] | None = None,
                          models: Sequence[str] | Sequence[int] | np.ndarray | None = None,
                          threshold: float = DEFAULT_THRESHOLD, study_dir: Path | None = None,
                          allow_other_version: bool = False, metric: str | None = None,
                          progress: SelectProgress | None = None,
                          spawn_worker: bool = False) -> MicroBenchmarkFile:
    """Choose a micro-benchmark of `size` items of `dataset` with `method`, ready to save.

    The items are chosen from the whole dataset (or the item ids in `pool`), using
    every model of the dataset as a source, or only `models`: held-out evaluation
    selects from some models and estimates the others. A method that ships a fold's
    draw (p-IRT, gp-IRT: `MethodDefaults.ships_fold_draw`) uses those outside its
    cross-validation fold 1, and its file's notes say so. The file records how many
    models and which (a hash of their names), and `estimate` says so when they are
    not all. Besides the items, the file holds the estimator, the reference models'
    accuracy and answers, the MDAD at this size and, unless each sample is a simple
    random one, the cross-validated error that calibrates the interval.

    Parameters
    ----------
    dataset : Dataset
        The benchmark's models and items (`load_dataset`).
    method : str
        The selection method (see `mdad methods`); one that chooses one fixed subset
        (not an adaptive one).
    size : int
        Items to choose, in 1..the largest size `method` can build from the pool (or
        within the study's sizes, with `study_dir`).
    seed : int, default 0
        Seed of the selection, >= 0.
    pool : list of str or None, default None
        Item ids to choose from (each once, all the dataset's); the estimate, the
        reference accuracies and the MDAD are then the pool's. None: every item.
    models : sequence of str, sequence of int, numpy.ndarray or None, default None
        The source models: names, or distinct indices into the dataset's models.
        None: every model.
    threshold : float, default 0.8
        The agreement probability that defines MDAD, in (0, 1).
    study_dir : pathlib.Path or None, default None
        A finished study of the method (see `mdad plan --run`) whose seen split's MDAD
        curve is interpolated; without it, methods with an analytic MDAD get theirs
        and other methods uniform random sampling's, marked as such.
    allow_other_version : bool, default False
        Accept a `study_dir` made on another version of this dataset's data (its
        sha256 differs).
    metric : str or None, default None
        The metric the data was read with; None: the dataset's own. It must not
        differ from the one `dataset` was read with.
    progress : SelectProgress or None, default None
        Called with (fits done, total fits, what) at the start and as each fit
        finishes: the selection and, unless its samples are simple random ones, the 5
        folds of the cross-validated error, which may take seconds each.
    spawn_worker : bool, default False
        Let slow fits (the first still running after `SPAWN_AFTER_SECONDS`) use a
        second core through a spawned worker process (see `run_fits`; a script must
        then guard its work with ``if __name__ == "__main__":``); the numbers are the
        same either way.

    Returns
    -------
    MicroBenchmarkFile
        The micro-benchmark, to save with its ``save`` method and read back with
        ``MicroBenchmarkFile.load`` (`estimate_score`, `compare_models`). Its MDAD is
        an accuracy fraction, None when not reached (then above `max_gap`).

    Raises
    ------
    ConfigError
        For an unknown method or one that chooses items per model, a size outside
        1..pool size (or the study's sizes), a negative seed, a threshold outside
        (0, 1), a `progress` that is not callable, another `metric` than the data's, an
        unknown or repeated pool item, `models` indices repeated or out of range, too
        few models for the method, or a `study_dir` with a `pool` smaller than the
        dataset, of another benchmark, of another threshold or (unless allowed) of other
        data.
    DataError
        For an unknown or repeated model in `models`; for a `study_dir` that is not a
        readable study or has no seen-split rows for the method.
    """
    return select_microbenchmarks(
        dataset, method, [size], seed=seed, pool=pool, models=models, threshold=threshold,
        study_dir=study_dir, allow_other_version=allow_other_version, metric=metric,
        progress=progress, spawn_worker=spawn_worker)[0]


def select_microbenchmarks(dataset: Dataset, method: str, sizes: Sequence[int], *,
                           seed: int = 0, pool: list[str] | None = None,
                           models: Sequence[str] | Sequence[int] | np.ndarray | None = None,
                           threshold: float = DEFAULT_THRESHOLD,
                           study_dir: Path | None = None, allow_other_version: bool = False,
                           metric: str | None = None, progress: SelectProgress | None = None,
                           spawn_worker: bool = False, cache: dict[Any, Any] | None = None
                           ) -> list[MicroBenchmarkFile]:
    """`select_microbenchmark` at each of `sizes`, in their order.

    The same files as one `select_microbenchmark` call per size, but the sizes share
    each pool's work (anchor points' correlations, tinyBenchmarks' IRT fit), so that
    several sizes cost little more than one.

    Parameters
    ----------
    dataset : Dataset
        As in `select_microbenchmark`.
    method : str
        As in `select_microbenchmark`.
    sizes : Sequence[int]
        The sizes, a non-empty list of whole numbers, each in 1..the largest size
        `method` can build from the pool (or within the study's sizes).
    seed : int, default 0
        As in `select_microbenchmark`.
    pool : list of str or None, default None
        As in `select_microbenchmark`.
    models : sequence of str, sequence of int, numpy.ndarray or None, default None
        As in `select_microbenchmark`.
    threshold : float, default 0.8
        As in `select_microbenchmark`.
    study_dir : pathlib.Path or None, default None
        As in `select_microbenchmark`.
    allow_other_version : bool, default False
        As in `select_microbenchmark`.
    metric : str or None, default None
        As in `select_microbenchmark`.
    progress : SelectProgress or None, default None
        As in `select_microbenchmark`: it counts the same fits (the selection and its
        cross-validation folds), each now for every size.
    spawn_worker : bool, default False
        As in `select_microbenchmark`.
    cache : dict or None, default None
        A dict to pass to several calls on the same dataset, models and seed: they then
        share their pools' work, each pool built once (tinyBenchmarks' MAP, p-IRT and
        gp-IRT variants fit one IRT model; a round trip of the three costs about one).
        The files are the same as without it. It keeps every pool it builds (the
        models' scores and the fits) for as long as it lives; with `spawn_worker`, the
        cross-validation folds' pools are not kept. A pool is found by its contents
        (scores, confidences, subtasks) and seed, never by names. None: nothing shared.

    Returns
    -------
    list of MicroBenchmarkFile
        One micro-benchmark per size, in the order of `sizes`.

    Raises
    ------
    ConfigError, DataError
        As `select_microbenchmark` does, and for `sizes` that are not a non-empty list
        of whole numbers.
    """
    check_type(dataset, Dataset, "dataset", "a Dataset (mdad.load_dataset(name))")
    check_read_with(dataset, metric)
    check_whole(seed, "seed", minimum=0)
    check_open_unit(threshold, "threshold")
    if progress is not None and not callable(progress):
        raise ConfigError("progress must be a function of (done, total, step) or None",
                          parameters=("progress",))
    check_type(cache, dict | None, "cache", "a dict or None")
    if isinstance(sizes, int | str) or not isinstance(sizes, Sequence | np.ndarray):
        raise ConfigError(f"sizes must be a list of sizes; got {sizes!r}",
                          parameters=("sizes",))
    for size in sizes:  # the range is checked against the method below
        if not isinstance(size, numbers.Integral) or isinstance(size, bool):
            raise ConfigError(f"size must be a whole number; got {size!r}",
                              parameters=("size",))
    sizes = [int(size) for size in sizes]
    if not sizes:
        raise ConfigError("sizes: give at least one size", parameters=("sizes",))
    matrix = model_subset(_pool_matrix(dataset.matrix, pool), models)
    if study_dir is not None and matrix.n_items < dataset.matrix.n_items:
        # the study's micro-benchmarks were drawn from every item, not from the pool
        raise ConfigError(f"study_dir's MDAD is for micro-benchmarks drawn from all "
                          f"{dataset.matrix.n_items} items of {dataset.name}, not from a "
                          f"pool of {matrix.n_items}; leave out study_dir to get the pool's "
                          "own MDAD", parameters=("study_dir",))
    cls = method_class(method)
    if not cls.static:
        raise ConfigError(f"method {method} chooses items per model, not one fixed subset; "
                          f"run it with `mdad adaptive start` instead", parameters=("method",))
    selector = cls()
    codes = np.unique(matrix.subtask_codes, return_inverse=True)[1]
    limit = cls.max_size_for(np.bincount(codes))
    for size in sizes:
        if not 1 <= size <= limit:
            raise ConfigError(f"size {size} is outside 1..{limit}, the sizes {method} can "
                              f"build from a pool of {matrix.n_items} items",
                              parameters=("size",))
    if matrix.n_models < max(selector.min_sources, 1):
        raise ConfigError(f"method {method} needs at least {selector.min_sources} models")
    # A simple random sample's interval is exact (`intervals.hypergeometric_interval`):
    # no cross-validation. A subtask method's on a pool of one subtask is one; a belt
    # calibrated on its 5 folds would see 5 draws only (GPQA's top decile: 92% covered
    # at 25 and 100 items by subtask-equal's belt, 12 seeds).
    cross_validate = not cls.simple_random(np.unique(matrix.subtask_codes,
                                                     return_counts=True)[1])
    fold_drawn = cross_validate and cls.ships_fold_draw
    total = (0 if fold_drawn else 1) + (CV_FOLDS if cross_validate else 0)
    report = progress or (lambda done, total, step: None)
    curves: list[list[dict[str, Any]]] = []

    def find_curves() -> None:
        curves.append(_mdad_curves(dataset, matrix, cls, sizes, threshold, study_dir,
                                   allow_other_version))

    if study_dir is not None:  # its errors come before any fit
        find_curves()
    shown = ", ".join(str(size) for size in sizes)
    report(0, total, f"selecting {shown} items with {method} from {matrix.n_models} models"
           + (f" in {CV_FOLDS} cross-validation folds, writing fold 1's" if fold_drawn
              else f", and cross-validating its estimate in {CV_FOLDS} folds"
              if cross_validate else ""))
    selected = _select_and_validate(matrix, selector, sizes, seed, cross_validate,
                                    lambda done, step: report(done, total, step),
                                    spawn_worker, None if curves else find_curves, cache)
    truth = matrix.accuracy()
    names = [str(m) for m in matrix.model_names]
    spec = dataset.spec
    shared = {  # the same for every size
        "dataset": dataset.name, "sha256": matrix.sha256 or "", "mdad_version": version(),
        "method": method, "seed": seed,
        "lm_eval_metric": metric or dataset.metric or (spec.lm_eval_metric if spec else "acc"),
        "pool_size": matrix.n_items, "reference_models": names,
        "reference_accuracy": [float(a) for a in truth], "threshold": threshold,
        "dataset_items": (dataset.matrix.n_items
                          if matrix.n_items < dataset.matrix.n_items else None),
        "cv_truth": [float(a) for a in truth] if cross_validate else None,
        "source_models": len(names), "source_models_sha256": names_sha256(names),
        "dataset_models": dataset.matrix.n_models,
        "dataset_item_ids": compact_ids([str(i) for i in dataset.matrix.item_ids])}
    files = []
    for size, curve, (micro, held_out) in zip(sizes, curves[0], selected, strict=True):
        order = np.asarray(micro.items)
        ids = [str(matrix.item_ids[i]) for i in order]
        lm_eval_items = lm_eval_ids(ids, spec.lm_eval_task if spec else None)
        files.append(MicroBenchmarkFile(
            **shared, size=size, items=ids, lm_eval_items=lm_eval_items,
            lm_eval_tasks=lm_eval_tasks(lm_eval_items),
            estimator=cls.save_estimator(micro),
            reference_answers=_answers_json(matrix.scores()[:, order]), **curve,
            error_sd=(None if held_out is None
                      else float(np.sqrt(np.mean((held_out - truth) ** 2)))),
            notes=list(micro.notes) + ([_fold_note(matrix.n_models, seed)]
                                       if fold_drawn else []),
            cv_estimate=None if held_out is None else [float(e) for e in held_out]))
    return files


def _fold_note(n_models: int, seed: int) -> str:
    """The note of a file whose method ships cross-validation fold 1's micro-benchmark
    (`MethodDefaults.ships_fold_draw`) selected from `n_models` with `seed`."""
    held = len(cross_validation_folds(seed, n_models)[0])
    return (f"selected on the {n_models - held} of the {n_models} reference models outside "
            f"cross-validation fold 1 of {CV_FOLDS}, as each fold's micro-benchmark was: "
            "the 95% interval is calibrated on micro-benchmarks selected as this one was")


def check_read_with(dataset: Dataset, metric: str | None) -> None:
    """Refuse a `metric` other than the one `dataset` was read with (`Dataset.metric`):
    a file would record a metric its reference answers are not of."""
    if metric is not None and dataset.metric is not None and metric != dataset.metric:
        raise ConfigError(f"metric: {dataset.name} was read with {dataset.metric}, not "
                          f"{metric!r}; load it with metric={metric!r} to use that one",
                          parameters=("metric",))


def names_sha256(names: list[str]) -> str:
    """The sha256 of model names, one per line, in order."""
    return hashlib.sha256("".join(f"{name}\n" for name in names).encode()).hexdigest()


def model_subset(matrix: ResponseMatrix,
                  models: Sequence[str] | Sequence[int] | np.ndarray | None) -> ResponseMatrix:
    """`matrix` with only `models` (names, or indices into its models), in its order."""
    if models is None:
        return matrix
    if isinstance(models, str) or np.asarray(models).dtype == bool:
        raise ConfigError("models must be a list of model names or indices, not "
                          f"{type(models).__name__} of {np.asarray(models).dtype}",
                          parameters=("models",))
    values = list(np.asarray(models).tolist())
    if values and all(isinstance(v, int) for v in values):
        if len(set(values)) != len(values) or not all(0 <= v < matrix.n_models
                                                      for v in values):
            raise ConfigError(f"models: indices must be distinct and in 0..{matrix.n_models - 1}",
                              parameters=("models",))
        rows = np.array(sorted(values), dtype=np.int64)
    else:
        rows = np.sort(matrix.model_index([str(v) for v in values], what="models",
                                          parameter="models"))
    if rows.size == 0:
        raise ConfigError("models: select from at least one model", parameters=("models",))
    return matrix.take(models=rows)


def _mdad_curves(dataset: Dataset, matrix: ResponseMatrix, cls: type[MethodDefaults],
                 sizes: list[int], threshold: float, study_dir: Path | None,
                 allow_other_version: bool) -> list[dict[str, Any]]:
    """The file's MDAD fields (`mdad`, ..., `mdad_curve_crossing_pairs`) at each of
    `sizes`: the analytic curve over 1..size, or the study's seen curve up to size."""
    if study_dir is not None:
        from mdad.practice.sizing import interpolate, study_curve, study_mdad_curve

        points = study_curve(Path(study_dir), cls.name, threshold,
                             None if allow_other_version else dataset.matrix.sha256,
                             dataset=dataset.name)
        fields = []
        for size in sizes:
            _, point = interpolate(points, gap=None, size=size)
            known = study_mdad_curve(points, size)
            fields.append({**_mdad_fields(point.value, point.max_gap, point.pairs,
                                          "interpolated"),
                           "mdad_curve_sizes": list(known), "mdad_curve": list(known.values())})
        return fields
    structure = pair_structure(matrix.correctness, matrix.subtask_codes)
    stratified = cls.analytic_mdad == "stratified"
    # each point stands alone: one curve up to the largest size serves every size
    curve = mdad_curve(structure, np.arange(1, max(sizes) + 1), threshold=threshold,
                       stratified=stratified)
    how = "analytic" if cls.analytic_mdad is not None else "random-analytic"
    return [{**_mdad_fields(curve[size - 1].value, curve[size - 1].max_gap,
                            curve[size - 1].pairs, how),
             "mdad_curve_sizes": list(range(1, size + 1)),
             "mdad_curve": [point.value for point in curve[:size]],
             "mdad_curve_crossing_pairs": [point.crossing_pairs for point in curve[:size]]}
            for size in sizes]


def _mdad_fields(mdad: float | None, max_gap: float | None, pairs: int | None, how: str
                 ) -> dict[str, Any]:
    """The file's MDAD fields at its own size, by their names in `MicroBenchmarkFile`."""
    return {"mdad": mdad, "mdad_reached": mdad is not None, "max_gap": max_gap,
            "mdad_pairs": pairs, "mdad_how": how}


def _answers_json(scores: np.ndarray) -> list[Any]:
    """Rows of `scores` (n_models, size) as 0/1 digit strings when binary, else floats."""
    if np.isin(scores, (0.0, 1.0)).all():
        digits = (scores.astype(np.uint8) + ord("0")).astype(np.uint8)
        return [row.tobytes().decode("ascii") for row in digits]
    return [[float(v) for v in row] for row in scores]


def lm_eval_tasks(lm_eval_items: list[str] | None) -> list[str] | None:
    """The tasks of ``task/doc_id`` items, sorted.

    What lm-eval's ``--tasks`` needs to run exactly the selected items (a task left out
    of ``--samples`` would run in full).

    Parameters
    ----------
    lm_eval_items : list of str or None
        Item names ``task/doc_id`` (`MicroBenchmarkFile.lm_eval_items`), or None when
        the dataset has no lm-eval mapping.

    Returns
    -------
    list of str or None
        The distinct tasks, sorted; None when `lm_eval_items` is None.

    Raises
    ------
    ConfigError
        When `lm_eval_items` is not a list of ``task/doc_id`` names.
    """
    if lm_eval_items is None:
        return None
    if isinstance(lm_eval_items, str) or not all(
            isinstance(item, str) and "/" in item for item in lm_eval_items):
        raise ConfigError("lm_eval_items must be a list of 'task/doc_id' names",
                          parameters=("lm_eval_items",))
    return sorted({item.rsplit("/", 1)[0] for item in lm_eval_items})


def other_benchmark(bundle: MicroBenchmarkFile, name: str) -> bool:
    """Whether `name` and the bundle's dataset are two different named datasets (a
    file's data may be another version of the same benchmark: not decided here)."""
    from mdad.data.registry import DATASETS

    return {bundle.dataset, name} <= set(DATASETS) and bundle.dataset != name


def check_same_benchmark(bundle: MicroBenchmarkFile, name: str) -> None:
    """Refuse a named dataset that is another benchmark than the bundle's: another
    version of the same data may be allowed, another benchmark never.

    Raises
    ------
    ConfigError
        When both are named datasets and the names differ.
    """
    if other_benchmark(bundle, name):
        raise ConfigError(f"dataset {name} is another benchmark than the "
                          f"micro-benchmark's ({bundle.dataset}); compare with "
                          f"dataset {bundle.dataset}, or select from {name}",
                          parameters=("dataset",))


def with_reference(bundle: MicroBenchmarkFile, dataset: Dataset, *,
                   allow_other_version: bool = False) -> tuple[MicroBenchmarkFile, str]:
    """`bundle` compared with `dataset`'s models instead of the saved ones.

    The file's reference models, their accuracy (on all the dataset's items) and their
    answers (on the micro-benchmark's items) are replaced by `dataset`'s, so that a new
    model is estimated and compared against them.

    Parameters
    ----------
    bundle : MicroBenchmarkFile
        The saved micro-benchmark (``MicroBenchmarkFile.load(path)``).
    dataset : Dataset
        The same benchmark's data (`load_dataset`), holding every item of the
        micro-benchmark.
    allow_other_version : bool, default False
        Accept data whose sha256 differs from the file's (another version of the same
        benchmark); the warning returned says so.

    Returns
    -------
    bundle : MicroBenchmarkFile
        A copy of `bundle` with `dataset`'s models as its reference models.
    warning : str
        A warning naming both sha256 when the data's version differs and that was
        allowed; "" otherwise.

    Raises
    ------
    ConfigError
        For a `bundle` or `dataset` of the wrong type; when `dataset` is another named
        benchmark than the file's; when the file stands for a pool of items whose ids it
        does not record; when `dataset`'s sha256 differs from the file's and
        `allow_other_version` is False.
    DataError
        When `dataset` lacks some of the micro-benchmark's items.
    """
    check_type(bundle, MicroBenchmarkFile, "bundle",
               "a MicroBenchmarkFile (MicroBenchmarkFile.load(path))")
    check_type(dataset, Dataset, "dataset", "a Dataset (mdad.load_dataset(name))")
    check_same_benchmark(bundle, dataset.name)
    if bundle.dataset_items is not None:
        raise ConfigError(f"the micro-benchmark stands for {bundle.scope()}, whose item ids "
                          f"it does not record, so {dataset.name}'s models' accuracy on that "
                          "pool is unknown; compare with the models saved in the file "
                          "(leave out dataset)", parameters=("dataset",))
    sha = dataset.matrix.sha256 or ""
    warning = ""
    if sha != bundle.sha256:
        message = (f"the micro-benchmark was made from {bundle.dataset} with sha256 "
                   f"{bundle.sha256[:12]}..., this data has {sha[:12]}...")
        if not allow_other_version:
            raise ConfigError(f"{message}; select again, or pass allow_other_version",
                              parameters=("allow_other_version",))
        warning = message + "; comparing with this data's models anyway"
    column = {str(item): k for k, item in enumerate(dataset.matrix.item_ids)}
    absent = [item for item in bundle.items if item not in column]
    if absent:
        raise DataError(f"{dataset.name} lacks {len(absent)} of the micro-benchmark's "
                        f"{bundle.size} items (e.g. {absent[0]!r}); its models cannot be "
                        "compared on them")
    answers = dataset.matrix.scores()[:, [column[item] for item in bundle.items]]
    return replace(bundle, reference_models=[str(m) for m in dataset.matrix.model_names],
                   reference_accuracy=[float(a) for a in dataset.matrix.accuracy()],
                   reference_answers=_answers_json(answers)), warning


def _pool_matrix(matrix: ResponseMatrix, pool: list[str] | None) -> ResponseMatrix:
    if pool is None:
        return matrix
    if isinstance(pool, str) or not isinstance(pool, Collection) or not len(pool):
        raise ConfigError(f"pool must be a non-empty list of item ids; got {pool!r:.60}",
                          parameters=("pool",))
    pool = list(pool)
    index = {str(item): k for k, item in enumerate(matrix.item_ids)}
    unknown = [item for item in pool if item not in index]
    if unknown:
        raise ConfigError(f"pool: {len(unknown)} item ids are not in the dataset, e.g. "
                          f"{unknown[0]!r}; use ids as `mdad data info` shows them",
                          parameters=("pool",))
    if len(set(pool)) != len(pool):
        raise ConfigError("pool lists an item id twice", parameters=("pool",))
    return matrix.take(items=np.array(sorted(index[item] for item in pool)))


def _seen_pool(matrix: ResponseMatrix, seed: np.random.SeedSequence,
               models: np.ndarray | None = None,
               cache: dict[Any, Any] | None = None) -> SeenPool:
    """The pool of `matrix`'s items and `models` (None: all), its shared work drawn
    from `seed`; the one `cache` holds for the same values and seed, if any (keyed on
    the pool's contents: the names of models or items say nothing of their scores)."""
    rows = slice(None) if models is None else models
    pool = SeenPool(matrix.scores(rows), matrix.gold_confidence(rows),
                    np.unique(matrix.subtask_codes, return_inverse=True)[1], seed=seed)
    if cache is None:
        return pool
    digest = hashlib.blake2b(repr((seed.entropy, tuple(seed.spawn_key))).encode())
    for values in (pool.correctness, pool.confidence, pool.subtask_codes):
        array = np.ascontiguousarray(values)
        digest.update(repr((array.shape, array.dtype.str)).encode())
        digest.update(array.tobytes())
    return cache.setdefault(("seen-pool", digest.hexdigest()), pool)


def lm_eval_ids(ids: list[str], task: str | None) -> list[str] | None:
    """The lm-eval ``task/doc`` names of item `ids`: the ids themselves when every one
    holds a ``/``, ``<task>/<id>`` when every id is a doc number and the dataset has an
    lm-eval `task`; None otherwise (no mapping: results must come as a CSV)."""
    if all("/" in item for item in ids):
        return ids
    if task is not None and all(item.isdigit() for item in ids):
        return [f"{task}/{item}" for item in ids]
    return None


def _select_and_validate(matrix: ResponseMatrix, selector: MethodDefaults,
                         sizes: list[int], seed: int, cross_validate: bool,
                         finished: Callable[[int, str], None], spawn_worker: bool = False,
                         meanwhile: Callable[[], None] | None = None,
                         cache: dict[Any, Any] | None = None
                         ) -> list[tuple[MicroBenchmark, np.ndarray | None]]:
    """For each of `sizes`: the micro-benchmark selected from every model, and (when
    `cross_validate`) the method's estimate of each model, shape (n_models,), by a
    micro-benchmark it did not select with: 5 folds of models, each estimated by one
    selected on the rest. For a method that ships a fold's draw
    (`MethodDefaults.ships_fold_draw`), the micro-benchmark is fold 1's, and there is
    no selection from every model.

    The selection and the folds are independent fits, each on its own pool for every
    size, with its own seeds and one BLAS thread, as a study's cells run: the same
    numbers whatever the machine's cores, the other sizes, and wherever a fit runs
    (`run_fits`: here, and in a spawned worker when the first fit is slow; in a thread
    per core for a method whose fits release Python's lock, which then also import
    the method's `libraries_after_fit` while they run, as they do `meanwhile`).
    `finished(steps done, step)` follows each fit. The pools come from `cache` when it
    holds them (see `select_microbenchmarks`).
    """
    folds = cross_validation_folds(seed, matrix.n_models)
    fold_drawn = cross_validate and selector.ships_fold_draw
    tasks = [] if fold_drawn else [
        (_select, (selector, _seen_pool(matrix, streams.stream(seed, "pool"), cache=cache),
                   sizes, streams.stream(seed, "select")))]
    first = len(tasks)  # the index of fold 1's task
    if cross_validate:
        # each fold builds its pool when it runs, and drops it then (an Anchor Points
        # pool holds three n_items x n_items arrays) unless `cache` keeps it; a spawned
        # worker gets none (its copy would not come back)
        tasks += [(_fold_estimates, (matrix, selector, sizes, seed, k, folds[k],
                                     None if spawn_worker else cache, fold_drawn and k == 0))
                  for k in range(CV_FOLDS)]
    threads = _threads(selector, matrix, len(tasks))

    def alongside() -> None:
        load_libraries([selector])
        if meanwhile is not None:
            meanwhile()

    results = {}
    if threads > 1:
        selector.warm_up()
    elif meanwhile is not None:  # the fits would hold the lock it needs
        meanwhile()
    with one_thread([selector], include_after_fit=threads == 1):
        fits = run_fits(tasks, methods=[selector],
                        spawn_after=SPAWN_AFTER_SECONDS if spawn_worker else None,
                        threads=threads, meanwhile=alongside if threads > 1 else None)
        for done, (index, result) in enumerate(fits, start=1):
            results[index] = result
            finished(done, "selected" if index < first else
                     f"cross-validation fold {index - first + 1} of {CV_FOLDS} done")
    if not cross_validate:
        return [(micro, None) for micro in results[0]]
    if fold_drawn:
        chosen = [micro for micro, _ in results[first]]
        results[first] = [estimate for _, estimate in results[first]]
    else:
        chosen = results[0]
    selected = []
    for s in range(len(sizes)):
        held_out = np.empty(matrix.n_models)
        for k in range(CV_FOLDS):
            held_out[folds[k]] = results[first + k][s]
        selected.append((chosen[s], held_out))
    return selected


def _threads(selector: MethodDefaults, matrix: ResponseMatrix, tasks: int) -> int:
    """Threads for `tasks` fits of `selector` on `matrix`: one per core for fits that
    release Python's lock, as many as the available memory holds at once; else 1."""
    if not selector.fits_release_gil(matrix.n_models, matrix.n_items):
        return 1
    return fit_threads(tasks, selector.fit_memory(matrix.n_models, matrix.n_items))


def _select(selector: MethodDefaults, pool: SeenPool, sizes: list[int],
            seed: np.random.SeedSequence) -> list[MicroBenchmark]:
    """Each size's selection, each drawing afresh from the stream `seed`."""
    return [selector.select(pool, size, rng=np.random.default_rng(seed)) for size in sizes]


def _fold_estimates(matrix: ResponseMatrix, selector: MethodDefaults, sizes: list[int],
                    seed: int, k: int, held: np.ndarray,
                    cache: dict[Any, Any] | None = None, keep: bool = False
                    ) -> list[np.ndarray] | list[tuple[MicroBenchmark, np.ndarray]]:
    """For each of `sizes`, the estimated accuracy of the `held` models (fold `k`),
    shape (len(held),), by a micro-benchmark selected on the other models (their pool
    from `cache` when it holds it); with `keep`, each as (micro-benchmark, estimates).

    The estimate reads the held-out models' scores, never their gold-option confidence,
    even for a method that selects by confidences (`uses_confidence`): a user's results
    give scores (`read_model_scores`), and the interval must be calibrated on the
    estimates a user gets. (A study estimates its targets from their confidences, as
    the paper does; on data without confidences the two are the same.)"""
    train = np.setdiff1d(np.arange(matrix.n_models), held)
    pool = _seen_pool(matrix, streams.stream(seed, "cross-validation", "pool", k), train,
                      cache)
    scores = matrix.scores(held)
    draws = streams.stream(seed, "cross-validation", "select", k)
    micros = [selector.select(pool, size, rng=np.random.default_rng(draws))
              for size in sizes]
    if keep:
        return [(micro, micro.estimate(scores)) for micro in micros]
    return [micro.estimate(scores) for micro in micros]


def lm_eval_samples_json(bundle: MicroBenchmarkFile) -> dict[str, list[int]]:
    """The micro-benchmark's items as lm-evaluation-harness's ``--samples`` option wants them.

    Parameters
    ----------
    bundle : MicroBenchmarkFile
        The saved micro-benchmark, whose dataset maps to lm-eval tasks.

    Returns
    -------
    dict of str to list of int
        ``{task: [doc indices]}``, tasks and indices ascending (see `samples_by_task`).

    Raises
    ------
    ConfigError
        When the dataset has no lm-evaluation-harness task mapping (its items are not
        named ``task/doc_id``).
    """
    if bundle.lm_eval_items is None:
        raise ConfigError(f"dataset {bundle.dataset} has no lm-evaluation-harness task "
                          "mapping; --format lm-eval needs items named task/doc_id")
    return samples_by_task(bundle.lm_eval_items)


def samples_by_task(names: Sequence[str]) -> dict[str, list[int]]:
    """``task/doc`` `names` as ``{task: [doc indices]}``, tasks and indices ascending
    (the harness logs wrong doc_ids for unsorted lists)."""
    tasks: dict[str, list[int]] = {}
    for name in names:
        task, doc = name.rsplit("/", 1)
        tasks.setdefault(task, []).append(int(doc))
    return {task: sorted(docs) for task, docs in sorted(tasks.items())}
