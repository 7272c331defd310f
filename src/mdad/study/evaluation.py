"""Turn a study's estimates into its tables: MDAD, the agreement curves behind it,
estimation error and Kendall tau."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mdad.errors import check_whole
from mdad.metrics.mdad import MdadResult, first_crossing_mdad, smooth_mdad
from mdad.metrics.pairs import bin_edges, pair_counts
from mdad.study.records import StudyResult
from mdad.study.seeds import metric_rng

if TYPE_CHECKING:  # pandas loads when tables are made (0.3 s a command that fails first)
    import pandas as pd

SPLITS = ("seen", "unseen")
GROUP_COLUMNS = ["method", "size", "sources", "split"]
MDAD_COLUMNS = [*GROUP_COLUMNS, "mdad", "mdad_low", "mdad_high", "threshold", "reached",
                "max_gap", "pairs", "crossing_pairs", "tied_pairs", "mdad_smooth",
                "mdad_smooth_low", "mdad_smooth_high", "smooth_reached"]
AGREEMENT_COLUMNS = [*GROUP_COLUMNS, "gap", "pairs", "agreeing"]


@dataclass(frozen=True, eq=False)
class StudyTables:
    """The tables a study writes.

    Attributes
    ----------
    mdad : one row per method, size, source count and split (mdad.csv): the paper's
        first-crossing MDAD and the smooth one, each with its interval (NaN: not
        reached, or unbounded), and the pairs behind them.
    summary : per method, size and source count, error and Kendall tau over runs.
    agreement : the binned agreement curve behind every MDAD (agreement.csv): one
        row per non-empty 0.5-point |gap| bin, pairs pooled over runs.

    A size the plan drops for a method (`StudyPlan.dropped`) has no row of that method.
    """

    mdad: pd.DataFrame
    summary: pd.DataFrame
    agreement: pd.DataFrame


def _mean_and_se(values: np.ndarray) -> tuple[float, float]:
    """Mean over runs and its standard error, ignoring NaN (undefined tau)."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return float("nan"), float("nan")
    se = finite.std(ddof=1) / np.sqrt(finite.size) if finite.size > 1 else float("nan")
    return float(finite.mean()), float(se)


def _mdad_row(group: dict, faithful: MdadResult, smooth: MdadResult) -> dict:
    return {**group, "mdad": faithful.mdad, "mdad_low": faithful.low,
            "mdad_high": faithful.high, "threshold": faithful.threshold,
            "reached": faithful.reached, "max_gap": faithful.max_gap,
            "pairs": faithful.n_pairs, "crossing_pairs": faithful.crossing_pairs,
            "tied_pairs": faithful.tied_pairs, "mdad_smooth": smooth.mdad,
            "mdad_smooth_low": smooth.low, "mdad_smooth_high": smooth.high,
            "smooth_reached": smooth.reached}


def largest_gap(reference: np.ndarray) -> float:
    """The largest |accuracy gap| between two targets of one run, over runs, of a
    (n_runs, n_targets) array; NaN when no run has two targets."""
    if reference.shape[0] == 0 or reference.shape[1] < 2:
        return float("nan")
    return float(np.max(reference.max(axis=1) - reference.min(axis=1)))


def evaluate(result: StudyResult, *, stream: str = "", threads: int = 2) -> StudyTables:
    """Compute every table of `result`. Bootstrap draws come from generators derived
    from the study seed, `stream` (e.g. a subtask) and the group, so tables recompute
    identically, in any order; the smooth estimate draws after the first crossing's,
    from the same generator. Groups are computed in `threads` threads (numpy releases
    the GIL); the tables do not depend on it."""
    check_whole(threads, "threads")
    import pandas as pd

    config = result.plan.config
    groups = [(m, s, c, split) for m in range(len(config.methods))
              for s in range(len(result.plan.sizes)) if result.plan.builds(m, s)
              for c in range(len(config.sources)) for split in SPLITS]

    def measure(group: tuple[int, int, int, str]) -> tuple[dict, pd.DataFrame, dict]:
        return _split_tables(result, *group, stream=stream)

    if threads > 1 and len(groups) > 1:
        with ThreadPoolExecutor(threads) as pool:
            measured = list(pool.map(measure, groups))
    else:
        measured = [measure(group) for group in groups]
    mdad_rows = [mdad_row for mdad_row, _, _ in measured]
    curves = [curve for _, curve, _ in measured]
    summary_rows = []
    for (m, s, c, split), (_, _, metrics) in zip(groups, measured, strict=True):
        if split == SPLITS[0]:
            summary_rows.append({"method": config.methods[m], "size": result.plan.sizes[s],
                                 "sources": config.sources[c]})
        summary_rows[-1].update(metrics)
        if split == SPLITS[-1]:
            summary_rows[-1]["runs"] = result.estimates.shape[3]
            summary_rows[-1].update(_exposure_columns(result, m, s, c))
    agreement = (pd.concat(curves, ignore_index=True) if curves
                 else pd.DataFrame(columns=AGREEMENT_COLUMNS))
    return StudyTables(
        mdad=pd.DataFrame(mdad_rows, columns=MDAD_COLUMNS),
        summary=pd.DataFrame(summary_rows),
        agreement=agreement,
    )


def _exposure_columns(result: StudyResult, m: int, s: int, c: int) -> dict[str, float]:
    """Mean over runs of the items the targets answered (`distinct_items`) and of the
    share of targets that answered the most-used one (`top_item_share`)."""
    if result.exposure is None:
        return {"distinct_items": float("nan"), "top_item_share": float("nan")}
    cells = result.exposure[m, s, c]
    known = cells[np.isfinite(cells).all(axis=1)]
    if known.size == 0:
        return {"distinct_items": float("nan"), "top_item_share": float("nan")}
    return {"distinct_items": float(known[:, 0].mean()),
            "top_item_share": float(known[:, 1].mean())}


def _split_tables(result: StudyResult, m: int, s: int, c: int, split: str, *,
                  stream: str) -> tuple[dict, pd.DataFrame, dict]:
    """One method, size and source count on one split: its mdad.csv row, its
    agreement curve, and its summary.csv columns (error and tau)."""
    import pandas as pd  # loaded by `evaluate` already: a lookup

    config = result.plan.config
    method, size, sources = config.methods[m], result.plan.sizes[s], config.sources[c]
    estimates = result.estimates[m, s, c]
    reference = result.seen if split == "seen" else result.unseen
    counts = pair_counts(estimates, reference, threads=1)
    labels = (stream, method) if stream else (method,)
    rng = metric_rng(config.seed, *labels, size, sources, split)
    pairs, agreeing = counts.pairs.sum(axis=0), counts.agreeing.sum(axis=0)
    shared = {"threshold": config.threshold, "n_resamples": config.n_resamples,
              "rng": rng, "max_gap": largest_gap(reference),
              "tied_pairs": int(counts.tied.sum())}
    faithful = first_crossing_mdad(pairs, agreeing, **shared)
    smooth = smooth_mdad(counts.pairs, counts.agreeing, **shared)
    group = {"method": method, "size": size, "sources": sources, "split": split}
    nonempty = np.flatnonzero(pairs)
    curve = pd.DataFrame({**group, "gap": bin_edges(nonempty), "pairs": pairs[nonempty],
                          "agreeing": agreeing[nonempty]}, columns=AGREEMENT_COLUMNS)
    metrics = {}
    error = np.abs(estimates - reference).mean(axis=1)
    metrics[f"mae_{split}"], metrics[f"mae_{split}_se"] = _mean_and_se(error)
    metrics[f"kendall_tau_{split}"], metrics[f"kendall_tau_{split}_se"] = (
        _mean_and_se(counts.kendall_tau))
    return _mdad_row(group, faithful, smooth), curve, metrics
