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
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import closing
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from mdad.data.files import missing_reason, not_a_file
from mdad.data.matrix import ResponseMatrix
from mdad.errors import DataError
from mdad.safe_io import csv_text, csv_text_read

HEADER = ("item_id", "correct")
# The longest line read, in characters: a row holds an item id and a score, each at most
# the csv module's field limit (131,072 characters by default). A longer line, or a file
# without line breaks, is refused after this much, never read whole.
MAX_LINE_CHARS = 1 << 20


def read_answers_csv(path: Path, *, feed: Callable[[bytes], object] | None = None
                     ) -> dict[str, float]:
    """``item_id,correct`` rows as item -> score; a UTF-8 byte-order mark (as Excel
    writes) and blank lines are allowed, any other column is refused. An item id's
    surrounding blanks and then one leading ``'`` (the mark `answers_csv` and
    spreadsheets put before ``=``, ``+``, ``-``, ``@``) are not part of it.

    The file is opened once (without blocking: a pipe or device is refused, not waited
    on) and read in one pass, line by line; `feed`, if given, is called with every block
    of bytes read, in order: at the end it has seen exactly the bytes parsed (for a
    fingerprint of them, `hashlib.sha256().update`).

    Raises
    ------
    DataError
        One line naming the file (and the line): no regular file, not UTF-8, a line
        over `MAX_LINE_CHARS` characters (a file without line breaks is not read whole),
        a cell over the csv module's field limit (131,072 characters by default), a
        wrong header or row.
    """
    with closing(_rows(path, feed)) as rows:  # the file closes on any error
        return _values(path, rows)


def _values(path: Path, rows: Iterator[tuple[int, list[str]]]) -> dict[str, float]:
    """`read_answers_csv`'s checks of the header and each row."""
    values: dict[str, float] = {}
    header = [c.strip() for c in next(rows, (0, []))[1]]
    if header != list(HEADER):
        extra = (f" (it has {', '.join(map(repr, header))}; remove the other columns)"
                 if header[:2] == list(HEADER) else "")
        raise DataError(f"{path}: the first line must be the header item_id,correct{extra}")
    for line, row in rows:
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != 2:
            shown = ",".join(row)
            shown = shown if len(shown) <= 200 else shown[:200] + "..."
            raise DataError(f"{path}, line {line}: expected item_id,correct, got "
                            f"{len(row)} cell(s) {shown!r}")
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
            raise DataError(f"{path}, line {line}, column correct: {row[1][:100]!r} is not a "
                            "number in [0, 1]") from None
        if not 0.0 <= value <= 1.0:
            raise DataError(f"{path}, line {line}, column correct: {value} is not in [0, 1]")
        if item in values:
            raise DataError(f"{path}, line {line}: item {item[:200]!r} appears twice; keep "
                            "one row per item")
        values[item] = value
    return values


def _rows(path: Path, feed: Callable[[bytes], object] | None
          ) -> Iterator[tuple[int, list[str]]]:
    """(line number, cells) of each CSV record of `path`, streamed (see
    `read_answers_csv`); every error is a one-line DataError."""
    try:  # O_NONBLOCK: opening a pipe must not wait for a writer (it is refused below)
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        reason = missing_reason(path) if not path.exists() else exc.strerror
        raise DataError(f"{path}: {reason}; pass a CSV file item_id,correct") from None
    raw = io.FileIO(descriptor, "rb", closefd=True)
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        raw.close()
        raise DataError(f"{path}: {not_a_file(path)}; pass a CSV file item_id,correct")
    reader = csv.reader(())
    lines = 0

    def text_lines(handle: io.TextIOWrapper) -> Iterator[str]:
        nonlocal lines
        # readline(limit) holds at most `limit` characters of a line, however long
        for text in iter(partial(handle.readline, MAX_LINE_CHARS + 1), ""):
            lines += 1
            if len(text) > MAX_LINE_CHARS:
                raise DataError(f"{path}, line {lines}: longer than {MAX_LINE_CHARS:,} "
                                "characters, not a row item_id,correct; pass a CSV file "
                                "item_id,correct")
            yield text

    # utf-8-sig: the byte-order mark is not part of the first column's name
    with io.TextIOWrapper(io.BufferedReader(_Fed(raw, feed)), encoding="utf-8-sig",
                          newline="") as handle:
        try:
            reader = csv.reader(text_lines(handle))
            for row in reader:
                yield reader.line_num, row
        except csv.Error as exc:
            limit = csv.field_size_limit()
            if "field larger than field limit" in str(exc):
                raise DataError(f"{path}, line {reader.line_num}: a cell is longer than "
                                f"{limit:,} characters (Python's csv field limit), not an "
                                "item id or a score; pass a CSV file item_id,correct"
                                ) from None
            raise DataError(f"{path}, line {reader.line_num}: not CSV ({exc}); pass a CSV "
                            "file item_id,correct") from None
        except OSError as exc:
            raise DataError(f"{path}: cannot read it ({exc.strerror})") from None
        except UnicodeDecodeError as exc:
            raise DataError(f"{path}: byte {exc.start} is not UTF-8; save the file as UTF-8"
                            ) from None


class _Fed(io.RawIOBase):
    """A raw binary file that hands every block it reads to `feed` as well."""

    def __init__(self, raw: io.FileIO, feed: Callable[[bytes], object] | None) -> None:
        super().__init__()
        self._raw, self._feed = raw, feed

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        count = self._raw.readinto(buffer) or 0
        if self._feed is not None and count:
            self._feed(bytes(memoryview(buffer)[:count]))
        return count

    def close(self) -> None:
        self._raw.close()
        super().close()


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


# The largest batch file read: an adaptive batch names at most every item of a dataset.
BATCH_MAX_BYTES = 16 << 20


def is_batch_file(path: Path) -> bool:
    """Whether `path` is one of an adaptive test's files that name its pending batch:
    ``STATE.items.txt``, ``STATE.samples.json`` (lm-eval's ``{task: [doc indices]}``, a
    JSON object without a ``format``) or the state itself (``mdad-adaptive/...``); a
    micro-benchmark file is not."""
    import json

    if Path(path).suffix == ".txt":
        return True
    try:
        data = json.loads(_read_batch(path).decode("utf-8-sig"))
    except (DataError, UnicodeDecodeError, ValueError, RecursionError):
        return False  # too large for a batch, or no JSON: not one
    return isinstance(data, dict) and (
        "format" not in data or str(data["format"]).startswith("mdad-adaptive/"))


def batch_items(path: Path, item_ids: list[str], lm_eval_task: str | None) -> list[str]:
    """The dataset item ids that an adaptive test's batch file names (`is_batch_file`):
    the state's pending batch, the lines of ``STATE.items.txt``, or the ``task/doc``
    names of ``STATE.samples.json`` mapped to the dataset's ids.

    Parameters
    ----------
    path : the batch file (a regular file of at most `BATCH_MAX_BYTES`).
    item_ids : the dataset's item ids, in its order.
    lm_eval_task : the dataset's lm-eval task, for item ids that are doc numbers.

    Raises
    ------
    DataError
        For a file too large, malformed, or naming items the dataset lacks.
    """
    import json

    from mdad.practice.bundle import lm_eval_ids

    raw = _read_batch(path)
    if Path(path).suffix == ".txt":
        wanted = [line.strip() for line in raw.decode("utf-8", "replace").splitlines()
                  if line.strip()]
        names = wanted
    else:
        try:
            data = json.loads(raw.decode("utf-8-sig"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            data = None
        if not isinstance(data, dict):
            raise DataError(f"{path}: no adaptive test's batch (a JSON object)",
                            parameters=("items",))
        if "format" in data:
            from mdad.practice.adaptive import AdaptiveTest

            wanted = names = list(AdaptiveTest.load(path).pending)
        else:
            if not all(isinstance(docs, list) and all(
                    isinstance(d, int) and not isinstance(d, bool) for d in docs)
                    for docs in data.values()):
                raise DataError(f"{path}: an lm-eval samples file maps each task to a list "
                                "of doc indices; this one does not", parameters=("items",))
            lm_names = lm_eval_ids(item_ids, lm_eval_task)  # None: the dataset has none
            by_name = dict(zip(lm_names, item_ids, strict=True)) if lm_names else {}
            names = [f"{task}/{doc}" for task, docs in data.items() for doc in docs]
            wanted = [by_name.get(name, name) for name in names]
    known = set(item_ids)
    absent = [name for name, item in zip(names, wanted, strict=True) if item not in known]
    if absent or not wanted:
        raise DataError(f"{path}: {len(absent)} of the batch's {len(wanted)} items are not "
                        f"this dataset's (e.g. {absent[0]!r}); give the dataset the adaptive "
                        "test was started on" if absent else f"{path}: the batch is empty",
                        parameters=("items",))
    return wanted


def _read_batch(path: Path) -> bytes:
    """At most `BATCH_MAX_BYTES` + 1 bytes of `path`, opened without blocking and
    checked on that descriptor: a pipe swapped in after a check would wait forever."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise DataError(f"{path}: cannot be read ({exc.strerror})",
                        parameters=("items",)) from None
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise DataError(f"{path}: not a regular file; pass the batch file itself",
                            parameters=("items",))
        raw = handle.read(BATCH_MAX_BYTES + 1)
    if len(raw) > BATCH_MAX_BYTES:
        raise DataError(f"{path}: over {BATCH_MAX_BYTES >> 20} MiB, more than any batch",
                        parameters=("items",))
    return raw
