"""The study folder that `mdad run` writes (and `report`, `plan --run` and `select --run`
read): its files, writing it all at once (it exists complete, or not at all), and
reading it back.

Files: ``config.json`` (the resolved request, the data's sha256, notices, timing),
``mdad.csv`` (MDAD per method, size, source count and split), ``summary.csv``,
``agreement.csv`` (the binned agreement curves) and ``results.parquet`` (one row per
estimate). A per-subtask study's tables have ``subtask`` and ``fraction`` columns.

The CSVs' text cells (method, split, subtask names: a subtask is the user's own label)
are neutralised against formula injection by OWASP's rule (`mdad.safe_io.csv_text`: a
leading ``'`` before ``=``, ``+``, ``-``, ``@``, a tab, CR or ``'``), so that a
spreadsheet opening them runs nothing; config.json's ``csv_text_cells`` says so, and
`read_study_csv` undoes it. A folder written before (no such field) is read as it is.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mdad.data.files import check_regular_file
from mdad.errors import ConfigError, DataError, check_path, running_out
from mdad.safe_io import STAGING, csv_text, csv_text_read, make_staging
from mdad.study.design import seen_pool_size
from mdad.study.folder_checks import (
    CSV_TEXT_FIELD,
    CSV_TEXT_OWASP,
    FIX,
    check_config,
    check_mdad_table,
    check_results_table,
    check_subtask_sizes,
    check_summary_table,
)

if TYPE_CHECKING:
    import pandas as pd

    from mdad.data.registry import Dataset
    from mdad.study.config import StudyPlan
    from mdad.study.evaluation import StudyTables

POOLED = "(pooled)"  # the subtask name of a per-subtask study's pooled rows
LEGACY_NOT_REACHED = 0.5  # mdad 0.1's stand-in for "never reached"
REQUIRED = ("config.json", "mdad.csv", "summary.csv", "results.parquet")
TEXT_COLUMNS = ("method", "split", "subtask")  # the study CSVs' columns of names


def check_out_dir(out_dir: Path) -> Path:
    """Refuse, before any work, an output folder that already holds something or that
    cannot be written (a read-only or virtual parent, a name too long). Returns the
    folder to write: a symbolic link to an empty folder stands for that folder."""
    out_dir = Path(out_dir)
    if out_dir.is_symlink() and not out_dir.exists():  # resolve() would raise on a loop
        raise ConfigError(f"out_dir {out_dir}: a symbolic link to nothing (its target is "
                          "missing, or links loop); choose another folder",
                          parameters=("out_dir",))
    if out_dir.is_symlink():
        out_dir = out_dir.resolve()
    try:
        taken = out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir()))
    except OSError as exc:
        raise ConfigError(f"out_dir {out_dir}: cannot read it ({exc.strerror}); choose "
                          "another folder", parameters=("out_dir",)) from None
    if taken:
        what = "is a file" if not out_dir.is_dir() else "is not empty"
        raise ConfigError(f"out_dir {out_dir} already exists and {what}; "
                          "choose another folder or remove it", parameters=("out_dir",))
    blocking = next((p for p in out_dir.parents if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise ConfigError(f"out_dir {out_dir}: {blocking} is a file, not a folder",
                          parameters=("out_dir",))
    _probe_writable(out_dir)
    return out_dir


def _probe_writable(out_dir: Path) -> None:
    """Create and remove a folder named like the staging folder, in the nearest
    existing ancestor: what the final write will need."""
    existing = next(p for p in (out_dir.parent, *out_dir.parent.parents) if p.exists())
    try:
        # as long a name as `make_staging`'s
        probe = tempfile.mkdtemp(prefix=f".{out_dir.name}.{STAGING}{os.getpid()}-",
                                 dir=existing)
        os.rmdir(probe)
    except OSError as exc:
        raise ConfigError(f"out_dir {out_dir}: cannot write there ({exc.strerror}); choose "
                          "a folder you can write to, with a shorter name if it is long",
                          parameters=("out_dir",)) from None


def study_config_json(dataset: Dataset, plan: StudyPlan, *, version: str,
               command: list[str] | None = None,
               per_subtask: dict[str, Any] | None = None,
               notices: tuple[str, ...] = ()) -> dict[str, Any]:
    """Everything needed to rerun the study exactly (config.json). `per_subtask`
    records a separate-subtasks study's fractions and per-subtask sizes (then the
    study's `sizes` is null; `dropped_sizes` lists, per method, the sizes it skips: those
    it cannot build); `notices` is every notice of the plan and the runs."""
    matrix = dataset.matrix
    confidence_methods = [name for name in plan.config.methods
                          if _reads_confidence(name)]
    return {
        "mdad_version": version,
        "command": command,
        "dataset": {
            "name": dataset.name,
            "path": str(dataset.path),
            "sha256": matrix.sha256,
            "n_models": matrix.n_models,
            "n_items": matrix.n_items,
            "seen_pool_size": seen_pool_size(matrix.subtask_codes),
            "subtasks": list(matrix.subtask_names),
            "has_confidence": matrix.confidence is not None,
            "missing_policy": dataset.missing.policy.value,
            "missing_cells": dataset.missing.n_missing,
            "dropped_items": len(dataset.missing.dropped_items),
            "dropped_models": list(dataset.missing.dropped_models),
        },
        "study": {**plan.config.to_json(),
                  "sizes": None if per_subtask else list(plan.sizes),
                  # the sizes each method skips (it cannot build them): method -> sizes
                  "dropped_sizes": {name: list(sizes) for name, sizes in plan.dropped.items()},
                  "n_targets": plan.n_targets},
        "per_subtask": per_subtask,
        "confidence_substituted_by_correctness": (
            confidence_methods if matrix.confidence is None else []),
        "notices": list(notices),
        CSV_TEXT_FIELD: CSV_TEXT_OWASP,
        "environment": environment(),
    }


def environment() -> dict[str, Any]:
    """What a rerun elsewhere may differ by: the versions of the numerical libraries,
    the CPU's architecture and the BLAS kernels in use (another CPU's kernels move the
    IRT methods' numbers within noise: docs/explanation/reproduction.md)."""
    from importlib.metadata import PackageNotFoundError, version

    from threadpoolctl import threadpool_info

    found = {"python": platform.python_version(), "numpy": np.__version__}
    for package in ("scipy", "numba", "scikit-learn"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            found[package] = None
    found["machine"] = platform.machine()
    found["blas"] = sorted({f"{lib.get('internal_api')} {lib.get('version')} "
                            f"{lib.get('architecture')}" for lib in threadpool_info()
                            if lib.get("user_api") == "blas"})
    return found


def _reads_confidence(method: str) -> bool:
    from mdad.selection import get_method

    return bool(get_method(method).reads_confidence)


def write_study_folder(out_dir: Path, results: pd.DataFrame, tables: StudyTables,
                       config: dict[str, Any]) -> Path:
    """Write `results` (one row per estimate) as results.parquet, with mdad.csv,
    agreement.csv, summary.csv and config.json, into a hidden temporary folder
    beside `out_dir`, then rename it into place."""
    out_dir = Path(out_dir)
    check_out_dir(out_dir)
    parent = out_dir.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = make_staging(out_dir)
    except OSError as exc:
        raise ConfigError(f"out_dir {out_dir}: cannot create it ({exc.strerror})",
                          parameters=("out_dir",)) from None
    try:
        results.to_parquet(staging / "results.parquet", index=False)
        for name, table in (("mdad.csv", tables.mdad), ("agreement.csv", tables.agreement),
                            ("summary.csv", tables.summary)):
            neutralised(table).to_csv(staging / name, index=False)
        (staging / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        if out_dir.exists():
            out_dir.rmdir()  # empty, checked above
        os.replace(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out_dir


def neutralised(table: pd.DataFrame) -> pd.DataFrame:
    """`table` with every text cell made safe for a spreadsheet (`csv_text`): each
    column that holds neither numbers nor booleans. Numbers, negative ones too, and
    empty cells are left as they are."""
    import pandas as pd

    table = table.copy()
    for column in table.columns:
        values = table[column]
        if not (pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values)):
            table[column] = values.map(csv_text)
    return table


def read_study_csv(path: Path, *, neutralised: bool) -> pd.DataFrame:
    """A study CSV (mdad.csv, summary.csv, agreement.csv) as a table, its `TEXT_COLUMNS`
    exactly as written: read as text, never as a number or as NaN (a subtask named
    ``NA`` or ``-5`` stays that name), and un-neutralised (`csv_text_read`) when
    `neutralised` (config.json's `CSV_TEXT_FIELD`; a folder written before it holds
    its names as they are, a leading ``'`` included).

    Raises
    ------
    OSError, ValueError
        As `pandas.read_csv` (the caller names the file).
    """
    import pandas as pd

    table = pd.read_csv(path)
    text = [column for column in TEXT_COLUMNS if column in table.columns]
    if text:  # a second read, of the names only, without pandas' NA and number guesses
        cells = pd.read_csv(path, usecols=text, dtype=str, keep_default_na=False)
        for column in text:
            table[column] = cells[column].map(csv_text_read) if neutralised else cells[column]
    return table


@dataclass(frozen=True, eq=False)
class StudyFolder:
    """A finished study read back: its configuration and tables.

    For a per-subtask study the tables are the pooled block (`subtask` = "(pooled)"),
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
    def csv_text_neutralised(self) -> bool:
        """Whether the folder's CSVs hold neutralised text cells (see `neutralised`)."""
        return self.config.get(CSV_TEXT_FIELD) == CSV_TEXT_OWASP

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


def read_study_folder(path: Path) -> StudyFolder:
    """Read a finished study folder back: its configuration and tables.

    For a per-subtask study the tables are the pooled block (`subtask` = "(pooled)"),
    whose sizes are totals over subtasks. An mdad.csv of mdad 0.1, which wrote "never
    reached" as 0.5, is read as censored.

    Parameters
    ----------
    path : pathlib.Path
        The folder `mdad run` (or `conduct_study`) wrote: config.json, mdad.csv,
        summary.csv and results.parquet.

    Returns
    -------
    StudyFolder
        The folder's path, config.json's content, and its tables: mdad.csv (one row per
        method, size, source count and split), summary.csv (one row per method, size
        and source count) and results.parquet (one row per estimate).

    Raises
    ------
    ConfigError
        For a `path` that is not a path.
    DataError
        When a file is missing, unreadable or does not hold a study (see
        `mdad.study.folder_checks`), naming it.
    """
    check_path(path, "path")
    import pandas as pd

    path = Path(path)
    if not path.is_dir():
        raise DataError(f"{path}: not a folder; pass the folder `mdad run` wrote (--out)")
    missing = [name for name in REQUIRED if not (path / name).is_file()]
    for name in missing:  # a folder, pipe or broken link in a file's place
        if (path / name).exists() or (path / name).is_symlink():
            check_regular_file(path / name, fix=FIX)
    if missing:
        raise DataError(f"{path}: no {', '.join(missing)}; pass a folder written by "
                        "`mdad run`")
    def read_csv(file: Path) -> pd.DataFrame:
        config = tables["config.json"]  # read first
        marked = isinstance(config, dict) and config.get(CSV_TEXT_FIELD) == CSV_TEXT_OWASP
        return read_study_csv(file, neutralised=marked)

    readers = {"config.json": lambda f: json.loads(f.read_text(encoding="utf-8")),
               "mdad.csv": read_csv, "summary.csv": read_csv,
               # one thread: pyarrow's pool waits forever for a thread it cannot start
               "results.parquet": lambda f: pd.read_parquet(f, use_threads=False,
                                                            pre_buffer=False)}
    tables: dict[str, Any] = {}
    for name, read in readers.items():
        try:
            tables[name] = read(path / name)
        except (OSError, ValueError) as exc:  # pyarrow's errors are ValueErrors too
            if running_out(exc):  # not the file's fault
                raise
            reason = " ".join(str(exc).split())[:160]
            raise DataError(f"{path / name}: cannot read it ({reason}); {FIX}") from None
    config, mdad, summary = tables["config.json"], tables["mdad.csv"], tables["summary.csv"]
    check_config(path / "config.json", config)
    check_mdad_table(path / "mdad.csv", mdad, config)
    check_results_table(path / "results.parquet", tables["results.parquet"])
    if "subtask" in mdad.columns:
        if "subtask" not in summary.columns:
            raise DataError(f"{path / 'summary.csv'}: no column subtask, which a per-subtask "
                            f"study's mdad.csv has; {FIX}")
        for subtask in dict.fromkeys([*mdad.subtask, *summary.subtask]):  # each block
            check_summary_table(path / "summary.csv", mdad[mdad.subtask == subtask],
                                summary[summary.subtask == subtask], where=f"subtask {subtask}")
        if not (mdad.subtask == POOLED).any():
            raise DataError(f"{path / 'mdad.csv'}: no {POOLED} rows, which close a per-subtask "
                            f"study's tables; {FIX}")
        check_subtask_sizes(path / "config.json", config,
                            {"mdad.csv": mdad[mdad.subtask != POOLED],
                             "results.parquet": tables["results.parquet"]})
        mdad = mdad[mdad.subtask == POOLED].reset_index(drop=True)
        summary = summary[summary.subtask == POOLED].reset_index(drop=True)
    else:
        check_summary_table(path / "summary.csv", mdad, summary)
    return StudyFolder(path, config, censor_legacy(mdad), summary, tables["results.parquet"])


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
