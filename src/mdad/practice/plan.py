"""`mdad plan`: the size a micro-benchmark needs for a gap, or the MDAD of a size."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from mdad.data.registry import Dataset
from mdad.errors import ConfigError, DataError
from mdad.practice.planner import ANALYTIC_METHODS, Plan, analytic_mdad, pair_structure
from mdad.practice.planner import size_for_gap as analytic_size_for_gap


def plan(dataset: Dataset, *, gap: float | None = None, size: int | None = None,
         method: str = "random", run_dir: Path | None = None,
         target_models: list[str] | None = None, threshold: float = 0.8,
         allow_other_version: bool = False) -> Plan:
    """Answer one planning question for `dataset`'s models and items.

    Exactly one of `gap` (a fraction: the smallest size whose MDAD is at most it) and
    `size` (that size's MDAD) is given. Random methods are computed analytically from
    every pair of the dataset's models over all its items; any other method needs a
    finished study (`run_dir`, its mdad.csv) whose MDAD curve is interpolated.

    Raises
    ------
    ConfigError
        For both or neither of gap and size, a gap outside (0, 1), a size outside
        the pool, an unknown target model, or a method with no study to read.
    """
    if (gap is None) == (size is None):
        raise ConfigError("give exactly one of --gap and --size")
    if gap is not None and not 0.0 < gap < 1.0:
        raise ConfigError(f"--gap must be in (0, 1) (a fraction: 0.02 is 2 points); got {gap}")
    if not 0.0 < threshold < 1.0:
        raise ConfigError(f"--threshold must be in (0, 1); got {threshold}")
    matrix = dataset.matrix
    limit = _largest_size(matrix, method)
    if size is not None and not 1 <= size <= limit:
        raise ConfigError(f"--size {size} is outside 1..{limit}, the sizes {method} can "
                          f"build from the {matrix.n_items} items of {dataset.name}")
    if method in ANALYTIC_METHODS and run_dir is None:
        structure = pair_structure(matrix.correctness, matrix.subtask_codes)
        stratified = ANALYTIC_METHODS[method]
        if gap is not None:
            size, mdad = analytic_size_for_gap(structure, gap, threshold=threshold,
                                               stratified=stratified, max_size=limit)
            if mdad > gap:
                size = None
        else:
            mdad = analytic_mdad(structure, size, threshold=threshold, stratified=stratified)
        how = "analytic"
    else:
        if run_dir is None:
            raise ConfigError(f"method {method} has no analytic MDAD; pass --run RUN_DIR, a "
                              f"finished `mdad run --methods {method}` on this dataset")
        curve = _study_curve(Path(run_dir), method, threshold,
                             None if allow_other_version else matrix.sha256)
        size, mdad = _interpolate(curve, gap=gap, size=size)
        how = "interpolated"
    settled = None
    if target_models is not None:
        index = matrix.model_index(target_models, what="--target-models: model")
        accuracy = matrix.accuracy()[index]
        i, j = np.triu_indices(index.size, k=1)
        settled = float(np.mean(np.abs(accuracy[i] - accuracy[j]) >= mdad))
    return Plan(method, size, float(mdad), gap, threshold, how, settled)


def _largest_size(matrix, method: str) -> int:
    """The largest micro-benchmark `method` can build from all of `matrix`'s items."""
    from mdad.selection import SeenPool, get_method

    codes = np.unique(matrix.subtask_codes, return_inverse=True)[1]
    empty = np.empty((0, codes.size))
    return int(get_method(method).max_size(SeenPool(empty, empty, codes)))


def _study_curve(run_dir: Path, method: str, threshold: float,
                 sha256: str | None) -> pd.DataFrame:
    """The method's seen-split MDAD by size at the study's largest source count; the
    study's data must have `sha256` unless it is None."""
    from mdad.report.run_data import load_run

    run = load_run(run_dir)
    studied = run.config["dataset"]["sha256"]
    if sha256 is not None and studied != sha256:
        raise ConfigError(f"--run {run_dir} was made on other data (sha256 {studied[:12]}..., "
                          f"this dataset {sha256[:12]}...); rerun the study, or pass "
                          "--allow-other-data-version")
    if abs(run.threshold - threshold) > 1e-12:
        raise ConfigError(f"--run {run_dir} used threshold {run.threshold}; pass --threshold "
                          f"{run.threshold} or rerun the study")
    table = run.mdad[(run.mdad.method == method) & (run.mdad.split == "seen")
                     & (run.mdad.sources == run.main_sources)].sort_values("size")
    if table.empty:
        raise DataError(f"--run {run_dir} has no results for method {method}; it ran "
                        f"{', '.join(run.methods)}")
    return table


def _interpolate(curve: pd.DataFrame, *, gap: float | None,
                 size: int | None) -> tuple[int | None, float]:
    """Linear interpolation of MDAD in log(size) between the study's sizes; sizes
    outside the study's range are refused rather than extrapolated."""
    sizes = curve["size"].to_numpy(dtype=float)
    values = curve.mdad.to_numpy(dtype=float)
    if size is not None:
        if not sizes[0] <= size <= sizes[-1]:
            raise ConfigError(f"--size {size} is outside the study's sizes "
                              f"{int(sizes[0])}..{int(sizes[-1])}; run the study with it")
        return size, float(np.interp(np.log(size), np.log(sizes), values))
    # the first size whose (interpolated) MDAD reaches the gap
    for k in range(sizes.size):
        if values[k] <= gap + 1e-12:
            if k == 0:
                return int(sizes[0]), float(values[0])
            low, high = np.log(sizes[k - 1]), np.log(sizes[k])
            share = (values[k - 1] - gap) / (values[k - 1] - values[k])
            needed = int(np.ceil(np.exp(low + share * (high - low)) - 1e-9))
            return needed, float(gap)
    return None, float(values[-1])
