"""Writing a compact dataset replaces only a dataset's own files: a folder holding
anything else is refused, and nothing of it is deleted."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mdad.data import ResponseMatrix
from mdad.data.compact import FILES, META, load_compact, write_compact
from mdad.errors import ConfigError


def matrix(n_models: int = 2) -> ResponseMatrix:
    rng = np.random.default_rng(n_models)
    return ResponseMatrix(rng.integers(0, 2, (n_models, 3)).astype(float),
                          [f"m{k}" for k in range(n_models)], ["t/0", "t/1", "t/2"],
                          ["t"] * 3)


def test_a_dataset_folder_is_replaced_whole(tmp_path: Path) -> None:
    folder = tmp_path / "bench"
    write_compact(folder, matrix(2), {"metric": "acc"})
    write_compact(folder, matrix(3), {"metric": "acc"})
    assert load_compact(folder).n_models == 3
    assert {p.name for p in folder.iterdir()} <= set(FILES)


@pytest.mark.parametrize("other", ["notes.txt", "sub/", "link"])
def test_a_dataset_folder_holding_anything_else_is_refused_and_kept(
        tmp_path: Path, other: str) -> None:
    folder = tmp_path / "bench"
    write_compact(folder, matrix(2), {"metric": "acc"})
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    entry = folder / other.rstrip("/")
    if other == "link":
        entry.symlink_to(victim)
    elif other.endswith("/"):
        entry.mkdir()
        (entry / "mine.txt").write_text("keep")
    else:
        entry.write_text("the user's")
    before = sorted(p.name for p in folder.iterdir())
    with pytest.raises(ConfigError, match=rf"holds files that are not an mdad dataset's "
                                          rf"\({entry.name}\).*move them out"):
        write_compact(folder, matrix(3), {"metric": "acc"})
    assert sorted(p.name for p in folder.iterdir()) == before
    assert load_compact(folder).n_models == 2 and victim.read_text() == "keep"


def test_a_folder_without_a_dataset_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "correctness.npy").write_bytes(b"not mdad's")
    with pytest.raises(ConfigError, match=rf"is not an mdad dataset \(no {META}\)"):
        write_compact(folder, matrix(2), {"metric": "acc"})
    assert (folder / "correctness.npy").read_bytes() == b"not mdad's"
