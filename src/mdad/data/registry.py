"""Named datasets, the data search path, and loading any results path."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mdad.data.matrix import ResponseMatrix
from mdad.data.missing import MissingPolicy, MissingReport, resolve_missing
from mdad.data.wide_csv import load_wide_csv
from mdad.errors import DataError


@dataclass(frozen=True)
class DatasetSpec:
    """A dataset known by name: where its file lives under a data root, how to read it,
    and the study defaults that fit its size (the paper's grid for GPQA)."""

    name: str
    relative_path: str
    description: str
    read_options: dict[str, Any] = field(default_factory=dict)
    sizes: tuple[int, ...] | None = None
    n_sources: int | None = None
    n_targets: int | None = None
    # The lm-evaluation-harness task whose doc_id is the item id, and its metric.
    lm_eval_task: str | None = None
    lm_eval_metric: str = "acc"


DATASETS: dict[str, DatasetSpec] = {
    spec.name: spec
    for spec in (
        DatasetSpec(
            "gpqa",
            "open-llm-leaderboard-v2/gpqa_main.csv",
            "GPQA main (448 items) x 420 Open LLM Leaderboard v2 models, acc_norm",
            {"orientation": "items-as-rows", "subtask_column": "subset"},
            sizes=(10, 25, 50, 100, 200),
            lm_eval_task="leaderboard_gpqa_main",
            lm_eval_metric="acc_norm",
        ),
        DatasetSpec(
            "mmlu-pro-29",
            "mmlu-pro-tiger-lab/mmlu_pro_29_models.csv",
            "MMLU-Pro (12,032 items, 14 categories) x 29 models, 5-shot CoT (TIGER-Lab)",
            {"orientation": "items-as-rows", "item_column": "question_id",
             "subtask_column": "category"},
            n_sources=19,
            n_targets=10,
        ),
    )
}


def data_search_path() -> list[Path]:
    """Folders searched for named datasets, in order.

    ``MDAD_DATA`` (several folders separated by ``os.pathsep``), then ``../shared/data``
    beside the source checkout and beside the working directory, then the user cache
    folder (``$XDG_CACHE_HOME/mdad`` or ``~/.cache/mdad``).
    """
    roots: list[Path] = []
    if env := os.environ.get("MDAD_DATA"):
        roots.extend(Path(p).expanduser() for p in env.split(os.pathsep) if p)
    checkout = Path(__file__).resolve().parents[3]
    roots.append(checkout.parent / "shared" / "data")
    roots.append(Path.cwd().parent / "shared" / "data")
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mdad"
    roots.append(cache)
    unique: list[Path] = []
    for root in roots:
        if root not in unique:
            unique.append(root)
    return unique


def find_dataset_file(spec: DatasetSpec) -> Path:
    """The first existing copy of a named dataset's file on the search path."""
    roots = data_search_path()
    for root in roots:
        candidate = root / spec.relative_path
        if candidate.is_file():
            return candidate
    looked = ", ".join(str(r) for r in roots)
    raise DataError(
        f"dataset {spec.name!r}: {spec.relative_path} not found under {looked}; "
        "set MDAD_DATA to the folder that holds it, or pass the file's path instead"
    )


def read_results(path: str | Path, **options: Any) -> ResponseMatrix:
    """Read a results file or folder, choosing the reader by what it is.

    A ``.csv`` file is a wide CSV; a folder with ``*_models-by-correctness_combined.npy``
    (or such a ``.npy`` file) holds the paper's cached arrays; any other folder, or a
    ``.jsonl`` file, is lm-evaluation-harness ``--log_samples`` output.
    Keyword options go to the reader that accepts them (``orientation``,
    ``item_column``, ``subtask_column`` for CSV; ``metric`` for lm-eval samples).
    """
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file or folder")
    csv_keys = ("orientation", "item_column", "subtask_column", "meta_columns")
    if path.is_file() and path.suffix.lower() in (".csv", ".txt"):
        return load_wide_csv(path, **{k: v for k, v in options.items()
                                      if k in csv_keys and v is not None})
    if path.suffix == ".npy" or (
        path.is_dir() and any(path.glob("*_models-by-correctness_combined.npy"))
    ):
        from mdad.data.paper_arrays import load_paper_arrays

        return load_paper_arrays(path)
    if path.is_dir() or path.suffix == ".jsonl":
        from mdad.data.lm_eval import load_lm_eval_samples

        metric = options.get("metric") or "acc"
        return load_lm_eval_samples(path, metric=metric)
    raise DataError(
        f"{path}: unknown results format; expected a .csv file, a .jsonl file, "
        "an lm-eval --log_samples folder or the paper's .npy arrays"
    )


def locate(name_or_path: str | Path) -> tuple[Path, DatasetSpec | None]:
    """The file behind a dataset name or path, and its spec when it is a named one."""
    key = str(name_or_path)
    if (spec := DATASETS.get(key)) is not None:
        return find_dataset_file(spec), spec
    path = Path(key).expanduser()
    if not path.exists():
        known = ", ".join(sorted(DATASETS))
        raise DataError(
            f"{key!r} is neither a known dataset ({known}) nor an existing file or folder"
        )
    return path, None


@dataclass(frozen=True)
class Dataset:
    """A loaded, complete matrix, where it came from, and what loading removed."""

    name: str
    matrix: ResponseMatrix
    path: Path
    missing: MissingReport
    spec: DatasetSpec | None = None


def load_dataset(
    name_or_path: str | Path,
    *,
    missing: MissingPolicy | str = MissingPolicy.DROP_ITEMS,
    **options: Any,
) -> Dataset:
    """Load a named dataset (``gpqa``, ``mmlu-pro-29``) or a results path.

    The missing-data policy is applied (see `resolve_missing`) and reported in the
    returned `Dataset`, never silently.

    Raises
    ------
    DataError
        When the name is unknown and no such path exists, or the file is unusable.
    """
    if str(name_or_path).startswith("synthetic:"):
        return _load_synthetic(str(name_or_path), missing, **options)
    path, spec = locate(name_or_path)
    read_options = {**spec.read_options, **options} if spec else options
    matrix = read_results(path, **read_options)
    name = spec.name if spec else (path.stem if path.is_file() else path.name)
    complete, report = resolve_missing(matrix, missing)
    return Dataset(name=name, matrix=complete, path=path, missing=report, spec=spec)


def _load_synthetic(name: str, missing: MissingPolicy | str, *, models: int = 420,
                    data_seed: int = 0, **_: Any) -> Dataset:
    """A `synthetic:<shape>` dataset (see `mdad.data.synthetic`); it has no missing
    cells and no file."""
    from mdad.data.synthetic import PREFIX, synthetic_matrix

    shape = name.removeprefix(PREFIX)
    matrix = synthetic_matrix(shape, n_models=models, seed=data_seed)
    complete, report = resolve_missing(matrix, missing)
    spec = DatasetSpec(name, "", f"synthetic {shape}",
                       sizes=DATASETS["gpqa"].sizes if shape == "gpqa" else None)
    return Dataset(name=name, matrix=complete, path=Path(name), missing=report, spec=spec)
