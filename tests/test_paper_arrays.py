"""Tests of the loader of the paper's cached arrays, on fixtures built from the real GPQA matrix."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import shared_data
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from mdad.data import paper_arrays
from mdad.data.files import files_sha256
from mdad.data.paper_arrays import load_paper_arrays
from mdad.errors import DataError

N_MODELS, N_ITEMS, N_OPTIONS = 420, 448, 4


@pytest.fixture(scope="module")
def gpqa():
    """The real GPQA matrix: correctness (models x items), model names, subtask ranges."""
    frame = pd.read_csv(shared_data("open-llm-leaderboard-v2/gpqa_main.csv"))
    assert frame.shape == (N_ITEMS, N_MODELS + 2)
    assert frame.columns[-2:].tolist() == ["subtask_range", "subset"]
    ranges = sorted({tuple(ast.literal_eval(r)) for r in frame["subtask_range"]})
    assert ranges == [(0, N_ITEMS)]
    correctness = frame.iloc[:, :N_MODELS].to_numpy(dtype=np.int8).T
    return correctness, frame.columns[:N_MODELS].tolist(), [list(r) for r in ranges]


def confidences(correctness: np.ndarray, labels: np.ndarray, n_options: int,
                seed: int = 0) -> np.ndarray:
    """Per-option probabilities whose gold option gets more than 0.5 exactly where correct."""
    rng = np.random.default_rng(seed)
    n_models, n_items = correctness.shape
    gold = np.where(correctness == 1, rng.uniform(0.55, 1.0, correctness.shape),
                    rng.uniform(0.0, 0.45, correctness.shape))
    rest = rng.dirichlet(np.ones(n_options - 1), size=(n_models, n_items)) * (1 - gold)[..., None]
    probs = np.empty((n_models, n_items, n_options))
    others = np.ones((n_items, n_options), dtype=bool)
    others[np.arange(n_items), labels] = False
    probs[:, others] = rest.reshape(n_models, -1)
    probs[:, np.arange(n_items), labels] = gold
    return probs


def write_bench(directory: Path, correctness: np.ndarray, ranges: list, *, bench: str = "gpqa",
                probs: np.ndarray | None = None, labels: np.ndarray | None = None,
                subtasks: list | None = None, models: list | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    np.save(directory / f"{bench}_models-by-correctness_combined.npy", correctness)
    (directory / f"{bench}_subtask-idx-ranges.json").write_text(json.dumps(ranges))
    if probs is not None:
        np.save(directory / f"{bench}_models-by-confidence_combined.npy", probs)
    if labels is not None:
        np.save(directory / f"{bench}_labels_combined.npy", labels)
    if subtasks is not None:
        (directory / f"{bench}_subtasks.json").write_text(json.dumps(subtasks))
    if models is not None:
        (directory / f"{bench}_model-names.json").write_text(json.dumps(models))
    return directory


@pytest.fixture(scope="module")
def gpqa_dir(gpqa, tmp_path_factory):
    correctness, _, ranges = gpqa
    labels = np.random.default_rng(1).integers(0, N_OPTIONS, N_ITEMS).astype(np.float64)
    probs = confidences(correctness, labels.astype(int), N_OPTIONS)
    directory = write_bench(tmp_path_factory.mktemp("paper"), correctness, ranges,
                            probs=probs, labels=labels)
    return directory, probs, labels.astype(int)


def test_round_trip(gpqa, gpqa_dir):
    correctness, _, _ = gpqa
    directory, probs, labels = gpqa_dir
    matrix = load_paper_arrays(directory)
    assert (matrix.n_models, matrix.n_items) == (N_MODELS, N_ITEMS)
    np.testing.assert_array_equal(matrix.correctness, correctness)
    gold = probs[:, np.arange(N_ITEMS), labels].astype(np.float32)
    np.testing.assert_array_equal(matrix.confidence, gold)
    assert matrix.confidence.dtype == np.float32
    assert ((matrix.confidence > 0.5) == (correctness == 1)).all()
    assert matrix.model_names[:2].tolist() == ["model_0000", "model_0001"]
    assert matrix.item_ids[[0, -1]].tolist() == ["0", str(N_ITEMS - 1)]
    assert matrix.subtask_names == ("subtask_0",)
    assert matrix.source == str(directory)
    assert matrix.sha256 == files_sha256(sorted(directory.iterdir()), directory)


@pytest.mark.parametrize("suffix", ["_models-by-correctness_combined.npy", "_labels_combined.npy",
                                    "_models-by-confidence_combined.npy",
                                    "_subtask-idx-ranges.json"])
def test_any_file_designates_the_set(gpqa_dir, suffix):
    directory, _, _ = gpqa_dir
    matrix = load_paper_arrays(directory / f"gpqa{suffix}")
    assert matrix.n_items == N_ITEMS and matrix.confidence is not None


def test_names_files_and_two_subtasks(gpqa, tmp_path):
    correctness, models, _ = gpqa
    labels = np.zeros(N_ITEMS, dtype=np.int64)
    probs = np.zeros((N_MODELS, N_ITEMS, N_OPTIONS + 1), dtype=np.float32)  # a padded option
    probs[..., 0] = correctness
    probs[..., 1] = 1 - correctness
    write_bench(tmp_path, correctness, [[0, 200], [200, N_ITEMS]], probs=probs, labels=labels,
                subtasks=["first", "second"], models=models)
    matrix = load_paper_arrays(tmp_path)
    assert matrix.model_names.tolist() == models
    assert matrix.subtask_names == ("first", "second")
    assert (matrix.subtasks[:200] == "first").all() and (matrix.subtasks[200:] == "second").all()
    np.testing.assert_array_equal(matrix.confidence, correctness)


def test_without_confidence(gpqa, tmp_path):
    correctness, _, ranges = gpqa
    write_bench(tmp_path, correctness.astype(np.float64), ranges)
    matrix = load_paper_arrays(tmp_path)
    assert matrix.confidence is None
    np.testing.assert_array_equal(matrix.correctness, correctness)


def test_chunked_gather_matches(gpqa_dir, monkeypatch):
    directory, probs, labels = gpqa_dir
    monkeypatch.setattr(paper_arrays, "_GATHER_CELLS", 1000)  # 2 models per chunk
    matrix = load_paper_arrays(directory)
    np.testing.assert_array_equal(matrix.confidence,
                                  probs[:, np.arange(N_ITEMS), labels].astype(np.float32))


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=3, max_dims=3, max_side=6),
                  elements=st.floats(0, 1)), st.data())
def test_gold_gather_property(tmp_path_factory, probs, data):
    _, n_items, n_options = probs.shape
    labels = np.array(data.draw(st.lists(st.integers(0, n_options - 1),
                                         min_size=n_items, max_size=n_items)))
    correctness = (probs[:, np.arange(n_items), labels] > 0.5).astype(np.int8)
    directory = write_bench(tmp_path_factory.mktemp("prop"), correctness, [[0, n_items]],
                            probs=probs, labels=labels)
    got = load_paper_arrays(directory).confidence
    np.testing.assert_array_equal(got, probs[:, np.arange(n_items), labels].astype(np.float32))


# --- errors -----------------------------------------------------------------------------


def small(tmp_path: Path, **kwargs) -> Path:
    correctness = np.array([[1, 0, 1], [0, 0, 1]])
    kwargs.setdefault("ranges", [[0, 3]])
    return write_bench(tmp_path, correctness, **kwargs)


def test_mismatched_confidence_shape(tmp_path):
    small(tmp_path, probs=np.full((2, 4, 2), 0.5), labels=np.zeros(3))
    with pytest.raises(DataError, match=r"gpqa_models-by-confidence_combined\.npy: shape "
                                        r"\(2, 4, 2\), expected \(2, 3, n_options\)"):
        load_paper_arrays(tmp_path)


def test_mismatched_labels_shape(tmp_path):
    small(tmp_path, probs=np.full((2, 3, 2), 0.5), labels=np.zeros(4))
    with pytest.raises(DataError, match=r"gpqa_labels_combined\.npy: shape \(4,\), expected"):
        load_paper_arrays(tmp_path)


@pytest.mark.parametrize("labels", [[0, 2, 1], [0, 1.5, 1], [0, -1, 1], [0, np.nan, 1]])
def test_labels_out_of_range(tmp_path, labels):
    small(tmp_path, probs=np.full((2, 3, 2), 0.5), labels=np.array(labels, dtype=float))
    with pytest.raises(DataError, match=r"gpqa_labels_combined\.npy: label of item 1 is"):
        load_paper_arrays(tmp_path)


def test_confidence_without_labels(tmp_path):
    small(tmp_path, probs=np.full((2, 3, 2), 0.5))
    with pytest.raises(DataError, match=r"needs gpqa_labels_combined\.npy"):
        load_paper_arrays(tmp_path)


@pytest.mark.parametrize("ranges, message", [
    ([[0, 1], [2, 3]], r"range 1 is \[2, 3\] \(expected to start at 1\)"),
    ([[0, 2]], r"the ranges end at 2, not at 3"),
    ([[0, 4]], r"the ranges end at 4, not at 3"),
    ([[1, 3]], r"range 0 is \[1, 3\]"),
    ([[0, 2], [2, 1]], r"range 1 is \[2, 1\]"),
    ({"a": [0, 3]}, r"expected a JSON list of \[start, end\] ranges"),
])
def test_bad_ranges(tmp_path, ranges, message):
    small(tmp_path, ranges=ranges)
    with pytest.raises(DataError, match=rf"gpqa_subtask-idx-ranges\.json: {message}"):
        load_paper_arrays(tmp_path)


def test_names_count_mismatch(tmp_path):
    small(tmp_path, subtasks=["a", "b"])
    with pytest.raises(DataError, match=r"1 ranges but 2 subtask names"):
        load_paper_arrays(tmp_path)
    (tmp_path / "gpqa_subtasks.json").unlink()
    small(tmp_path, models=["m"])
    with pytest.raises(DataError, match=r"gpqa_model-names\.json: expected a JSON list of 2 model"):
        load_paper_arrays(tmp_path)


def test_ambiguous_directory(tmp_path):
    small(tmp_path)
    write_bench(tmp_path, np.ones((2, 2)), [[0, 2]], bench="bbh")
    with pytest.raises(DataError, match=r"exactly one benchmark, found prefixes: bbh, gpqa"):
        load_paper_arrays(tmp_path)
    assert load_paper_arrays(tmp_path / "bbh_subtask-idx-ranges.json").n_items == 2


def test_empty_directory_and_stray_file(tmp_path):
    with pytest.raises(DataError, match=r"found prefixes: none"):
        load_paper_arrays(tmp_path)
    stray = tmp_path / "notes.txt"
    stray.write_text("x")
    with pytest.raises(DataError, match=re.escape(f"{stray}: not one of the paper's files")):
        load_paper_arrays(stray)


def test_missing_required_file(tmp_path):
    np.save(tmp_path / "gpqa_models-by-correctness_combined.npy", np.ones((2, 2)))
    with pytest.raises(DataError, match=r"no gpqa_subtask-idx-ranges\.json"):
        load_paper_arrays(tmp_path)


def test_correctness_must_be_2d(tmp_path):
    write_bench(tmp_path, np.ones(3), [[0, 3]])
    with pytest.raises(DataError, match=r"shape \(3,\); expected a 2-D models x items array"):
        load_paper_arrays(tmp_path)


def test_not_an_npy_file(tmp_path):
    small(tmp_path)
    (tmp_path / "gpqa_models-by-correctness_combined.npy").write_text("garbage")
    with pytest.raises(DataError, match=r"not a readable \.npy array"):
        load_paper_arrays(tmp_path)
