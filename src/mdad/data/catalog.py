"""The datasets known by name: where each was found on the data search path, its shape
and provenance, and how to get the ones that are missing (`mdad data list`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mdad.data.datasets import DATASETS, data_search_path
from mdad.errors import DataError


@dataclass(frozen=True)
class CatalogEntry:
    """One named dataset.

    Attributes
    ----------
    name : what `load_dataset` and the CLI take (``gpqa``, ``synthetic:bbh``,
        ``leaderboard:bbh``).
    description : what it holds.
    provenance : where its answers come from.
    path : the file or folder found on the data search path; None when missing. For a
        synthetic dataset, the real dataset it is calibrated on.
    shape : models x items and subtasks ("" when missing).
    get : how to get it when missing ("" when found).
    """

    name: str
    description: str
    provenance: str
    path: Path | None
    shape: str
    get: str


def catalog() -> list[CatalogEntry]:
    """Every named dataset, in the order `mdad data list` shows them: the files, the
    synthetic shapes, then the Open LLM Leaderboard benchmarks `mdad data pull` makes.
    Reads each file found (about a second for MMLU-Pro's 12,032 rows), never the
    network."""
    entries = [_named(name) for name in DATASETS]
    found = {entry.name: entry for entry in entries}
    from mdad.data.synthetic import CALIBRATED_ON, PREFIX

    entries += [_synthetic(PREFIX + shape, found[real]) for shape, real in CALIBRATED_ON.items()]
    from mdad.data.leaderboard import BENCHMARKS

    return entries + [_pulled(bench) for bench in BENCHMARKS]


def _named(name: str) -> CatalogEntry:
    from mdad.data.info import describe
    from mdad.data.registry import read_dataset

    spec = DATASETS[name]
    path = _first(spec.relative_path)
    if path is None:
        return CatalogEntry(name, spec.description, spec.provenance, None, "",
                            f"put {spec.relative_path} under a folder on the data search "
                            f"path (or set MDAD_DATA to one that holds it); its source: "
                            f"{spec.source}")
    info = describe(read_dataset(name).matrix)
    return CatalogEntry(name, spec.description, spec.provenance, path,
                        _shape(info.n_models, info.n_items, len(info.subtask_sizes)), "")


def _synthetic(name: str, real: CatalogEntry) -> CatalogEntry:
    from mdad.data.synthetic import subtask_shape
    from mdad.data.synthetic_loader import DEFAULT_MODELS

    shape = name.split(":", 1)[1]
    description = f"a leaderboard of the shape of {shape}, drawn from an IRT fit"
    provenance = f"simulated: a 5-D IRT model fitted on {real.name}"
    if real.path is None:
        return CatalogEntry(name, description, provenance, None, "",
                            f"needs {real.name}, which it is calibrated on: {real.get}")
    subtasks, items, _ = subtask_shape(shape, _FoundFiles())  # type: ignore[arg-type]
    return CatalogEntry(name, description, provenance, real.path,
                        f"{_shape(DEFAULT_MODELS, sum(items), len(subtasks))} "
                        "(--models sets the models)", "")


def _pulled(bench: str) -> CatalogEntry:
    import numpy as np

    from mdad.data.compact import META, PREFIX, read_metadata

    name = PREFIX + bench
    folder = _first(f"leaderboard/{bench}/{META}")
    description = f"{bench} of the Open LLM Leaderboard v2, pulled by mdad data pull"
    provenance = "the leaderboard's details repos on the Hugging Face Hub"
    if folder is None:
        return CatalogEntry(name, description, provenance, None, "",
                            f"mdad data pull leaderboard {bench} (the Hugging Face Hub)")
    folder = folder.parent
    try:
        meta = read_metadata(folder)
        n_models, n_items = np.load(folder / "correctness.npy", mmap_mode="r").shape
    except (DataError, OSError, ValueError) as exc:
        return CatalogEntry(name, description, provenance, folder, "",
                            f"unreadable ({exc}); pull it again: mdad data pull "
                            f"leaderboard {bench}")
    subtasks = len(set(meta.get("subtasks") or [])) or None  # one name per item
    return CatalogEntry(name, description, provenance, folder,
                        _shape(n_models, n_items, subtasks), "")


class _FoundFiles:
    """The named datasets' files, for `subtask_shape`, which reads files, no matrix."""

    @staticmethod
    def path(name: str) -> Path:
        return _first(DATASETS[name].relative_path) or Path(DATASETS[name].relative_path)


def _first(relative: str) -> Path | None:
    """The first existing ``root / relative`` on the data search path."""
    for root in data_search_path():
        if (root / relative).exists():
            return root / relative
    return None


def _shape(models: int, items: int, subtasks: int | None) -> str:
    shown = f"{models:,} models x {items:,} items"
    if subtasks is not None:
        shown += f", {subtasks} subtask{'s' if subtasks != 1 else ''}"
    return shown
