"""A compact dataset folder: one correctness byte and one float32 confidence per cell.

``mdad data pull`` writes one (`write_compact`); `LOADER` reads it by path and
`LeaderboardLoader` by name (``leaderboard:<bench>``, found under ``leaderboard/<bench>``
on the data search path). The folder holds:

- ``correctness.npy``: uint8, models x items, 0/1 (255: no result; partial credit is
  stored as float32 instead);
- ``confidence.npy``: float32, the gold option's softmax probability (NaN: unknown),
  absent when no cell has one;
- ``mdad-compact.json``: format, model names, item ids (``task/doc_id``), subtasks,
  the metric, and the provenance of every model (written last: a folder without it is
  not a dataset).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from mdad.data.datasets import DatasetSpec, data_search_path
from mdad.data.loader import FileLoader
from mdad.data.matrix import ResponseMatrix
from mdad.errors import ConfigError, DataError
from mdad.safe_io import make_staging, remove_stale_staging

META = "mdad-compact.json"
FORMAT = "mdad-compact/1"
MISSING = 255
FILES = (META, "correctness.npy", "confidence.npy")  # all a dataset folder holds
PREFIX = "leaderboard:"


def check_replaceable(folder: Path, parameter: str = "folder") -> None:
    """Refuse a `folder` that `write_compact` must not replace: a file, or a folder
    holding anything but a compact dataset's own files (`FILES`): replacing it would
    delete the others.

    Raises
    ------
    ConfigError
        Naming `parameter` and the first other entries.
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{parameter} {folder} is a file; give a folder for the dataset",
                          parameters=(parameter,))
    others = _other_entries(folder)
    if (not others and not folder.is_symlink() and folder.is_dir()
            and not (folder / META).is_file()):
        others = sorted(entry.name for entry in folder.iterdir())  # files not of mdad's
    if others:
        from mdad.data.files import listed

        what = (f"holds files that are not an mdad dataset's ({listed(others)})"
                if (folder / META).is_file() else f"is not an mdad dataset (no {META})")
        raise ConfigError(f"{parameter} {folder} {what}, which writing the dataset would "
                          "delete; give a new or empty folder, or move them out",
                          parameters=(parameter,))


def _other_entries(folder: Path) -> list[str]:
    """The entries of `folder` (if it is one) that are not a dataset's regular files."""
    if folder.is_symlink() or not folder.is_dir():
        return []
    return sorted(entry.name for entry in folder.iterdir()
                  if entry.name not in FILES or entry.is_symlink() or not entry.is_file())


def write_compact(folder: Path, matrix: ResponseMatrix, metadata: dict[str, Any]) -> Path:
    """Write `matrix` and `metadata` (merged into the JSON) to `folder`, replacing it
    whole: the new folder is staged beside it and renamed into place.

    Raises
    ------
    ConfigError
        When `folder` is a file or a folder of other files (`check_replaceable`).
    """
    folder = Path(folder)
    check_replaceable(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(folder)
    staging = make_staging(folder)
    try:
        values = np.asarray(matrix.correctness, dtype=np.float32)
        missing = np.isnan(values)
        binary = np.isin(values[~missing], (0.0, 1.0)).all()
        if binary:
            stored = np.where(missing, MISSING, values).astype(np.uint8)
        else:
            stored = values
        np.save(staging / "correctness.npy", stored)
        if matrix.confidence is not None:
            np.save(staging / "confidence.npy", np.asarray(matrix.confidence, np.float32))
        meta = {**metadata, "format": FORMAT, "models": matrix.model_names.tolist(),
                "items": matrix.item_ids.tolist(),
                "subtasks": [str(matrix.subtask_names[c]) for c in matrix.subtask_codes]}
        (staging / META).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
        if folder.is_symlink():  # the link goes, never what it points to
            folder.unlink()
        elif folder.exists():
            check_replaceable(folder)  # again: nothing but the dataset's files goes
            for name in FILES:
                (folder / name).unlink(missing_ok=True)
            folder.rmdir()
        os.replace(staging, folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return folder


def read_metadata(folder: Path) -> dict[str, Any]:
    """The folder's ``mdad-compact.json``.

    Raises
    ------
    DataError
        When it is missing, not JSON, or of another format.
    """
    path = Path(folder) / META
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"{folder}: no {META}; pull the dataset again") from None
    except ValueError as exc:
        raise DataError(f"{path}: not valid JSON ({exc}); pull the dataset again") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise DataError(f"{path}: not a {FORMAT} dataset; pull it again with this mdad")
    return meta


def load_compact(folder: Path) -> ResponseMatrix:
    """The matrix of a compact dataset folder (see the module docstring)."""
    folder = Path(folder)
    meta = read_metadata(folder)
    try:
        stored = np.load(folder / "correctness.npy", allow_pickle=False)
        confidence = (np.load(folder / "confidence.npy", allow_pickle=False)
                      if (folder / "confidence.npy").is_file() else None)
    except (OSError, ValueError) as exc:
        raise DataError(f"{folder}: cannot read its arrays ({exc}); pull it again") from None
    models, items, subtasks = meta.get("models"), meta.get("items"), meta.get("subtasks")
    if not (isinstance(models, list) and isinstance(items, list)
            and isinstance(subtasks, list) and len(items) == len(subtasks)
            and stored.shape == (len(models), len(items))
            and (confidence is None or confidence.shape == stored.shape)):
        raise DataError(f"{folder}: its arrays and {META} disagree in shape; pull it again")
    if stored.dtype == np.uint8:
        correctness = (np.where(stored == MISSING, np.nan, stored).astype(np.float32)
                       if (stored == MISSING).any() else stored)
    else:
        correctness = stored.astype(np.float32)
    digest = hashlib.sha256()
    for name in ("correctness.npy", "confidence.npy", META):
        if (folder / name).is_file():
            digest.update((folder / name).read_bytes())
    return ResponseMatrix(correctness, models, items, subtasks, confidence,
                          source=str(folder), sha256=digest.hexdigest())


LOADER = FileLoader(
    name="compact",
    reads=f"a pulled dataset folder (with {META})",
    options=(),
    recognise=lambda path: path.is_dir() and (path / META).is_file(),
    read=load_compact,
)


def leaderboard_folder(name: str) -> Path:
    """The folder of ``leaderboard:<bench>`` on the data search path.

    Raises
    ------
    DataError
        When no folder on the search path holds it.
    """
    bench = name.removeprefix(PREFIX)
    roots = data_search_path()
    for root in roots:
        if (root / "leaderboard" / bench / META).is_file():
            return root / "leaderboard" / bench
    raise DataError(f"dataset {name!r}: not pulled yet (looked under "
                    f"{', '.join(str(r / 'leaderboard') for r in roots)}); run `mdad data pull "
                    f"leaderboard {bench}` first")


@dataclass(frozen=True)
class LeaderboardLoader:
    """``leaderboard:<bench>``: a benchmark pulled from the Open LLM Leaderboard's
    details by ``mdad data pull leaderboard <bench>``. Its `metric` option may only
    repeat the leaderboard's own, which the data holds."""

    name: ClassVar[str] = "leaderboard"
    reads: ClassVar[str] = "a leaderboard:<bench> name"
    options: ClassVar[tuple[str, ...]] = ("metric",)

    def recognises(self, source: str | Path) -> bool:
        return str(source).startswith(PREFIX)

    def load(self, source: str | Path, *, metric: str | None = None) -> ResponseMatrix:
        folder = leaderboard_folder(str(source))
        held = read_metadata(folder).get("metric")
        if metric is not None and metric != held:
            raise ConfigError(f"metric {metric}: {source} holds the leaderboard's {held} "
                              f"scores only; drop metric or set it to {held}",
                              parameters=("metric",))
        return load_compact(folder)

    def dataset_spec(self, source: str | Path) -> DatasetSpec | None:
        folder = leaderboard_folder(str(source))
        return DatasetSpec(str(source), str(folder), f"{source}, pulled",
                           lm_eval_metric=str(read_metadata(folder).get("metric", "acc")))
