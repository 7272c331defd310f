"""The cached NumPy arrays of Yauney et al. (ICLR 2026), one set per benchmark prefix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from mdad.data.files import files_sha256
from mdad.data.loader import FileLoader
from mdad.data.matrix import ResponseMatrix
from mdad.errors import DataError

CORRECTNESS = "_models-by-correctness_combined.npy"
CONFIDENCE = "_models-by-confidence_combined.npy"
LABELS = "_labels_combined.npy"
RANGES = "_subtask-idx-ranges.json"
SUBTASKS = "_subtasks.json"
MODEL_NAMES = "_model-names.json"
SUFFIXES = (CORRECTNESS, CONFIDENCE, LABELS, RANGES, SUBTASKS, MODEL_NAMES)
_GATHER_CELLS = 1 << 22  # models x items gathered per chunk


def _locate(path: Path) -> tuple[Path, str]:
    """The directory and the benchmark prefix that `path` designates."""
    if path.is_file():
        for suffix in SUFFIXES:
            if path.name.endswith(suffix) and len(path.name) > len(suffix):
                return path.parent, path.name[: -len(suffix)]
        raise DataError(f"{path}: not one of the paper's files (<bench>{CORRECTNESS}, "
                        f"<bench>{LABELS}, ...); pass the directory or one of those files")
    if not path.is_dir():
        raise DataError(f"{path}: no such file or directory")
    prefixes = sorted({
        f.name[: -len(suffix)] for f in path.iterdir() for suffix in SUFFIXES
        if f.name.endswith(suffix) and len(f.name) > len(suffix)
    })
    if len(prefixes) != 1:
        found = ", ".join(prefixes) if prefixes else "none"
        raise DataError(f"{path}: expected the arrays of exactly one benchmark, found prefixes: "
                        f"{found}; pass one of its files, e.g. <bench>{CORRECTNESS}")
    return path, prefixes[0]


def _load_npy(path: Path, *, mmap: bool = False) -> np.ndarray:
    try:
        return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise DataError(f"{path}: not a readable .npy array ({exc}); re-export it with "
                        "numpy.save") from None


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: not valid JSON ({exc}); fix the file") from None


def _names(path: Path, expected: int | None, what: str) -> list[str]:
    names = _load_json(path)
    if not isinstance(names, list) or (expected is not None and len(names) != expected):
        got = f"{len(names)}" if isinstance(names, list) else f"a {type(names).__name__}"
        count = "" if expected is None else f"{expected} "
        raise DataError(f"{path}: expected a JSON list of {count}{what}, got {got}; "
                        "fix the list or remove the file")
    return [str(n) for n in names]


def _subtask_of_items(path: Path, n_items: int, names: list[str] | None) -> np.ndarray:
    """Subtask name of each item, from [start, end) ranges that tile 0..n_items in order."""
    ranges = _load_json(path)
    hint = f"the ranges must be [start, end) pairs that tile 0..{n_items} in order; fix the file"
    if not isinstance(ranges, list) or not ranges:
        raise DataError(f"{path}: expected a JSON list of [start, end] ranges; {hint}")
    bounds = [0]
    for k, pair in enumerate(ranges):
        ok = (isinstance(pair, list) and len(pair) == 2
              and all(isinstance(v, int) and not isinstance(v, bool) for v in pair))
        if not ok or pair[0] != bounds[-1] or pair[1] < pair[0]:
            raise DataError(f"{path}: range {k} is {pair!r} (expected to start at "
                            f"{bounds[-1]}); {hint}")
        bounds.append(pair[1])
    if bounds[-1] != n_items:
        raise DataError(f"{path}: the ranges end at {bounds[-1]}, not at {n_items}; {hint}")
    if names is not None and len(names) != len(ranges):
        raise DataError(f"{path}: {len(ranges)} ranges but {len(names)} subtask names; "
                        "give one name per range")
    if names is None:
        names = [f"subtask_{k}" for k in range(len(ranges))]
    return np.repeat(np.asarray(names, dtype=str), np.diff(bounds))


def _gold_labels(path: Path, n_items: int, n_options: int) -> np.ndarray:
    labels = _load_npy(path)
    if labels.shape != (n_items,):
        raise DataError(f"{path}: shape {labels.shape}, expected ({n_items},) for {n_items} "
                        "items; the arrays do not belong together")
    if not np.issubdtype(labels.dtype, np.number):
        raise DataError(f"{path}: dtype {labels.dtype} is not numeric; store option indices")
    bad = ~np.isfinite(labels) | (labels != np.round(labels)) | (labels < 0) | (labels >= n_options)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(f"{path}: label of item {i} is {labels[i].item()!r}; labels must be option "
                        f"indices 0..{n_options - 1}")
    return labels.astype(np.int64)


def _gather_gold(confidence: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """confidence[m, i, labels[i]] as float32, reading a chunk of models at a time."""
    n_models, n_items = confidence.shape[:2]
    out = np.empty((n_models, n_items), dtype=np.float32)
    index = labels[None, :, None]
    step = max(1, _GATHER_CELLS // max(n_items, 1))
    for lo in range(0, n_models, step):
        chunk = np.take_along_axis(confidence[lo:lo + step], index, axis=2)
        out[lo:lo + step] = chunk[:, :, 0]
    return out


def load_paper_arrays(path: str | Path) -> ResponseMatrix:
    """Read the paper's cached arrays for one benchmark.

    Parameters
    ----------
    path : str or Path
        The directory holding the files of exactly one benchmark prefix ``<bench>``,
        or any one of those files:

        - ``<bench>_models-by-correctness_combined.npy``: (n_models, n_items), 0/1;
        - ``<bench>_models-by-confidence_combined.npy``: (n_models, n_items, n_options),
          each model's normalised probability per option (optional);
        - ``<bench>_labels_combined.npy``: (n_items,), gold option index, integer or
          integral float (needed with the confidence file);
        - ``<bench>_subtask-idx-ranges.json``: [start, end) item ranges, one per subtask;
        - ``<bench>_subtasks.json``, ``<bench>_model-names.json``: optional names.

    Returns
    -------
    ResponseMatrix
        Item ids are positions ``"0"``, ``"1"``, ...; subtasks are the names from
        ``_subtasks.json`` or ``subtask_0``, ...; models are named from
        ``_model-names.json`` or ``model_0000``, .... `confidence` is the gold option's
        probability, float32 of shape (n_models, n_items), or None without the
        confidence file. The 3-D tensor is memory-mapped and gathered in chunks.

    Raises
    ------
    DataError
        Naming the file: an ambiguous directory, a missing required file, shapes
        that disagree, ranges that do not tile the items, labels out of range.
    """
    path = Path(path)
    directory, bench = _locate(path)
    file = {suffix: directory / f"{bench}{suffix}" for suffix in SUFFIXES}
    for required in (CORRECTNESS, RANGES):
        if not file[required].is_file():
            raise DataError(f"{directory}: no {file[required].name}; the paper's arrays need "
                            f"{bench}{CORRECTNESS} and {bench}{RANGES}")
    used = [file[CORRECTNESS], file[RANGES]]
    correctness = _load_npy(file[CORRECTNESS])
    if correctness.ndim != 2:
        raise DataError(f"{file[CORRECTNESS]}: shape {correctness.shape}; expected a 2-D "
                        "models x items array")
    n_models, n_items = correctness.shape
    names = None
    if file[SUBTASKS].is_file():
        names = _names(file[SUBTASKS], None, "subtask names")
        used.append(file[SUBTASKS])
    subtasks = _subtask_of_items(file[RANGES], n_items, names)
    models = [f"model_{m:04d}" for m in range(n_models)]
    if file[MODEL_NAMES].is_file():
        models = _names(file[MODEL_NAMES], n_models, "model names")
        used.append(file[MODEL_NAMES])
    gold = None
    if file[CONFIDENCE].is_file():
        confidence = _load_npy(file[CONFIDENCE], mmap=True)
        if confidence.ndim != 3 or confidence.shape[:2] != correctness.shape:
            raise DataError(f"{file[CONFIDENCE]}: shape {confidence.shape}, expected "
                            f"({n_models}, {n_items}, n_options) to match {file[CORRECTNESS].name}")
        if not file[LABELS].is_file():
            raise DataError(f"{directory}: {file[CONFIDENCE].name} needs {file[LABELS].name} "
                            "(the gold option of each item); add it or remove the confidences")
        labels = _gold_labels(file[LABELS], n_items, confidence.shape[2])
        gold = _gather_gold(confidence, labels)
        used.extend([file[CONFIDENCE], file[LABELS]])
    return ResponseMatrix(
        correctness, models, [str(i) for i in range(n_items)],
        subtasks, gold, source=str(path), sha256=files_sha256(used, directory),
    )


def holds_paper_arrays(path: Path) -> bool:
    """A ``.npy`` file, or a folder with a ``<bench>_models-by-correctness_combined.npy``."""
    return path.suffix == ".npy" or (path.is_dir() and any(path.glob(f"*{CORRECTNESS}")))


LOADER = FileLoader(
    name="paper-arrays",
    reads="the paper's .npy arrays",
    options=(),
    recognise=holds_paper_arrays,
    read=load_paper_arrays,
)
