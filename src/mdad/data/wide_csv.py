"""Wide CSV results: one row per item and one column per model, or the transpose."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from mdad.data.choices import Orientation
from mdad.data.files import file_sha256, listed, not_a_file
from mdad.data.loader import FileLoader
from mdad.data.matrix import ResponseMatrix
from mdad.errors import ConfigError, DataError

ITEM_ID_COLUMNS = ("item_id", "item", "question_id", "doc_id", "id")
SUBTASK_COLUMNS = ("subtask", "subset", "category", "subject", "task")
MISSING_TOKENS = frozenset({"", "nan", "NaN", "NA", "N/A", "null", "None"})


def _read_cells(path: Path) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The header, the body's cells as strings, and each body row's line number.

    Every row must have as many fields as the header; blank lines are skipped.
    """
    if not path.is_file():  # a pipe would block the read
        raise DataError(f"{path}: {not_a_file(path)}; pass a CSV file")
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            rows, lines = [], []
            for row in reader:
                if row:
                    rows.append(row)
                    lines.append(reader.line_num)
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise DataError(f"{path}: not a UTF-8 text file; save it as CSV") from None
    except csv.Error as exc:
        raise DataError(f"{path}: not a well-formed CSV ({exc})") from None
    if not rows:
        raise DataError(f"{path}: the file is empty")
    if len(rows) < 2:
        raise DataError(f"{path}: a header but no data rows")
    width = len(rows[0])
    for row, line in zip(rows, lines, strict=True):
        if len(row) != width:
            side = "fewer" if len(row) < width else "more"
            raise DataError(f"{path}: line {line} has {side} fields than the header "
                            f"({len(row)} vs {width}); fix that row")
    for row, line in zip(rows, lines, strict=True):
        if any("\x00" in cell for cell in row):  # numpy's strings would drop it unseen
            raise DataError(f"{path}: line {line} holds a NUL byte; is it a text CSV? remove "
                            "the byte or save the file as CSV again")
    header = [h.strip() for h in rows[0]]
    seen: dict[str, int] = {}
    for column, name in enumerate(header, start=1):
        if not name and column > 1:  # the first may head the models' names (models as rows)
            raise DataError(f"{path}: column {column} has no name in the header; name it")
        if name and name in seen:  # a model or the id column would be lost in one of them
            raise DataError(f"{path}: columns {seen[name]} and {column} are both named "
                            f"{name!r}; give each column its own name")
        seen[name] = column
    return header, np.array(rows[1:], dtype=object), np.array(lines[1:])


def _number(cell: str) -> float:
    """`float(cell)`, or NaN for what is not a plain number. Python's float also takes
    digit separators ('1_0') and any Unicode digit or space ('\uff11', '0.5\u00a0'); a CSV
    number is ASCII without them (as pandas.to_numeric reads it, the same numbers)."""
    if not cell.isascii() or "_" in cell:
        return math.nan
    try:
        return float(cell)
    except ValueError:
        return math.nan


def _to_scores(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Parse string cells into float64 values (NaN where missing or not a number),
    and a mask of the non-empty cells that are not numbers.

    One Python float per cell: 0.07 s for GPQA's 188,160 cells and 0.8 s for 2 million,
    against 0.12 and 1.3 s for pandas.to_numeric, which also takes 0.4 s to import."""
    flat = cells.ravel()
    is_missing = np.fromiter((cell in MISSING_TOKENS for cell in flat), dtype=bool,
                             count=flat.size)
    values = np.fromiter((math.nan if missing else _number(cell)
                          for cell, missing in zip(flat, is_missing, strict=True)),
                         dtype=np.float64, count=flat.size)
    return values.reshape(cells.shape), (np.isnan(values) & ~is_missing).reshape(cells.shape)


def _check_scores(values: np.ndarray, text: np.ndarray, cells: np.ndarray, path: Path,
                  col_names: list[str], line_of_row: np.ndarray) -> np.ndarray:
    """Float32 scores, or a DataError naming the first cell that is not in [0, 1]."""
    bad = text | (~np.isnan(values) & ((values < 0) | (values > 1)))
    if bad.any():
        r, c = divmod(int(np.flatnonzero(bad)[0]), cells.shape[1])
        raise DataError(
            f"{path}: line {int(line_of_row[r])}, column {col_names[c]!r}: {str(cells[r, c])!r} is "
            "not a score in [0, 1] or empty; mark a missing result with an empty cell"
        )
    return values.astype(np.float32)


def _pick(names: list[str], wanted: str | None, candidates: tuple[str, ...], path: Path,
          parameter: str) -> str | None:
    if wanted is not None:
        if wanted not in names:
            raise DataError(f"{path}: no column {wanted!r} for {parameter}; columns start "
                            f"{names[:5]}", parameters=(parameter,))
        return wanted
    lowered = {n.lower(): n for n in names}
    return next((lowered[c] for c in candidates if c in lowered), None)


def load_wide_csv(
    path: str | Path,
    *,
    orientation: Orientation | str = Orientation.AUTO,
    item_column: str | None = None,
    subtask_column: str | None = None,
    meta_columns: tuple[str, ...] = (),
) -> ResponseMatrix:
    """Read a wide CSV of per-item scores.

    Items as rows (the GPQA and MMLU-Pro files): every column is a model except the
    item-id column (``item_id``, ``question_id``, ... or `item_column`), the subtask
    column (``subtask``, ``subset``, ``category``, ... or `subtask_column`), the
    `meta_columns`, and columns with no numeric cell at all (text metadata such as
    ``src``). Models as rows: the first column names the models, the header names
    the items, and an optional row whose first cell is ``subtask`` (or ``subset``,
    ``category``) labels the items.

    Scores are fractions in [0, 1]; an empty cell (or ``NA``, ``nan``) is missing.

    Parameters
    ----------
    orientation : {"auto", "items-as-rows", "models-as-rows"}
        ``auto`` picks items-as-rows when a column is named like an item id or a
        subtask, or when there are at least as many data rows as score columns
        (benchmarks have more items than models).

    Raises
    ------
    DataError
        Naming the file, line and column, for ragged rows, cells that are not scores
        in [0, 1], duplicate names, and rows or columns without any data.
    ConfigError
        For an unknown `orientation`.
    """
    path = Path(path)
    header, body, lines = _read_cells(path)
    orientation = Orientation(orientation)  # raises ConfigError naming `orientation`
    notes: list[str] = []
    if orientation is Orientation.AUTO:
        # An item-id or subtask column names one item per row; else items outnumber models.
        named_items = {h.lower() for h in header} & {*ITEM_ID_COLUMNS, *SUBTASK_COLUMNS}
        orientation = (Orientation.ITEMS_AS_ROWS
                       if named_items or body.shape[0] >= body.shape[1] - 1
                       else Orientation.MODELS_AS_ROWS)
        if not named_items:  # a guess from the shape alone: say which, and how to undo it
            other = (Orientation.MODELS_AS_ROWS if orientation is Orientation.ITEMS_AS_ROWS
                     else Orientation.ITEMS_AS_ROWS)
            notes.append(f"{path.name}: read with {orientation.value.replace('-', ' ')}, from "
                         f"its shape ({body.shape[0]} rows, {body.shape[1] - 1} score "
                         f"columns) and no column named like an item id or a subtask; if that "
                         f"is wrong, pass orientation {other.value}")
    if orientation is Orientation.MODELS_AS_ROWS:
        return _models_as_rows(path, header, body, lines, tuple(notes))

    id_col = _pick(header, item_column, ITEM_ID_COLUMNS, path, "item_column")
    sub_col = _pick(header, subtask_column, SUBTASK_COLUMNS, path, "subtask_column")
    if isinstance(meta_columns, str):
        raise ConfigError(f"meta_columns must be a list of column names, e.g. "
                          f"[{meta_columns!r}]; got the string {meta_columns!r}",
                          parameters=("meta_columns",))
    unknown = [c for c in meta_columns if c not in header]
    if unknown:
        raise DataError(f"{path}: meta_columns must name columns of the file; "
                        f"{unknown[0]!r} is not one of {', '.join(header[:8])}",
                        parameters=("meta_columns",))
    named = {c for c in (id_col, sub_col, *meta_columns) if c is not None}
    candidates = [j for j, name in enumerate(header) if name not in named]
    cells = body[:, candidates]
    values, text = _to_scores(cells)
    # A column without a single number (and some text) is metadata, such as `src`.
    is_model = ~(text.any(axis=0) & np.isnan(values).all(axis=0))
    if not is_model.any():
        reason, parameters = _why_no_scores(header, cells)
        raise DataError(f"{path}: no model columns with scores; {reason}",
                        parameters=parameters)
    model_names = [header[j] for j, keep in zip(candidates, is_model, strict=True) if keep]
    if not is_model.all():
        left_out = [header[j] for j, keep in zip(candidates, is_model, strict=True) if not keep]
        notes.append(f"{path.name}: {len(left_out)} column(s) without a single score read as "
                     f"metadata, not models: {listed(left_out)}")
    scores = _check_scores(values[:, is_model], text[:, is_model], cells[:, is_model], path,
                           model_names, lines)
    item_ids = (_labels(body[:, header.index(id_col)], lines, path, id_col, distinct=True)
                if id_col is not None else np.array([str(i) for i in range(body.shape[0])]))
    subtasks = (_labels(body[:, header.index(sub_col)], lines, path, sub_col)
                if sub_col is not None else None)
    return ResponseMatrix(scores.T, model_names, item_ids, subtasks,
                          source=str(path), sha256=file_sha256(path), notes=tuple(notes))


def _why_no_scores(header: list[str], cells: np.ndarray) -> tuple[str, tuple[str, ...]]:
    """The likeliest reason a file has no score column and its fix, and the parameters
    the fix names."""
    joined = " ".join(header)
    for separator, name in ((";", "semicolons"), ("\t", "tabs"), ("|", "bars")):
        if len(header) <= 2 and separator in joined:
            return (f"its columns seem separated by {name}; save it comma-separated "
                    "(mdad reads standard CSV)"), ()
    words = {str(v).strip().lower() for v in cells.ravel()} - {"", "na", "nan"}
    if words and words <= {"true", "false", "yes", "no"}:
        return "its scores are written as true/false; write them as 1 and 0", ()
    return "is the file models-as-rows? set orientation to models-as-rows", ("orientation",)


def _labels(cells: np.ndarray, lines: np.ndarray, path: Path, column: str, *,
            distinct: bool = False) -> np.ndarray:
    """The item ids or subtasks in `cells` (one per data row, on file lines `lines`),
    read as names are, without surrounding spaces; a DataError names the line of the
    first empty one and, when they must be `distinct`, the two lines of a repeated one."""
    labels = np.char.strip(cells.astype(str))
    first: dict[str, int] = {}
    for label, line in zip(labels.tolist(), lines.tolist(), strict=True):
        if not label:
            raise DataError(f"{path}: line {line}, column {column!r} is empty; fill it in")
        if distinct and label in first:
            raise DataError(f"{path}: lines {first[label]} and {line} both have {column} "
                            f"{label!r} (read without surrounding spaces); give each item "
                            "its own id")
        first[label] = line
    return labels


def _models_as_rows(path: Path, header: list[str], body: np.ndarray,
                    lines: np.ndarray, notes: tuple[str, ...]) -> ResponseMatrix:
    first = np.array([str(v).strip() for v in body[:, 0]])
    is_subtask_row = np.isin(np.char.lower(first.astype(str)), SUBTASK_COLUMNS)
    subtasks = None
    if is_subtask_row.any():
        labelled = np.flatnonzero(is_subtask_row)
        if len(labelled) > 1:  # which one labels the items would be a guess
            raise DataError(f"{path}: lines {lines[labelled[0]]} and {lines[labelled[1]]} "
                            "both label the items' subtasks; keep one of them")
        subtasks = np.char.strip(body[labelled[0], 1:].astype(str))
        if (blank := np.flatnonzero(subtasks == "")).size:
            raise DataError(f"{path}: line {lines[labelled[0]]}, column "
                            f"{header[blank[0] + 1]!r}: the subtask is empty; fill it in")
    rows = ~is_subtask_row
    item_ids = header[1:]
    cells = body[rows][:, 1:]
    values, text = _to_scores(cells)
    scores = _check_scores(values, text, cells, path, item_ids, lines[rows])
    return ResponseMatrix(scores, first[rows], item_ids, subtasks,
                          source=str(path), sha256=file_sha256(path), notes=notes)


def is_wide_csv(path: Path) -> bool:
    """A ``.csv`` (or ``.txt``) file."""
    return path.is_file() and path.suffix.lower() in (".csv", ".txt")


LOADER = FileLoader(
    name="wide-csv",
    reads="a .csv file",
    options=("orientation", "item_column", "subtask_column", "meta_columns"),
    recognise=is_wide_csv,
    read=load_wide_csv,
)
