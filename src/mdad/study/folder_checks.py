"""Checks that a study folder read back holds a study: `report`, `plan --run` and
`select --run` trust these files, so a hand-edited, cut or mixed-up one is refused
here, naming the file, the row or field and the fix, instead of failing later inside
a figure or a table."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mdad.errors import DataError
from mdad.study.evaluation import SPLITS

if TYPE_CHECKING:
    import pandas as pd

FIX = "rerun the study (`mdad run ... --out`) or pass another folder"
# config.json's mark of CSVs whose text cells are neutralised (`mdad.safe_io.csv_text`);
# a folder without it (written before) holds its names as they are
CSV_TEXT_FIELD, CSV_TEXT_OWASP = "csv_text_cells", "owasp"

# config.json: the fields the readers use, and their types (None: may be null)
_WHOLE = (int,)
_TEXT = (str,)
_LIST = (list,)
_CONFIG_FIELDS: dict[tuple[str, ...], tuple[type | None, ...]] = {
    ("mdad_version",): _TEXT,
    ("dataset", "name"): _TEXT,
    ("dataset", "path"): _TEXT,
    ("dataset", "sha256"): _TEXT,
    ("dataset", "n_models"): _WHOLE,
    ("dataset", "n_items"): _WHOLE,
    ("dataset", "missing_policy"): _TEXT,
    ("dataset", "dropped_items"): _WHOLE,
    ("dataset", "dropped_models"): _LIST,
    ("study", "methods"): _LIST,
    ("study", "n_runs"): _WHOLE,
    ("study", "n_targets"): _WHOLE,
    ("study", "sources"): _LIST,
    ("study", "seed"): _WHOLE,
    ("study", "n_resamples"): _WHOLE,
}
_OPTIONAL_FIELDS: dict[tuple[str, ...], tuple[type | None, ...]] = {
    ("dataset", "seen_pool_size"): (int, None),
    ("study", "target_models"): (list, None),
    ("per_subtask",): (dict, None),
    ("command",): (list, None),
    ("notices",): _LIST,
    ("confidence_substituted_by_correctness",): _LIST,
    (CSV_TEXT_FIELD,): _TEXT,
}
# mdad.csv and summary.csv: columns of numbers (empty where censored or undefined)
_MDAD_NUMBERS = ("mdad", "mdad_low", "mdad_high", "threshold", "max_gap", "crossing_pairs",
                 "tied_pairs", "mdad_smooth", "mdad_smooth_low", "mdad_smooth_high",
                 "fraction")
_MDAD_FLAGS = ("reached", "smooth_reached")
_SUMMARY_TEXT = ("method", "subtask")


def check_config(path: Path, config: object) -> None:
    """Refuse a config.json (read from `path`) that lacks a field the readers use or
    holds one of another type, whose threshold is not a probability, or whose CSVs'
    text cells follow a rule other than `CSV_TEXT_OWASP`."""
    if not isinstance(config, dict) or not isinstance(config.get("study"), dict) or not (
            {"methods", "threshold"} <= set(config["study"])):
        raise DataError(f"{path}: not a study configuration (no 'study' with its methods "
                        f"and threshold); {FIX}")
    for fields, required in ((_CONFIG_FIELDS, True), (_OPTIONAL_FIELDS, False)):
        for keys, types in fields.items():
            found, value = _field(config, keys)
            if not found and not required:
                continue
            if not found or not _is(value, types):
                wanted = " or ".join("null" if t is None else _TYPE_NAMES[t] for t in types)
                got = "missing" if not found else f"{value!r}"[:40]
                raise DataError(f"{path}: field {'.'.join(keys)} is {got}, not {wanted}; "
                                f"{FIX}")
    methods = config["study"]["methods"]
    if not methods or not all(isinstance(m, str) for m in methods):
        raise DataError(f"{path}: field study.methods is not a list of method names; {FIX}")
    if config.get(CSV_TEXT_FIELD, CSV_TEXT_OWASP) != CSV_TEXT_OWASP:  # another rule's cells
        raise DataError(f"{path}: field {CSV_TEXT_FIELD} is {config[CSV_TEXT_FIELD]!r:.40}, "
                        f"not {CSV_TEXT_OWASP!r} (the only way mdad writes text cells); "
                        f"{FIX}")
    threshold = config["study"]["threshold"]
    if not _is(threshold, (int, float)) or not 0 < threshold < 1:
        raise DataError(f"{path}: the study's threshold {threshold!r} is not a probability "
                        f"between 0 and 1; {FIX}")


_TYPE_NAMES = {int: "a whole number", float: "a number", str: "text", list: "a list",
               dict: "an object"}


def _field(config: dict, keys: tuple[str, ...]) -> tuple[bool, Any]:
    value: Any = config
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            return False, None
        value = value[key]
    return True, value


def _is(value: object, types: tuple[type | None, ...]) -> bool:
    """JSON's types: a bool is no number here, though Python counts it an int."""
    if value is None:
        return None in types
    return not isinstance(value, bool) and any(
        t is not None and isinstance(value, t) for t in types)


def check_mdad_table(path: Path, mdad: pd.DataFrame, config: dict) -> None:
    """Refuse an mdad.csv (read from `path`) without rows or its key columns; with a
    size, source or pair count that is not a whole number, a number column holding
    text, a reached flag that is not True or False, a split other than seen and
    unseen, a method or threshold the config does not have, or a value marked reached
    that is not an accuracy gap in [0, 1]; with subtask rows in a whole-set study; or
    with a key (method, size, sources, split) given twice."""
    import pandas as pd

    lacking = [c for c in ("method", "size", "sources", "split", "mdad") if c not in mdad]
    if lacking or mdad.empty:
        what = f"no column {', '.join(lacking)}" if lacking else "no rows"
        raise DataError(f"{path}: {what}; {FIX}")
    for column in ("size", "sources", "pairs"):  # counts: whole numbers, sizes above 0
        if column in mdad:
            values = pd.to_numeric(mdad[column], errors="coerce").to_numpy(np.float64)
            bad = np.flatnonzero(~np.isfinite(values) | (values != np.round(values))
                                 | (values < (column != "pairs")))
            if len(bad):
                raise DataError(f"{path}: row {bad[0] + 2}, column {column}: "
                                f"{mdad[column].iloc[bad[0]]} is not a count; {FIX}")
    _check_numbers(path, mdad, [c for c in _MDAD_NUMBERS if c in mdad])
    for column in (c for c in _MDAD_FLAGS if c in mdad):
        bad = np.flatnonzero(~mdad[column].astype(str).isin(["True", "False"]).to_numpy())
        if len(bad):
            raise DataError(f"{path}: row {bad[0] + 2}, column {column}: "
                            f"{mdad[column].iloc[bad[0]]!r} is not True or False; {FIX}")
    _check_member(path, mdad, "split", SPLITS, "a split (seen, unseen)")
    _check_member(path, mdad, "method", [str(m) for m in config["study"]["methods"]],
                  "one of the study's methods in config.json")
    if "threshold" in mdad:
        bad = np.flatnonzero(~np.isclose(mdad.threshold.to_numpy(np.float64),
                                         float(config["study"]["threshold"])))
        if len(bad):
            raise DataError(f"{path}: row {bad[0] + 2}, column threshold: "
                            f"{mdad.threshold.iloc[bad[0]]} is not the study's threshold "
                            f"{config['study']['threshold']} in config.json; {FIX}")
    if "subtask" in mdad and config.get("per_subtask") is None:
        raise DataError(f"{path}: a subtask column, but config.json is of a whole-set study "
                        f"(no per_subtask); {FIX}")
    if "reached" in mdad:
        values = mdad.mdad.to_numpy(np.float64)
        bad = np.flatnonzero((mdad.reached.astype(str) == "True").to_numpy()
                             & ~((values >= 0) & (values <= 1)))
        if len(bad):
            raise DataError(f"{path}: row {bad[0] + 2} is marked reached but its mdad is not "
                            f"a number in [0, 1]; {FIX}")
    keys = ["subtask"] * ("subtask" in mdad) + ["method", "size", "sources"]
    check_unique(path, mdad, [*keys, "split"])
    counts = mdad.groupby(keys, sort=False).split.count()
    if (counts < len(SPLITS)).any():  # every study evaluates both splits
        key = counts.index[np.flatnonzero(counts.to_numpy() < len(SPLITS))[0]]
        what = ", ".join(f"{k} {v}" for k, v in zip(keys, key, strict=True))
        raise DataError(f"{path}: {what} has a row for one split only (seen and unseen "
                        f"both belong to it); {FIX}")


def check_summary_table(path: Path, mdad: pd.DataFrame, summary: pd.DataFrame, *,
                        where: str = "") -> None:
    """Refuse a summary.csv (read from `path`) with a number column holding text, or
    that lacks a row for a method, size and source count of mdad.csv (a file cut
    short, or another study's), has one mdad.csv does not, or has one twice. `where`
    names the block checked (a subtask of a per-subtask study), whose rows are not
    numbered as in the file."""
    keys = ["method", "size", "sources"]
    lacking = [c for c in keys if c not in summary]
    if lacking:
        raise DataError(f"{path}: no column {', '.join(lacking)}; {FIX}")
    import pandas as pd

    _check_numbers(path, summary, [c for c in summary.columns if c not in _SUMMARY_TEXT])

    def rows(table: pd.DataFrame) -> list[tuple[str, float, float]]:
        counts = [pd.to_numeric(table[c], errors="coerce").tolist() for c in keys[1:]]
        return list(zip(table.method.astype(str), *counts, strict=True))

    def described(key: tuple[str, float, float]) -> str:
        return f"{key[0]} at {key[1]:g} items and {key[2]:g} sources" + (
            f" ({where})" if where else "")

    expected, counts = rows(mdad), Counter(rows(summary))
    known = set(expected)
    lacking_rows = [key for key in expected if key not in counts]
    if lacking_rows:
        raise DataError(f"{path}: no row for {described(lacking_rows[0])}, which mdad.csv "
                        f"has; {FIX}")
    for key, count in counts.items():
        if key not in known:
            raise DataError(f"{path}: a row for {described(key)}, which mdad.csv does not "
                            f"have; {FIX}")
        if count > 1:
            raise DataError(f"{path}: {count} rows for {described(key)}; {FIX}")


def _check_numbers(path: Path, table: pd.DataFrame, columns: list[str]) -> None:
    """Refuse text in `columns`, which hold numbers or nothing."""
    import pandas as pd

    for column in columns:
        given = table[column]
        bad = np.flatnonzero((pd.to_numeric(given, errors="coerce").isna()
                              & given.notna()).to_numpy())
        if len(bad):
            raise DataError(f"{path}: row {bad[0] + 2}, column {column}: "
                            f"{str(given.iloc[bad[0]])!r} is not a number; {FIX}")


def _check_member(path: Path, table: pd.DataFrame, column: str, allowed: list[str] | tuple,
                  what: str) -> None:
    bad = np.flatnonzero(~table[column].astype(str).isin(list(allowed)).to_numpy())
    if len(bad):
        raise DataError(f"{path}: row {bad[0] + 2}, column {column}: "
                        f"{str(table[column].iloc[bad[0]])!r} is not {what}; {FIX}")


def check_unique(path: Path, table: pd.DataFrame, keys: list[str]) -> None:
    """Refuse two rows of `table` (read from `path`) with the same `keys`: which of
    them is the study's would be a guess."""
    twice = np.flatnonzero(table.duplicated(subset=keys).to_numpy())
    if len(twice):
        row = table.iloc[twice[0]]
        same = (table[keys] == row[keys]).all(axis=1).to_numpy()
        what = ", ".join(f"{key} {row[key]}" for key in keys)
        raise DataError(f"{path}: rows {np.flatnonzero(same)[0] + 2} and {twice[0] + 2} both "
                        f"have {what}; {FIX}")


# results.parquet: one row per estimate
RESULT_COLUMNS = ("run", "method", "size", "n_sources", "model", "estimate", "seen_accuracy",
                  "unseen_accuracy", "full_accuracy")


def check_results_table(path: Path, results: pd.DataFrame) -> None:
    """Refuse a results.parquet (read from `path`) that lacks a column of
    `RESULT_COLUMNS` or whose counts and accuracies are not numbers."""
    import pandas as pd

    lacking = [c for c in RESULT_COLUMNS if c not in results]
    if lacking:
        raise DataError(f"{path}: no column {', '.join(lacking)}; {FIX}")
    numeric = [c for c in RESULT_COLUMNS if c not in ("method", "model")]
    wrong = [c for c in numeric if not pd.api.types.is_numeric_dtype(results[c])]
    if wrong:
        raise DataError(f"{path}: column {wrong[0]} holds {results[wrong[0]].dtype}, not "
                        f"numbers; {FIX}")


def check_subtask_sizes(path: Path, config: dict[str, Any],
                        rows: dict[str, pd.DataFrame]) -> None:
    """Refuse config.json's per_subtask (read from `path`) unless it lists fractions in
    (0, 1] and, for each subtask, one whole size per fraction, covering the subtask and
    size of every row in `rows` (file name -> its per-subtask rows): the report sums
    those sizes into the pooled micro-benchmark's."""
    block = config["per_subtask"]
    fractions, sizes = block.get("fractions"), block.get("sizes")
    if not (isinstance(fractions, list) and fractions
            and all(_is(f, (int, float)) and 0 < f <= 1 for f in fractions)):
        raise DataError(f"{path}: field per_subtask.fractions is {fractions!r:.40}, not a list "
                        f"of fractions in (0, 1]; {FIX}")
    if not (isinstance(sizes, dict) and sizes and all(
            isinstance(per, list) and len(per) == len(fractions)
            and all(_is(size, _WHOLE) and size >= 0 for size in per)
            for per in sizes.values())):
        raise DataError(f"{path}: field per_subtask.sizes is not, for each subtask, a list of "
                        f"{len(fractions)} whole sizes (one per fraction); {FIX}")
    known = {(str(name), size) for name, per in sizes.items() for size in per}
    for name, frame in rows.items():
        if "subtask" not in frame.columns:
            raise DataError(f"{path.with_name(name)}: no column subtask, which a per-subtask "
                            f"study's files have; {FIX}")
        pairs = zip(frame.index, frame.subtask.astype(str), frame["size"], strict=True)
        for row, subtask, size in pairs:
            if (subtask, size) not in known:
                where = f"row {row + 2} of {name}" if name.endswith(".csv") else name
                raise DataError(f"{path}: per_subtask.sizes has no size {size} for subtask "
                                f"{subtask}, which {where} has; {FIX}")
