"""One model's answers as a CSV of ``item_id,correct`` rows: the file `estimate` and
`compare` read when the results are not lm-eval's, and `mdad data answers` writes.

Item ids are written neutralised against formula injection (OWASP's rule,
`mdad.safe_io.csv_text`: ``=cmd()`` is written ``'=cmd()``) and read back through
`csv_text_read`, so a leading ``'`` of an item id is dropped on reading, as a
spreadsheet's own export drops it."""

from __future__ import annotations

import csv
import difflib
import io
from pathlib import Path

import numpy as np

from mdad.data.files import missing_reason
from mdad.data.matrix import ResponseMatrix
from mdad.errors import DataError
from mdad.safe_io import csv_text, csv_text_read

HEADER = ("item_id", "correct")


def read_answers_csv(path: Path) -> dict[str, float]:
    """``item_id,correct`` rows as item -> score; a UTF-8 byte-order mark (as Excel
    writes) and blank lines are allowed, any other column is refused. An item id's
    surrounding blanks and then one leading ``'`` (the mark `answers_csv` and
    spreadsheets put before ``=``, ``+``, ``-``, ``@``) are not part of it."""
    if not path.is_file():  # a pipe would block the read
        raise DataError(f"{path}: {missing_reason(path)}; pass a CSV file item_id,correct")
    try:  # utf-8-sig: the byte-order mark is not part of the first column's name
        with path.open(newline="", encoding="utf-8-sig") as handle:
            rows = list(csv.reader(handle))
    except OSError as exc:
        raise DataError(f"{path}: cannot read it ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: byte {exc.start} is not UTF-8; save the file as UTF-8"
                        ) from None
    header = [c.strip() for c in rows[0]] if rows else []
    if header != list(HEADER):
        extra = (f" (it has {', '.join(map(repr, header))}; remove the other columns)"
                 if header[:2] == list(HEADER) else "")
        raise DataError(f"{path}: the first line must be the header item_id,correct{extra}")
    values: dict[str, float] = {}
    for line, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != 2:
            raise DataError(f"{path}, line {line}: expected item_id,correct, got "
                            f"{len(row)} cell(s) {','.join(row)!r}")
        if not row[0].strip():
            raise DataError(f"{path}, line {line}, column item_id: the id is empty; fill it "
                            "in")
        item = csv_text_read(row[0].strip())
        if not item:
            raise DataError(f"{path}, line {line}, column item_id: the id is only a \"'\"; "
                            "fill it in")
        try:
            value = float(row[1])
        except ValueError:
            raise DataError(f"{path}, line {line}, column correct: {row[1]!r} is not a "
                            "number in [0, 1]") from None
        if not 0.0 <= value <= 1.0:
            raise DataError(f"{path}, line {line}, column correct: {value} is not in [0, 1]")
        if item in values:
            raise DataError(f"{path}, line {line}: item {item!r} appears twice; keep one "
                            "row per item")
        values[item] = value
    return values


def model_answers(matrix: ResponseMatrix, model: str, items: list[str] | None = None
                  ) -> tuple[list[str], np.ndarray]:
    """`model`'s scores on `items` (default every item of `matrix`), in that order:
    the ids and a float array of shape (len(ids),), NaN where the model has no result.

    Raises
    ------
    DataError
        For a model that `matrix` lacks (naming the nearest names), or items it lacks.
    """
    names = [str(name) for name in matrix.model_names]
    if model not in names:
        close = difflib.get_close_matches(model, names, n=3, cutoff=0.5)
        hint = (f"; the nearest names are {', '.join(map(repr, close))}" if close
                else f"; its models are named like {names[0]!r}")
        raise DataError(f"model {model!r} is not one of the {len(names)} models of "
                        f"{matrix.source}{hint}", parameters=("model",))
    column = {str(item): k for k, item in enumerate(matrix.item_ids)}
    wanted = [str(item) for item in matrix.item_ids] if items is None else list(items)
    absent = [item for item in wanted if item not in column]
    if absent:
        raise DataError(f"items: {len(absent)} of the {len(wanted)} items are not in "
                        f"{matrix.source} (e.g. {absent[0]!r}); give the data they were "
                        "selected from", parameters=("items",))
    row = names.index(model)
    return wanted, matrix.scores()[row, [column[item] for item in wanted]]


def answers_csv(items: list[str], scores: np.ndarray) -> str:
    """The CSV text of the answered `items` (a NaN score: no row), in their order; 0/1
    scores as digits, others as the shortest decimal that reads back the same float;
    item ids neutralised for spreadsheets (`csv_text`), which `read_answers_csv`
    undoes."""
    answered = ~np.isnan(scores)
    binary = bool(np.isin(scores[answered], (0.0, 1.0)).all())
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(HEADER)
    for item, score in zip(items, scores.tolist(), strict=True):
        if score == score:  # not NaN
            writer.writerow((csv_text(item), int(score) if binary else repr(score)))
    return text.getvalue()
