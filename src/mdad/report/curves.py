"""Read a run folder written by `mdad run`, and recompute what figures need from it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mdad.errors import DataError
from mdad.metrics.pairs import bin_edges, pair_counts

POOLED = "(pooled)"
LEGACY_NOT_REACHED = 0.5
REQUIRED = ("config.json", "mdad.csv", "summary.csv", "results.parquet")


@dataclass(frozen=True, eq=False)
class RunData:
    """A finished run: its configuration and tables, reduced to one table per kind.

    For a per-subtask run the tables are the pooled block (`subtask` = "(pooled)"),
    whose sizes are totals over subtasks.

    Attributes
    ----------
    mdad : one row per method, size, source count and split (mdad.csv).
    summary : one row per method, size and source count (summary.csv).
    results : one row per estimate (results.parquet).
    """

    path: Path
    config: dict
    mdad: pd.DataFrame
    summary: pd.DataFrame
    results: pd.DataFrame

    @property
    def per_subtask(self) -> bool:
        return self.config.get("per_subtask") is not None

    @property
    def threshold(self) -> float:
        return float(self.config["study"]["threshold"])

    @property
    def methods(self) -> list[str]:
        return list(self.config["study"]["methods"])

    @property
    def sizes(self) -> list[int]:
        return sorted(int(s) for s in self.mdad["size"].unique())

    @property
    def sources(self) -> list[int]:
        return sorted(int(s) for s in self.mdad["sources"].unique())

    @property
    def main_sources(self) -> int:
        """The source count the single-count figures show: the largest."""
        return self.sources[-1]

    @property
    def seen_pool_size(self) -> int | None:
        return self.config.get("dataset", {}).get("seen_pool_size")


def load_run(path: Path) -> RunData:
    """Read run folder `path`.

    Raises
    ------
    DataError
        When a file is missing or unreadable, naming it.
    """
    path = Path(path)
    if not path.is_dir():
        raise DataError(f"{path}: not a folder; pass the folder `mdad run` wrote (--out)")
    missing = [name for name in REQUIRED if not (path / name).is_file()]
    if missing:
        raise DataError(f"{path}: no {', '.join(missing)}; pass a folder written by "
                        "`mdad run`")
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        mdad = pd.read_csv(path / "mdad.csv")
        summary = pd.read_csv(path / "summary.csv")
        results = pd.read_parquet(path / "results.parquet")
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: cannot read the run files ({exc})") from None
    if "subtask" in mdad.columns:
        mdad = mdad[mdad.subtask == POOLED].reset_index(drop=True)
        summary = summary[summary.subtask == POOLED].reset_index(drop=True)
    return RunData(path, config, censor_legacy(mdad), summary, results)


def censor_legacy(mdad: pd.DataFrame) -> pd.DataFrame:
    """mdad.csv of mdad 0.1 wrote "never reached" as 0.5: read it as censored."""
    if "reached" in mdad.columns:
        return mdad
    mdad = mdad.copy()
    mdad["reached"] = mdad.mdad < LEGACY_NOT_REACHED
    for column in {"mdad", "mdad_low", "mdad_high"} & set(mdad.columns):
        mdad.loc[mdad[column] >= LEGACY_NOT_REACHED, column] = np.nan
    mdad["max_gap"] = np.nan
    return mdad


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


def agreement_curves(run: RunData, sources: int) -> dict[tuple[str, int, str], AgreementCurve]:
    """Per (method, size, split) at `sources` source models, from agreement.csv (or,
    for a run folder written before it existed, recomputed from results.parquet)."""
    saved = _saved_curves(run.path / "agreement.csv", sources)
    if saved is not None:
        return saved
    frame = run.results[run.results.n_sources == sources]
    keys = ["method", "size"]
    if run.per_subtask:
        frame = frame.assign(size=_pooled_sizes(run, frame))
    curves = {}
    for (method, size), group in frame.groupby(keys, observed=True, sort=False):
        blocks = [g for _, g in group.groupby(["subtask", "run"] if run.per_subtask else ["run"],
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


def _saved_curves(path: Path, sources: int
                  ) -> dict[tuple[str, int, str], AgreementCurve] | None:
    if not path.is_file():
        return None
    try:
        table = pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: cannot read it ({exc})") from None
    if "subtask" in table.columns:
        table = table[table.subtask == POOLED]
    table = table[table.sources == sources]
    return {(str(method), int(size), str(split)): AgreementCurve(
        gap=group.gap.to_numpy(dtype=np.float64),
        agreement=(group.agreeing / group.pairs).to_numpy(dtype=np.float64),
        pairs=group.pairs.to_numpy(dtype=np.int64))
        for (method, size, split), group in table.groupby(["method", "size", "split"],
                                                          sort=False)}


def _pooled_sizes(run: RunData, frame: pd.DataFrame) -> np.ndarray:
    """Each per-subtask row's size replaced by its fraction's total over subtasks."""
    sizes = run.config["per_subtask"]["sizes"]
    fractions = run.config["per_subtask"]["fractions"]
    totals = [sum(per[i] for per in sizes.values()) for i in range(len(fractions))]
    lookup = {(name, size): totals[i] for name, per in sizes.items()
              for i, size in enumerate(per)}
    return np.array([lookup[(s, z)] for s, z in zip(frame.subtask, frame["size"], strict=True)])


def target_gaps(run: RunData) -> np.ndarray:
    """|full-benchmark accuracy gap| of every pair of the fixed target models, in
    accuracy fractions; empty when the run drew its targets at random, or for a
    per-subtask run (its rows hold each subtask's accuracy, not the benchmark's)."""
    if run.config["study"].get("target_models") is None or run.per_subtask:
        return np.empty(0)
    accuracy = (run.results.groupby("model", observed=True).full_accuracy.first()
                .to_numpy(dtype=np.float64))
    i, j = np.triu_indices(accuracy.size, k=1)
    return np.abs(accuracy[i] - accuracy[j])
