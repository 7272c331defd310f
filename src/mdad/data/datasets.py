"""Datasets known by name: where their files live on the data search path, how to read
them, and the study defaults that fit them."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    # The lm-evaluation-harness task whose doc_id is the item id, and its metric: the
    # metric the file's scores are.
    lm_eval_task: str | None = None
    lm_eval_metric: str = "acc"
    # Where the file comes from, and how to get it where the search path lacks it.
    provenance: str = ""
    source: str = ""


DATASETS: dict[str, DatasetSpec] = {
    spec.name: spec
    for spec in (
        DatasetSpec(
            "gpqa",
            "open-llm-leaderboard-v2/gpqa_main.csv",
            "GPQA main (448 items) x 420 Open LLM Leaderboard v2 models, acc_norm",
            {"orientation": "items-as-rows", "subtask_column": "subset",
             "meta_columns": ("subtask_range",)},
            sizes=(10, 25, 50, 100, 200),
            lm_eval_task="leaderboard_gpqa_main",
            lm_eval_metric="acc_norm",
            provenance="the paper's GPQA matrix, from the Open LLM Leaderboard v2 details "
                       "(GitHub mpg05883/micro-benchmarking-reliability, MIT)",
            source="notebooks/data/gpqa/model_scores.csv of GitHub "
                   "mpg05883/micro-benchmarking-reliability; or pull the same benchmark "
                   "from the Hub: mdad data pull leaderboard gpqa (leaderboard:gpqa)",
        ),
        DatasetSpec(
            "mmlu-pro-29",
            "mmlu-pro-tiger-lab/mmlu_pro_29_models.csv",
            "MMLU-Pro (12,032 items, 14 categories) x 29 models, 5-shot CoT (TIGER-Lab)",
            {"orientation": "items-as-rows", "item_column": "question_id",
             "subtask_column": "category", "meta_columns": ("src",)},
            n_sources=19,
            n_targets=10,
            provenance="29 of the 48 5-shot CoT runs the MMLU-Pro authors published "
                       "(GitHub TIGER-AI-Lab/MMLU-Pro, Apache-2.0)",
            source="eval_results/model_outputs_*_5shots.zip of GitHub TIGER-AI-Lab/MMLU-Pro, "
                   "one 0/1 column per model, rows keyed by question_id; or pull "
                   "leaderboard:mmlu-pro: mdad data pull leaderboard mmlu-pro",
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
    roots.append(cache_folder())
    unique: list[Path] = []
    for root in roots:
        if root not in unique:
            unique.append(root)
    return unique


def cache_folder() -> Path:
    """The user's data cache, last on the search path: ``$XDG_CACHE_HOME/mdad`` or
    ``~/.cache/mdad`` (where ``mdad data pull`` writes by default)."""
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mdad"


def find_dataset_file(spec: DatasetSpec) -> Path:
    """The first existing copy of a named dataset's file on the search path.

    Raises
    ------
    DataError
        When no folder on the search path holds it.
    """
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


def known_names() -> str:
    """The dataset names an error offers: the named ones, and the families of names
    that `mdad data list` spells out."""
    return ", ".join([*sorted(DATASETS), "synthetic:NAME, leaderboard:NAME; mdad data list "
                      "names them"])


def locate(name_or_path: str | Path) -> tuple[Path, DatasetSpec | None]:
    """The file behind a dataset name or path, and its spec when it is a named one.

    Raises
    ------
    DataError
        When `name_or_path` is neither a known name nor an existing file or folder.
    """
    key = str(name_or_path)
    if (spec := DATASETS.get(key)) is not None:
        return find_dataset_file(spec), spec
    path = Path(key).expanduser()
    if not path.exists():
        raise DataError(
            f"{key!r} is neither a known dataset ({known_names()}) nor an existing file or "
            "folder"
        )
    return path, None
