"""What the figures need from a study folder (see `mdad.study.folder`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mdad.data.files import check_regular_file
from mdad.errors import DataError
from mdad.metrics.pairs import bin_edges, pair_counts
from mdad.study.folder import FIX, POOLED, StudyFolder, read_study_csv
from mdad.study.folder_checks import check_unique


@dataclass(frozen=True, eq=False)
class AgreementCurve:
    """Mean agreement per |gap| bin, pooled over runs, for one method, size and split.

    Attributes
    ----------
    gap : float array, bins' lower edges in accuracy fractions (non-empty bins only).
    agreement : float array, the share of pairs ranked as the reference ranks them.
    pairs : int array, pairs per bin.
    """

    gap: np.ndarray
    agreement: np.ndarray
    pairs: np.ndarray


def agreement_curves(study: StudyFolder, sources: int
                     ) -> dict[tuple[str, int, str], AgreementCurve]:
    """Per (method, size, split) at `sources` source models, from agreement.csv (or,
    for a study folder written before it existed, recomputed from results.parquet)."""
    saved = _saved_curves(study.path / "agreement.csv", sources,
                          neutralised=study.csv_text_neutralised)
    if saved is not None:
        shown = study.mdad[study.mdad.sources == sources]
        for method, size, split in zip(shown.method, shown["size"], shown.split, strict=True):
            if (str(method), int(size), str(split)) not in saved:
                raise DataError(f"{study.path / 'agreement.csv'}: no curve for {method} at "
                                f"{size} items ({split} split, {sources} sources), which "
                                f"mdad.csv has; {FIX}")
        return saved
    frame = study.results[study.results.n_sources == sources]
    keys = ["method", "size"]
    if study.per_subtask:
        frame = frame.assign(size=_pooled_sizes(study, frame))
    curves = {}
    for (method, size), group in frame.groupby(keys, observed=True, sort=False):
        blocks = [g for _, g in group.groupby(["subtask", "run"] if study.per_subtask else ["run"],
                                              sort=True)]
        n_targets = blocks[0].shape[0]
        estimates = np.stack([b.estimate.to_numpy() for b in blocks if b.shape[0] == n_targets])
        for split in ("seen", "unseen"):
            reference = np.stack([b[f"{split}_accuracy"].to_numpy() for b in blocks
                                  if b.shape[0] == n_targets])
            counts = pair_counts(estimates, reference)
            pairs = counts.pairs.sum(axis=0)
            agreeing = counts.agreeing.sum(axis=0)
            nonempty = pairs > 0
            curves[(str(method), int(size), split)] = AgreementCurve(
                gap=bin_edges(np.arange(pairs.size))[nonempty],
                agreement=agreeing[nonempty] / pairs[nonempty],
                pairs=pairs[nonempty],
            )
    return curves


def _saved_curves(path: Path, sources: int, *, neutralised: bool
                  ) -> dict[tuple[str, int, str], AgreementCurve] | None:
    if not path.exists() and not path.is_symlink():
        return None  # an older folder without it: the curves are recomputed
    check_regular_file(path, fix=FIX)
    try:
        table = read_study_csv(path, neutralised=neutralised)  # names as written
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: cannot read it ({exc}); {FIX}") from None
    lacking = [c for c in ("method", "size", "sources", "split", "gap", "pairs", "agreeing")
               if c not in table]
    if lacking:
        raise DataError(f"{path}: no column {', '.join(lacking)}; {FIX}")
    counts = table[["size", "sources", "pairs", "agreeing"]].apply(
        pd.to_numeric, errors="coerce").to_numpy(np.float64)
    gap = pd.to_numeric(table.gap, errors="coerce").to_numpy(np.float64)
    bad = np.flatnonzero(~np.isfinite(counts).all(axis=1) | (counts != np.round(counts)).any(axis=1)
                         | (counts[:, 2] < 1) | (counts[:, 3] < 0) | (counts[:, 3] > counts[:, 2])
                         | ~((gap >= 0) & (gap <= 1)))
    if len(bad):
        raise DataError(f"{path}: row {bad[0] + 2} is not a bin of an agreement curve (whole "
                        "pairs >= 1, agreeing pairs from 0 to pairs, a gap in [0, 1]); "
                        f"{FIX}")
    check_unique(path, table, ["subtask"] * ("subtask" in table)
                 + ["method", "size", "sources", "split", "gap"])
    if "subtask" in table.columns:
        table = table[table.subtask == POOLED]
    table = table[table.sources == sources]
    return {(str(method), int(size), str(split)): AgreementCurve(
        gap=group.gap.to_numpy(dtype=np.float64),
        agreement=(group.agreeing / group.pairs).to_numpy(dtype=np.float64),
        pairs=group.pairs.to_numpy(dtype=np.int64))
        for (method, size, split), group in table.groupby(["method", "size", "split"],
                                                          sort=False)}


def _pooled_sizes(study: StudyFolder, frame: pd.DataFrame) -> np.ndarray:
    """Each per-subtask row's size replaced by its fraction's total over subtasks."""
    sizes = study.config["per_subtask"]["sizes"]
    fractions = study.config["per_subtask"]["fractions"]
    totals = [sum(per[i] for per in sizes.values()) for i in range(len(fractions))]
    lookup = {(name, size): totals[i] for name, per in sizes.items()
              for i, size in enumerate(per)}
    return np.array([lookup[(s, z)] for s, z in zip(frame.subtask, frame["size"], strict=True)])


def target_gaps(study: StudyFolder) -> np.ndarray:
    """|full-benchmark accuracy gap| of every pair of the fixed target models, in
    accuracy fractions; empty when the run drew its targets at random, or for a
    per-subtask run (its rows hold each subtask's accuracy, not the benchmark's)."""
    if study.config["study"].get("target_models") is None or study.per_subtask:
        return np.empty(0)
    accuracy = (study.results.groupby("model", observed=True).full_accuracy.first()
                .to_numpy(dtype=np.float64))
    i, j = np.triu_indices(accuracy.size, k=1)
    return np.abs(accuracy[i] - accuracy[j])
