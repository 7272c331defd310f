"""`mdad plan`: the size a micro-benchmark needs for a gap, or the MDAD of a size."""

from __future__ import annotations

import numbers
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from mdad.data.registry import Dataset
from mdad.errors import ConfigError, DataError, check_integer, check_open_unit, check_type
from mdad.metrics.mdad import DEFAULT_THRESHOLD
from mdad.practice.planner import (
    AGAINST,
    Plan,
    analytic_mdad,
    at_most,
    pair_structure,
)
from mdad.practice.planner import size_for_gap as analytic_size_for_gap
from mdad.selection import largest_size as method_largest_size
from mdad.selection import method_class

# The split of a study that stands for each reference (see `plan`).
STUDY_SPLIT = {"full": "seen", "universe": "unseen"}


@dataclass(frozen=True)
class StudyPoint:
    """A study's MDAD at one size (censored: `value` None when not reached).

    Attributes
    ----------
    size : micro-benchmark size.
    value : MDAD fraction, or None when not reached.
    max_gap, pairs : the largest |gap| and the pair count of its group, None when the
        study's mdad.csv predates those columns.
    thin : the study flags the row (or a row it is interpolated from): its MDAD rests
        on few pairs, or almost no target pair differs (`mdad.study.trust`).
    measurable : False where the study's notice says no MDAD can be measured (too few
        target pairs differ, `mdad.study.trust.flat_mask`), or the point is
        interpolated from such a row; `value` is then None, never a number.
    """

    size: int
    value: float | None
    max_gap: float | None
    pairs: int | None
    thin: bool = False
    measurable: bool = True


def plan(dataset: Dataset, *, gap: float | None = None, size: int | str | None = None,
         method: str = "random", study_dir: Path | None = None,
         target_models: list[str] | None = None, threshold: float = DEFAULT_THRESHOLD,
         allow_other_version: bool = False, against: str = "full") -> Plan:
    """Answer one planning question for `dataset`'s models and items.

    Either the smallest micro-benchmark size whose MDAD is at most `gap`, or the MDAD
    of a given `size`: exactly one of the two is given. Random methods are computed
    analytically from every pair of the dataset's models over all its items, measured
    `against` the full benchmark (finite population correction) or the task's universe
    of items (none). Any other method needs a finished study (`study_dir`, its
    mdad.csv) whose MDAD curve on the seen split (``against="full"``) or the unseen
    split (``"universe"``) is interpolated. An MDAD that is not reached is None, never
    a number; nor is one that the study says cannot be measured (`measurable` False).

    Parameters
    ----------
    dataset : Dataset
        The benchmark's models and items (`load_dataset`).
    gap : float or None, default None
        An accuracy gap as a fraction in (0, 1) (0.02 is 2 points): the answer is the
        smallest size whose MDAD is at most it.
    size : int or str or None, default None
        A micro-benchmark size in 1..the largest size `method` can build from the
        dataset's items (a whole number, or its text): the answer is that size's MDAD.
        ``"all"`` is that largest size, the whole benchmark for random.
    method : str, default "random"
        The selection method (see `mdad methods`).
    study_dir : pathlib.Path or None, default None
        A finished study of `method` on this dataset (the folder `mdad run` wrote),
        whose MDAD curve is interpolated; required for a method with no analytic MDAD,
        and used instead of the analytic MDAD when given.
    target_models : list of str or None, default None
        Names of models to compare (at least 2): the answer then says what share of
        their pairs differ by at least the MDAD (`settled_share`).
    threshold : float, default 0.8
        The agreement probability that defines MDAD, in (0, 1); a study must have used
        the same.
    allow_other_version : bool, default False
        Accept a study of another version of this dataset's data (its sha256 differs);
        the answer's `study_data_note` then says so. A study of another benchmark
        (both named datasets, `mdad.data.registry.DATASETS` or ``synthetic:<shape>``,
        with different names) is refused whatever it says.
    against : str, default "full"
        ``"full"``: the MDAD against the full benchmark (finite population correction;
        a study's seen split). ``"universe"``: against the task's universe of items (no
        correction; a study's unseen split).

    Returns
    -------
    Plan
        The size and its MDAD (accuracy fraction; None when not reached, then larger
        than `max_gap`), whether it was reached, the pairs it rests on, how it was
        found (``"analytic"`` or ``"interpolated"``) and, with `target_models`, the
        share of their pairs it settles. `size` is None when no size reaches `gap`.

    Raises
    ------
    ConfigError
        For both or neither of gap and size, a gap outside (0, 1), a size outside
        the pool (or the study's sizes), a threshold outside (0, 1), an unknown
        reference (`against` other than full or universe), an unknown method, fewer
        than 2 target models, a method with no study, or a study of another
        benchmark, of another threshold, or (unless allowed) of other data.
    DataError
        For an unknown or repeated target model; for a `study_dir` that is not a
        readable study folder, or has no rows for `method` on the split read.
    """
    check_type(dataset, Dataset, "dataset", "a Dataset (mdad.load_dataset(name))")
    if (gap is None) == (size is None):
        raise ConfigError("give exactly one of gap and size", parameters=("gap", "size"))
    if size is not None and not isinstance(size, str):
        check_integer(size, "size")
    if gap is not None and (not isinstance(gap, numbers.Real) or isinstance(gap, bool)
                            or not 0.0 < gap < 1.0):
        raise ConfigError(f"gap must be in (0, 1) (a fraction: 0.02 is 2 points); got {gap}",
                          parameters=("gap",))
    check_open_unit(threshold, "threshold")
    if against not in AGAINST:
        raise ConfigError(f"against must be full or universe; got {against!r}",
                          parameters=("against",))
    matrix = dataset.matrix
    limit = largest_size(matrix, method)
    size = _parse_size(size, limit, method, dataset.name)
    analytic = method_class(method).analytic_mdad
    if analytic is not None and study_dir is None:
        answer = _analytic_plan(dataset, gap, size, method, threshold, against, limit,
                                stratified=analytic == "stratified")
    else:
        if study_dir is None:
            raise ConfigError(f"method {method} has no analytic MDAD; pass study_dir RUN_DIR, a "
                              f"finished `mdad run --methods {method}` on this dataset",
                              parameters=("study_dir",))
        from mdad.study.folder import read_study_folder

        split = STUDY_SPLIT[against]
        run = read_study_folder(Path(study_dir))
        study_note = check_study_data(run, Path(study_dir), dataset.name, matrix.sha256,
                                      allow_other_version=allow_other_version)
        curve = _curve(run, Path(study_dir), method, threshold, split)
        found, point = interpolate(curve, gap=gap, size=size)
        answer = Plan(method, found, point.value, point.value is not None, point.max_gap,
                      point.pairs, gap, threshold, "interpolated", against, split=split,
                      thin=point.thin, measurable=point.measurable,
                      study_dataset=run.config["dataset"]["name"], study_data_note=study_note)
    if target_models is not None:
        index = matrix.model_index(target_models, what="target_models: model",
                                   parameter="target_models")
        if index.size < 2:
            raise ConfigError(f"target_models needs at least 2 models to compare; got "
                              f"{index.size}", parameters=("target_models",))
        accuracy = matrix.accuracy()[index]
        i, j = np.triu_indices(index.size, k=1)
        # no share at all where no MDAD can be measured: 0% would be a value
        settled = (None if not answer.measurable else 0.0 if answer.mdad is None
                   else float(np.mean(np.abs(accuracy[i] - accuracy[j]) >= answer.mdad)))
        answer = replace(answer, settled_share=settled, target_pairs=int(i.size))
    return answer


def _parse_size(size: int | str | None, limit: int, method: str, name: str) -> int | None:
    """`size` as an int: ``"all"`` is `limit`; outside 1..limit is refused."""
    if size is None:
        return None
    if isinstance(size, str):
        if size.strip().lower() == "all":
            return limit
        try:
            size = int(size)
        except ValueError:
            raise ConfigError(f"size takes a whole number or 'all'; got {size!r}",
                              parameters=("size",)) from None
    if not 1 <= size <= limit:
        raise ConfigError(f"size {size} is outside 1..{limit}, the sizes {method} can "
                          f"build from the items of {name}", parameters=("size",))
    return size


def _analytic_plan(dataset: Dataset, gap: float | None, size: int | None, method: str,
                   threshold: float, against: str, limit: int, *, stratified: bool) -> Plan:
    matrix = dataset.matrix
    structure = pair_structure(matrix.correctness, matrix.subtask_codes)
    options = {"threshold": threshold, "stratified": stratified, "against": against}
    if gap is not None:
        size, result = analytic_size_for_gap(structure, gap, max_size=limit, **options)
        if not at_most(result.value, gap):
            size = None
    else:
        result = analytic_mdad(structure, size, **options)
    return Plan(method, size, result.value, result.reached, result.max_gap, result.pairs,
                gap, threshold, "analytic", against, differing_pairs=result.differing,
                crossing_pairs=result.crossing_pairs, measurable=result.differing > 0)


def largest_size(matrix, method: str) -> int:
    """The largest micro-benchmark `method` can build from all of `matrix`'s items."""
    codes = np.unique(matrix.subtask_codes, return_inverse=True)[1]
    return method_largest_size(method, np.bincount(codes))


def study_curve(study_dir: Path, method: str, threshold: float, sha256: str | None, *,
                split: str = "seen", dataset: str | None = None) -> list[StudyPoint]:
    """The method's MDAD by size (ascending) on `split` at the study's largest source
    count; the study's data must have `sha256` unless it is None, and must not be of
    another benchmark than the dataset named `dataset` (checked whatever `sha256` is;
    not checked when `dataset` is None).

    Reads mdad.csv with or without the censoring columns (`max_gap`, `pairs`);
    `read_study_folder` reads an old folder's 0.5 (its "not reached") as censored. A
    row whose MDAD the study says cannot be measured gives a point with `value` None
    and `measurable` False.

    Raises
    ------
    ConfigError
        For a study of another benchmark, of other data (`sha256`), or of another
        threshold.
    DataError
        When the study has no rows for `method` on `split`.
    """
    from mdad.study.folder import read_study_folder

    run = read_study_folder(study_dir)
    check_study_data(run, study_dir, dataset, sha256, allow_other_version=sha256 is None)
    return _curve(run, study_dir, method, threshold, split)


def named_benchmark(name: str) -> bool:
    """Whether `name` names a benchmark (a registered dataset or a ``synthetic:<shape>``
    simulation) rather than a file, whose name says nothing of what it holds."""
    from mdad.data.registry import DATASETS

    return name in DATASETS or name.startswith("synthetic:")


def other_benchmark(studied: str, name: str | None) -> bool:
    """Whether `studied` and `name` are two different named benchmarks."""
    return (name is not None and named_benchmark(studied) and named_benchmark(name)
            and studied != name)


def check_study_data(run, study_dir: Path, dataset: str | None, sha256: str | None, *,
                     allow_other_version: bool = False) -> str | None:
    """Refuse a study of another benchmark than `dataset`, always, and a study of
    other data than `sha256` unless `allow_other_version`; return a note saying the
    study's data is another version when that was allowed (None when it is the same
    data, or `sha256` is None).

    The message suggests allow_other_version only for what may be another version of
    the same benchmark: the same name, or a file whose name cannot tell.

    Raises
    ------
    ConfigError
        As above.
    """
    studied_name = str(run.config["dataset"]["name"])
    if other_benchmark(studied_name, dataset):
        raise ConfigError(f"study_dir {study_dir} is a study of {studied_name}, another "
                          f"benchmark than {dataset} (not another version of its data); run "
                          f"a study of {dataset} (mdad run {dataset}) and pass its folder",
                          parameters=("study_dir",))
    studied = str(run.config["dataset"]["sha256"])
    if sha256 is None or studied == sha256:
        return None
    where = (f"study_dir {study_dir} was made on other data ({studied_name}, sha256 "
             f"{studied[:12]}...; this dataset {dataset or 'here'}, {sha256[:12]}...)")
    if allow_other_version:
        return f"{where}: interpolated from it as another version of the same benchmark"
    if dataset is None or studied_name == dataset:
        fix = "rerun the study, or pass allow_other_version"
    else:  # a file's name does not say which benchmark it holds
        fix = (f"rerun the study on this data, or, only if it is another version of "
               f"{studied_name}'s data, pass allow_other_version")
    raise ConfigError(f"{where}; {fix}", parameters=("study_dir", "allow_other_version"))


def _curve(run, study_dir: Path, method: str, threshold: float, split: str
           ) -> list[StudyPoint]:
    """The points of `study_curve` from the read study folder `run`."""
    if abs(run.threshold - threshold) > 1e-12:
        raise ConfigError(f"study_dir {study_dir} used threshold {run.threshold}; pass threshold "
                          f"{run.threshold} or rerun the study",
                          parameters=("study_dir", "threshold"))
    table = run.mdad[(run.mdad.method == method) & (run.mdad.split == split)
                     & (run.mdad.sources == run.main_sources)].sort_values("size")
    if table.empty:
        raise DataError(f"study_dir {study_dir} has no {split}-split results for method "
                        f"{method}; it ran {', '.join(run.methods)}", parameters=("study_dir",))
    from mdad.study.trust import flagged_mask, unmeasurable_mask

    flagged = flagged_mask(table).to_numpy(dtype=bool)
    unmeasurable = unmeasurable_mask(table).to_numpy(dtype=bool)
    return [_study_point(row, bool(thin), measurable=not flat) for row, thin, flat in
            zip(table.to_dict("records"), flagged, unmeasurable, strict=True)]


def _study_point(row: dict, thin: bool = False, *, measurable: bool = True) -> StudyPoint:
    import pandas as pd

    value = pd.to_numeric(pd.Series([row.get("mdad")]), errors="coerce").iloc[0]
    # `read_study_folder` gives every folder a `reached` column (old ones' 0.5 read as censored)
    reached = str(row["reached"]).strip().lower() in ("true", "1", "1.0") and bool(
        np.isfinite(value))

    def optional(key: str) -> float | None:
        number = pd.to_numeric(pd.Series([row.get(key)]), errors="coerce").iloc[0]
        return float(number) if np.isfinite(number) else None

    pairs = optional("pairs")
    # where none can be measured, neither a value nor a bound (max_gap) stands for it
    return StudyPoint(int(row["size"]), float(value) if reached and measurable else None,
                      optional("max_gap") if measurable else None,
                      None if pairs is None else int(pairs), thin, measurable)


def interpolate(curve: list[StudyPoint], *, gap: float | None,
                size: int | None) -> tuple[int | None, StudyPoint]:
    """Linear interpolation of MDAD in log(size) between the study's sizes; sizes
    outside the study's range are refused rather than extrapolated, and never through
    an unreached point: a size next to an unreached study size is unreached, and a
    size next to a study size with no measurable MDAD has none either.

    With `size`: that size and its point. With `gap`: the first size whose MDAD is at
    most `gap` (the study size itself when its smaller neighbour is unreached), or
    None and the largest size's point when none is.
    """
    sizes = np.array([p.size for p in curve], dtype=float)
    if size is not None:
        if not sizes[0] <= size <= sizes[-1]:
            raise ConfigError(f"size {size} is outside the study's sizes "
                              f"{int(sizes[0])}..{int(sizes[-1])}; run the study with it",
                              parameters=("size",))
        return size, _point_at(curve, size)
    for k, point in enumerate(curve):
        if not at_most(point.value, gap):
            continue
        before = curve[k - 1] if k else None
        if before is None or before.value is None:
            return point.size, point
        low, high = np.log(before.size), np.log(point.size)
        share = (before.value - gap) / (before.value - point.value)
        needed = int(np.ceil(np.exp(low + share * (high - low)) - 1e-9))
        return needed, StudyPoint(needed, float(gap), _least(before.max_gap, point.max_gap),
                                  _least(before.pairs, point.pairs), before.thin or point.thin,
                                  before.measurable and point.measurable)
    return None, curve[-1]


def _least(a, b):
    known = [v for v in (a, b) if v is not None]
    return min(known) if known else None


def _point_at(curve: list[StudyPoint], size: int) -> StudyPoint:
    """The (interpolated) point at `size`, within the curve's range."""
    for point in curve:
        if point.size == size:
            return point
    k = next(i for i, p in enumerate(curve) if p.size > size)
    before, after = curve[k - 1], curve[k]
    measurable = before.measurable and after.measurable
    if not measurable:  # no value, and no bound either, next to such a row
        return StudyPoint(size, None, None, _least(before.pairs, after.pairs),
                          before.thin or after.thin, False)
    if before.value is None or after.value is None:
        censored = after if after.value is None else before
        return StudyPoint(size, None, censored.max_gap, _least(before.pairs, after.pairs),
                          before.thin or after.thin)
    value = float(np.interp(np.log(size), np.log([before.size, after.size]),
                            [before.value, after.value]))
    return StudyPoint(size, value, _least(before.max_gap, after.max_gap),
                      _least(before.pairs, after.pairs), before.thin or after.thin)


def study_mdad_curve(curve: list[StudyPoint], top: int) -> dict[int, float | None]:
    """The study's MDAD at every size from its smallest to min(its largest, top)."""
    first, last = curve[0].size, min(curve[-1].size, top)
    return {n: _point_at(curve, n).value for n in range(first, last + 1)}
