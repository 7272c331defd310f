"""Turn a study's estimates into its tables: MDAD, estimation error, Kendall tau."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from mdad.metrics.mdad import MdadEstimator, MdadResult, first_crossing_mdad, smooth_mdad
from mdad.metrics.pairs import pair_counts
from mdad.study.runner import StudyResult
from mdad.study.seeds import metric_rng

SPLITS = ("seen", "unseen")
MDAD_COLUMNS = ["method", "size", "sources", "split", "mdad", "mdad_low", "mdad_high", "threshold"]


@dataclass(frozen=True, eq=False)
class StudyTables:
    """The tables a study writes: ``mdad`` (first crossing, the paper's), ``mdad_smooth``
    (when asked for) and ``summary`` (error and Kendall tau over runs)."""

    mdad: pd.DataFrame
    summary: pd.DataFrame
    mdad_smooth: pd.DataFrame | None = None


def _mean_and_se(values: np.ndarray) -> tuple[float, float]:
    """Mean over runs and its standard error, ignoring NaN (undefined tau)."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return float("nan"), float("nan")
    se = finite.std(ddof=1) / np.sqrt(finite.size) if finite.size > 1 else float("nan")
    return float(finite.mean()), float(se)


def _mdad_row(method: str, size: int, sources: int, split: str, res: MdadResult) -> dict:
    return {"method": method, "size": size, "sources": sources, "split": split,
            "mdad": res.mdad, "mdad_low": res.low, "mdad_high": res.high,
            "threshold": res.threshold}


def evaluate(result: StudyResult, *, stream: str = "") -> StudyTables:
    """Compute every table of `result`. Bootstrap draws come from generators derived
    from the study seed, `stream` (e.g. a subtask) and the group, so tables recompute
    identically."""
    config = result.plan.config
    mdad_rows, smooth_rows, summary_rows = [], [], []
    smooth = config.mdad_estimator is MdadEstimator.SMOOTH
    for m, method in enumerate(config.methods):
        for s, size in enumerate(result.plan.sizes):
            for c, sources in enumerate(config.sources):
                estimates = result.estimates[m, s, c]
                row: dict = {"method": method, "size": size, "sources": sources}
                for split in SPLITS:
                    reference = result.seen if split == "seen" else result.unseen
                    counts = pair_counts(estimates, reference)
                    labels = (stream, method) if stream else (method,)
                    rng = metric_rng(config.seed, *labels, size, sources, split)
                    faithful = first_crossing_mdad(
                        counts.pairs.sum(axis=0), counts.agreeing.sum(axis=0),
                        threshold=config.threshold, n_resamples=config.n_resamples, rng=rng)
                    mdad_rows.append(_mdad_row(method, size, sources, split, faithful))
                    if smooth:
                        fitted = smooth_mdad(counts.pairs, counts.agreeing,
                                             threshold=config.threshold,
                                             n_resamples=config.n_resamples, rng=rng)
                        smooth_rows.append(_mdad_row(method, size, sources, split, fitted))
                    error = np.abs(estimates - reference).mean(axis=1)
                    row[f"mae_{split}"], row[f"mae_{split}_se"] = _mean_and_se(error)
                    tau = counts.kendall_tau
                    row[f"kendall_tau_{split}"], row[f"kendall_tau_{split}_se"] = (
                        _mean_and_se(tau))
                row["runs"] = estimates.shape[0]
                summary_rows.append(row)
    return StudyTables(
        mdad=pd.DataFrame(mdad_rows, columns=MDAD_COLUMNS),
        summary=pd.DataFrame(summary_rows),
        mdad_smooth=pd.DataFrame(smooth_rows, columns=MDAD_COLUMNS) if smooth else None,
    )
