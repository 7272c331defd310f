"""ResponseMatrix validation, the wide CSV loader on the real files, missing-data
policies and the dataset registry."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from shared import GPQA_CSV, shared_data

from mdad.data import (
    MissingPolicy,
    ResponseMatrix,
    data_search_path,
    describe,
    load_dataset,
    load_wide_csv,
    resolve_missing,
)
from mdad.errors import DataError


def test_matrix_holds_and_protects_its_data():
    m = ResponseMatrix([[1, 0.5, np.nan], [0, 0, 1]], ["a", "b"], ["q1", "q2", "q3"],
                       subtasks=["y", "x", "y"])
    assert m.subtask_names == ("y", "x") and m.subtask_codes.tolist() == [0, 1, 0]
    assert m.accuracy().tolist() == [0.75, pytest.approx(1 / 3)]
    assert m.n_missing == 1 and not m.is_binary
    with pytest.raises(ValueError):
        m.correctness[0, 0] = 0  # read-only
    assert m.take(models=np.array([1]), items=np.array([2, 0])).item_ids.tolist() == ["q3", "q1"]


def test_matrix_stores_complete_binary_correctness_in_one_byte_a_cell():
    binary = ResponseMatrix([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]], ["a", "b"], ["q1", "q2", "q3"],
                            confidence=[[0.9, 0.2, 0.6], [np.nan, 0.1, 0.7]])
    assert binary.correctness.dtype == np.uint8 and binary.correctness.nbytes == 6
    assert binary.confidence.dtype == np.float32
    assert binary.is_binary and binary.n_missing == 0
    assert binary.accuracy().tolist() == [2 / 3, 1 / 3]
    # blocks are built alone, as float32, equal to the whole matrix's
    rows, cols = np.array([1, 0]), np.array([2, 1])
    block = binary.gold_confidence(rows, cols)
    assert block.dtype == np.float32 and block.shape == (2, 2)
    assert np.array_equal(block, binary.gold_confidence()[rows][:, cols])
    assert binary.gold_confidence()[1, 0] == 0.0  # no confidence: correctness
    assert binary.scores(rows, cols).tolist() == [[1.0, 0.0], [1.0, 0.0]]
    assert ResponseMatrix(np.ones((2, 2), bool), ["a", "b"], ["x", "y"]).correctness.dtype \
        == np.uint8
    # missing cells or partial credit need float32 (NaN, fractions)
    for values in ([[1, np.nan], [0, 1]], [[1, 0.5], [0, 1]]):
        matrix = ResponseMatrix(values, ["a", "b"], ["x", "y"])
        assert matrix.correctness.dtype == np.float32
        assert np.array_equal(matrix.scores(), np.asarray(values, np.float32), equal_nan=True)


def test_matrix_never_shares_memory_with_its_input(tmp_path):
    mapped = np.lib.format.open_memmap(tmp_path / "m.npy", mode="w+", dtype=np.float32,
                                       shape=(2, 2))
    mapped[:] = [[0.5, 1.0], [0.0, 0.25]]
    frame = pd.DataFrame(np.array(mapped))
    matrices = [ResponseMatrix(source, ["a", "b"], ["x", "y"]) for source in (mapped, frame)]
    mapped[0, 0], frame.iloc[0, 0] = 0.75, 0.125
    assert [m.correctness[0, 0] for m in matrices] == [0.5, 0.5]


def test_a_binary_matrix_that_loses_its_missing_cells_becomes_compact(mmlu_pro):
    assert mmlu_pro.correctness.dtype == np.float32  # 1,713 missing cells
    complete, _ = resolve_missing(mmlu_pro, MissingPolicy.DROP_ITEMS)
    assert complete.correctness.dtype == np.uint8
    kept = np.isin(mmlu_pro.item_ids, complete.item_ids)
    assert np.array_equal(complete.scores(), mmlu_pro.scores(items=kept))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"correctness": [[1.5, 0]]}, r"correctness of model a on item q1 is 1.5; scores must"),
        ({"model_names": ["a", "a"], "correctness": [[1, 0], [0, 1]]},
         r"model name 'a' appears more than once"),
        ({"item_ids": ["q", "q"]}, r"item id 'q' appears more than once"),
        ({"correctness": [[np.nan, np.nan]]}, r"model a has no data on any item"),
        ({"correctness": [[np.nan, 1], [np.nan, 0]], "model_names": ["a", "b"]},
         r"item q1 has no data for any model"),
    ],
)
def test_matrix_rejects_bad_data(kwargs, message):
    args = {"correctness": [[1, 0]], "model_names": ["a"], "item_ids": ["q1", "q2"]} | kwargs
    with pytest.raises(DataError, match=message):
        ResponseMatrix(**args)


def test_gpqa_file(gpqa):
    assert (gpqa.n_models, gpqa.n_items, gpqa.subtask_names) == (420, 448, ("gpqa_main",))
    raw = pd.read_csv(shared_data(GPQA_CSV))
    assert np.array_equal(gpqa.correctness.T, raw.iloc[:, :420].to_numpy(np.float32))
    assert gpqa.model_names.tolist() == raw.columns[:420].tolist()
    info = describe(gpqa)
    assert info.n_missing == 0 and not info.has_confidence and info.is_binary
    assert info.min_accuracy == pytest.approx(raw.iloc[:, :420].mean().min())


def test_mmlu_pro_file_keeps_missing_cells(mmlu_pro):
    assert (mmlu_pro.n_models, mmlu_pro.n_items, len(mmlu_pro.subtask_names)) == (29, 12032, 14)
    assert mmlu_pro.n_missing == 1713  # missing, never read as wrong
    assert mmlu_pro.item_ids[:2].tolist() == ["70", "71"]


def test_missing_policies_on_mmlu_pro(mmlu_pro):
    items, report = resolve_missing(mmlu_pro, MissingPolicy.DROP_ITEMS)
    assert (items.n_models, items.n_items, items.n_missing) == (29, 12032 - 1706, 0)
    assert len(report.dropped_items) == 1706
    assert "dropped 1706 items" in report.describe()
    assert "DeepSeek-Coder-V2_5shots (1681)" in report.describe()
    models, report = resolve_missing(mmlu_pro, "drop-models")
    assert (models.n_models, models.n_items) == (26, 12032)
    assert len(report.dropped_models) == 3
    with pytest.raises(DataError, match=r"1713 cells are missing .*choose --missing"):
        resolve_missing(mmlu_pro, "error")


def test_both_orientations_read_the_same_matrix(gpqa, tmp_path):
    frame = pd.DataFrame(gpqa.correctness[:30, :60], index=gpqa.model_names[:30],
                         columns=gpqa.item_ids[:60])
    wide = tmp_path / "models_as_rows.csv"
    frame.to_csv(wide, index_label="model")
    auto = load_wide_csv(wide)
    assert np.array_equal(auto.correctness, gpqa.correctness[:30, :60])
    assert auto.model_names.tolist() == gpqa.model_names[:30].tolist()
    forced = load_wide_csv(wide, orientation="items-as-rows")
    assert forced.n_models == 60  # the override wins


def test_wide_csv_errors_name_line_and_column(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("item_id,m1,m2\nq1,1,0\nq2,0,abc\n")
    with pytest.raises(DataError, match=r"bad.csv: line 3, column 'm2': 'abc' is not a score"):
        load_wide_csv(path)
    path.write_text("item_id,m1,m2\nq1,1,0\nq2,0\n")
    with pytest.raises(DataError, match=r"line 3 has fewer fields than the header"):
        load_wide_csv(path)
    path.write_text("item_id,m1,m2\nq1,1,0,1\n")
    with pytest.raises(DataError, match=r"line 2 has more fields than the header \(4 vs 3\)"):
        load_wide_csv(path)


def test_search_path_and_not_found_message(monkeypatch, tmp_path):
    real = shared_data(GPQA_CSV)
    monkeypatch.setenv("MDAD_DATA", str(tmp_path))
    assert data_search_path()[0] == tmp_path
    (tmp_path / "open-llm-leaderboard-v2").mkdir()
    gpqa_copy = tmp_path / "open-llm-leaderboard-v2" / "gpqa_main.csv"
    gpqa_copy.write_bytes(real.read_bytes())
    assert load_dataset("gpqa").path == gpqa_copy
    with pytest.raises(DataError, match=r"'nope' is neither a known dataset \(gpqa, mmlu-pro"):
        load_dataset("nope")
    gpqa_copy.unlink()
    monkeypatch.setattr("mdad.data.registry.Path.cwd", lambda: tmp_path)
    monkeypatch.setattr("mdad.data.registry.__file__", str(tmp_path / "a" / "b" / "c" / "r.py"))
    with pytest.raises(DataError, match=r"not found under .*set MDAD_DATA"):
        load_dataset("gpqa")
