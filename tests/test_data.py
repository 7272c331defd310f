"""ResponseMatrix validation, the wide CSV loader on the real files, missing-data
policies, the named datasets and the registry of loaders."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import GPQA_CSV, MMLU_PRO_CSV, assert_ok, mdad_cli, shared_data
from hypothesis import given, settings
from hypothesis import strategies as st

from mdad.data import (
    LOADERS,
    MissingPolicy,
    ResponseMatrix,
    data_search_path,
    dataset_options,
    describe,
    find_loader,
    load_dataset,
    load_wide_csv,
    read_dataset,
    read_results,
    resolve_missing,
)
from mdad.data.datasets import DATASETS
from mdad.data.wide_csv import MISSING_TOKENS, _read_cells, _to_scores
from mdad.errors import ConfigError, DataError


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
    assert "set missing to drop-models" in report.describe()
    assert report.parameters == ("missing",)
    models, report = resolve_missing(mmlu_pro, "drop-models")
    assert (models.n_models, models.n_items) == (26, 12032)
    assert len(report.dropped_models) == 3
    with pytest.raises(DataError, match=r"1713 cells lack a result .*set missing to "
                                        r"drop-items or drop-models") as info:
        resolve_missing(mmlu_pro, "error")
    assert info.value.parameters == ("missing",)
    with pytest.raises(ConfigError, match=r"missing must be one of drop-items, drop-models, "
                                          r"error; got 'drop'"):
        resolve_missing(mmlu_pro, "drop")


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
    assert auto.notes == ("models_as_rows.csv: read with models as rows, from its shape (30 "
                          "rows, 60 score columns) and no column named like an item id or a "
                          "subtask; if that is wrong, pass orientation items-as-rows",)
    assert forced.notes == ("models_as_rows.csv: 1 column(s) without a single score read as "
                            "metadata, not models: model",)
    assert auto.take(models=[0, 1]).notes == auto.notes


def test_text_columns_read_as_metadata_are_reported(tmp_path):
    path = tmp_path / "meta.csv"
    path.write_text("item_id,model_a,model_b,source,annotator\n"
                    "q1,1,0,web,ann\nq2,0,1,book,ann\nq3,1,1,web,bob\n")
    matrix = load_wide_csv(path)
    assert matrix.model_names.tolist() == ["model_a", "model_b"]
    assert matrix.notes == ("meta.csv: 2 column(s) without a single score read as "
                            "metadata, not models: source, annotator",)
    assert load_wide_csv(path, meta_columns=("source", "annotator")).notes == ()


@pytest.mark.parametrize("name", ["gpqa", "mmlu-pro-29"])
def test_the_shipped_datasets_read_without_notes(name):
    shared_data(GPQA_CSV if name == "gpqa" else MMLU_PRO_CSV)
    assert load_dataset(name).matrix.notes == ()


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


@pytest.mark.parametrize(("text", "message"), [
    # a second id column would take a model with it, unseen
    ("item_id,m1,item_id\nq1,1,0\nq2,0,1\n",
     r"columns 1 and 3 are both named 'item_id'; give each column its own name"),
    ("item_id,m1,m1\nq1,1,0\nq2,0,1\n", r"columns 2 and 3 are both named 'm1'"),
    ("item_id,m1,\nq1,1,0\nq2,0,1\n", r"column 3 has no name in the header; name it"),
    ("item_id,m1,m2\nq1,1,0\n,0,1\n", r"line 3, column 'item_id' is empty; fill it in"),
    ("item_id,subtask,m1,m2\nq1,a,1,0\nq2, ,0,1\n",
     r"line 3, column 'subtask' is empty; fill it in"),
    ("model,q1,q2,q3,q4\nsubtask,a,,c,d\nm1,1,0,1,0\nm2,0,1,0,1\n",
     r"line 2, column 'q2': the subtask is empty; fill it in"),
    ("model,q1,q2,q3,q4,q5\nsubtask,a,b,c,d,e\ncategory,c,d,e,f,g\nm1,1,0,1,0,1\n"
     "m2,0,1,0,1,0\n", r"lines 2 and 3 both label the items' subtasks; keep one of them"),
    ("model,q1,q2,q3\nm1,1,0,1\n ,0,1,1\n", r"model 2 of 2 has an empty name"),
    # numpy's strings drop a trailing NUL: q1 and q1\0 would be one id
    ("item_id,m1,m2\nq1,1,0\nq1\x00,0,1\n", r"line 3 holds a NUL byte"),
])
def test_wide_csv_names_must_be_there_and_distinct(tmp_path, text, message):
    path = tmp_path / "names.csv"
    path.write_text(text)
    with pytest.raises(DataError, match=message):
        load_wide_csv(path)


@pytest.mark.parametrize(("text", "orientation"), [
    ("item_id,subtask,m0,m1\n q0 ,A ,1,0\nq1, B,0,1\n", "items-as-rows"),
    ("model,q0 , q1\nsubtask,A , B\nm0,1,0\nm1,0,1\n", "models-as-rows"),
])
def test_item_ids_and_subtasks_are_read_without_surrounding_spaces(tmp_path, text,
                                                                   orientation):
    """As model names are: a results file that writes `q0` must find the item."""
    path = tmp_path / "spaced.csv"
    path.write_text(text)
    matrix = load_wide_csv(path, orientation=orientation)
    assert list(matrix.item_ids) == ["q0", "q1"] and list(matrix.model_names) == ["m0", "m1"]
    assert list(matrix.subtask_names) == ["A", "B"]
    assert matrix.correctness.tolist() == [[1, 0], [0, 1]]


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
    monkeypatch.setattr("mdad.data.datasets.Path.cwd", lambda: tmp_path)
    monkeypatch.setattr("mdad.data.datasets.__file__", str(tmp_path / "a" / "b" / "c" / "r.py"))
    with pytest.raises(DataError, match=r"not found under .*set MDAD_DATA"):
        load_dataset("gpqa")


def test_wide_csv_option_errors_name_the_parameter(tmp_path):
    path = tmp_path / "small.csv"
    path.write_text("item_id,m1,m2\nq1,1,0\nq2,0,1\n")
    with pytest.raises(DataError, match=r"no column 'qid' for item_column") as info:
        load_wide_csv(path, item_column="qid")
    assert info.value.parameters == ("item_column",)
    with pytest.raises(ConfigError, match=r"orientation must be one of auto, items-as-rows, "
                                          r"models-as-rows; got 'sideways'"):
        load_wide_csv(path, orientation="sideways")
    path.write_text("item_id,m1\nq1,yes\nq2,no\n")
    with pytest.raises(DataError, match=r"write them as 1 and 0$") as info:
        load_wide_csv(path)
    assert info.value.parameters == ()
    path.write_text("q1,q2,q3\nx,y,z\n")
    with pytest.raises(DataError, match=r"set orientation to models-as-rows") as info:
        load_wide_csv(path, orientation="items-as-rows")
    assert info.value.parameters == ("orientation",)


# --------------------------------------------------------------- the registry of loaders


def small_csv(directory: Path) -> Path:
    path = directory / "small.csv"
    path.write_text("item_id,m1,m2\nq1,1,0\nq2,0,1\nq3,1,1\n")
    return path


def small_paper_arrays(directory: Path) -> Path:
    directory.mkdir()
    np.save(directory / "bench_models-by-correctness_combined.npy",
            np.array([[1, 0, 1], [0, 0, 1]]))
    (directory / "bench_subtask-idx-ranges.json").write_text(json.dumps([[0, 3]]))
    return directory


def small_lm_eval(directory: Path) -> Path:
    model = directory / "org__model"
    model.mkdir(parents=True)
    records = [{"doc_id": k, "acc": float(k % 2), "acc_norm": 1.0} for k in range(3)]
    (model / "samples_task_2024-01-01T00-00-00.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in records))
    return directory


def test_loaders_have_distinct_names_and_say_what_they_read():
    names = [loader.name for loader in LOADERS]
    assert names == ["synthetic", "leaderboard", "wide-csv", "paper-arrays", "compact",
                     "lm-eval"]
    assert all(loader.reads for loader in LOADERS)


def test_each_path_goes_to_the_loader_that_recognises_it(tmp_path):
    csv_file = small_csv(tmp_path)
    upper = tmp_path / "SCORES.TXT"
    upper.write_text(csv_file.read_text())
    arrays = small_paper_arrays(tmp_path / "paper")
    samples = small_lm_eval(tmp_path / "lm")
    expected = {
        csv_file: "wide-csv",
        upper: "wide-csv",
        arrays: "paper-arrays",
        arrays / "bench_models-by-correctness_combined.npy": "paper-arrays",
        arrays / "bench_subtask-idx-ranges.json": None,  # no known format
        samples: "lm-eval",
        samples / "org__model": "lm-eval",
        next((samples / "org__model").iterdir()): "lm-eval",
        tmp_path / "empty_folder": "lm-eval",  # any other folder is lm-eval output
        "synthetic:gpqa": "synthetic",
        "synthetic:helm": "synthetic",  # its loader names the known shapes
        "leaderboard:bbh": "leaderboard",  # found on the search path when it is read
    }
    (tmp_path / "empty_folder").mkdir()
    for source, name in expected.items():
        if name is None:
            with pytest.raises(DataError, match=r"unknown results format; expected a "
                                                r"synthetic:<shape> name, a leaderboard:<bench> "
                                                r"name, a \.csv file, the paper's \.npy arrays, "
                                                r"a pulled dataset folder .* or lm-eval "
                                                r"--log_samples"):
                find_loader(source)
        else:
            assert find_loader(source).name == name, source
    # the paper's arrays win over lm-eval in a folder that holds both
    (arrays / "samples_task_2024-01-01T00-00-00.jsonl").write_text("")
    assert find_loader(arrays).name == "paper-arrays"
    for absent in (tmp_path / "absent.csv", tmp_path / "absent.jsonl", tmp_path / "absent"):
        with pytest.raises(DataError, match=r"absent[.a-z]*: no such file or folder"):
            find_loader(absent)


def test_read_results_reads_with_the_recognising_loader(tmp_path):
    csv_file = small_csv(tmp_path)
    assert np.array_equal(read_results(csv_file).correctness, load_wide_csv(csv_file).correctness)
    arrays = read_results(small_paper_arrays(tmp_path / "paper"))
    assert arrays.model_names.tolist() == ["model_0000", "model_0001"]
    samples = read_results(small_lm_eval(tmp_path / "lm"), metric="acc_norm", tasks=["task"])
    assert samples.correctness.tolist() == [[1, 1, 1]]
    assert read_results(tmp_path / "lm").correctness.tolist() == [[0, 1, 0]]  # acc


@pytest.mark.parametrize(("make", "options", "message", "parameters"), [
    (small_csv, {"metric": "acc"},
     r"metric is not an option of the wide-csv loader, which reads .*small\.csv; leave it "
     r"out \(the loader's keywords are orientation, item_column, subtask_column, "
     r"meta_columns\)$",
     ("metric",)),
    (small_csv, {"orientation": None, "models": 10, "data_seed": 1},
     r"models, data_seed are not options of the wide-csv loader, which reads .*; leave "
     r"them out",
     ("models", "data_seed")),
    (lambda d: small_paper_arrays(d / "paper"), {"orientation": "items-as-rows"},
     r"orientation is not an option of the paper-arrays loader, which reads .*paper; "
     r"leave it out \(the loader takes no options\)$", ("orientation",)),
    (lambda d: small_lm_eval(d / "lm"), {"subtask_column": "task"},
     r"subtask_column is not an option of the lm-eval loader, which reads .*lm; leave it "
     r"out \(the loader's keywords are metric, tasks, allow_mixed_settings\)$",
     ("subtask_column",)),
    (lambda d: "synthetic:gpqa", {"models": 10},
     r"models is not an option of the synthetic loader, which reads synthetic:gpqa; leave "
     r"it out \(the loader's keywords are n_models, data_seed\)$", ("models",)),
])
def test_an_option_the_loader_does_not_take_is_refused(tmp_path, make, options, message,
                                                       parameters):
    source = make(tmp_path)
    for read in (read_results, load_dataset):
        with pytest.raises(ConfigError, match=message) as info:
            read(source, **options)
        assert info.value.parameters == parameters


def test_options_left_at_none_are_not_given(tmp_path):
    csv_file = small_csv(tmp_path)
    matrix = read_results(csv_file, metric=None, orientation=None, n_models=None)
    assert matrix.n_models == 2
    assert load_dataset(csv_file, metric=None, orientation=None).name == "small"


def test_a_named_dataset_takes_its_own_metric_only():
    shared_data(GPQA_CSV)
    assert load_dataset("gpqa", metric="acc_norm").matrix.n_models == 420
    with pytest.raises(ConfigError, match=r"^metric acc: the gpqa data holds acc_norm scores "
                                          r"only; drop metric or set it to acc_norm$") as info:
        load_dataset("gpqa", metric="acc")
    assert info.value.parameters == ("metric",)
    # its read options are the wide CSV's; another option is refused like on any CSV
    with pytest.raises(ConfigError, match=r"tasks is not an option of the wide-csv loader"):
        read_dataset("gpqa", tasks=["x"])
    raw = read_dataset("gpqa", orientation=None)  # None leaves the spec's option in place
    assert (raw.name, raw.spec.name, raw.matrix.subtask_names) == ("gpqa", "gpqa",
                                                                   ("gpqa_main",))


def test_dataset_options_are_what_load_dataset_accepts(tmp_path):
    csv_options = ("orientation", "item_column", "subtask_column", "meta_columns")
    assert dataset_options(small_csv(tmp_path)) == csv_options
    assert dataset_options(small_lm_eval(tmp_path / "lm")) == ("metric", "tasks",
                                                                "allow_mixed_settings")
    assert dataset_options(small_paper_arrays(tmp_path / "paper")) == ()
    assert dataset_options("synthetic:gpqa") == ("n_models", "data_seed")
    shared_data(GPQA_CSV)
    assert dataset_options("gpqa") == (*csv_options, "metric")
    with pytest.raises(DataError, match=r"'nope' is neither a known dataset"):
        dataset_options("nope")


def test_an_unknown_name_is_neither_a_dataset_nor_a_path(tmp_path):
    with pytest.raises(DataError, match=r"^'nope' is neither a known dataset \(gpqa, "
                                        r"mmlu-pro-29, synthetic:NAME, leaderboard:NAME; "
                                        r"mdad data list names them\) nor an existing file "
                                        r"or folder$"):
        read_dataset("nope")
    odd = tmp_path / "scores.parquet"
    odd.write_bytes(b"PAR1")
    with pytest.raises(DataError, match=r"scores\.parquet: unknown results format"):
        load_dataset(odd)


def run_python(statement: str) -> list[str]:
    """The modules a fresh interpreter has loaded after `statement`."""
    probe = f"import sys, json\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=120)
    return json.loads(proc.stdout.splitlines()[-1])


def test_synthetic_imports_neither_the_registry_nor_the_loaders():
    loaded = set(run_python("import mdad.data.synthetic"))
    assert "mdad.data.synthetic" in loaded
    assert not loaded & {"mdad.data.registry", "mdad.data.datasets", "mdad.data.wide_csv",
                         "mdad.data.lm_eval", "mdad.data.paper_arrays",
                         "mdad.data.synthetic_loader"}


@pytest.mark.parametrize("statement", [
    "import mdad.data",
    "from mdad.data import load_dataset, read_results, LOADERS",
])
def test_loading_the_registry_loads_no_heavy_library(statement):
    top = {name.split(".")[0] for name in run_python(statement)}
    assert "mdad" in top
    assert not top & {"pandas", "scipy", "pyarrow", "lm_eval", "sklearn", "matplotlib"}


def test_a_name_list_reads_a_byte_order_mark_and_comments_and_refuses_repeats(tmp_path):
    from mdad.data.files import read_name_list

    path = tmp_path / "names.txt"
    path.write_bytes("\ufeffa\n\n  b  # the second\n# only a comment\nc\n".encode())
    assert read_name_list(path, option="--pool") == ("a", "b", "c")
    path.write_text("a\nb\n\na # again\n")
    with pytest.raises(DataError, match=r"^--pool .*names\.txt: line 4 lists 'a' again \(first "
                       r"on line 1\); list each once$"):
        read_name_list(path, option="--pool")
    path.write_text("# nothing\n\n")
    with pytest.raises(DataError, match=r"the file lists no item ids"):
        read_name_list(path, option="--pool", what="item ids")


_CELLS = st.one_of(
    st.sampled_from(["", "nan", "NaN", "NA", "N/A", "null", "None", "0", "1", "0.5", " 0.5",
                     "1e-1", "+.5", "-0", "inf", "-inf", "Infinity", "1_0", "\uff11", "\u0660",
                     "0.5\u00a0", "0x1", "true", "1e500", "5.", "0,5"]),
    st.text(alphabet="0123456789.eE+-_naifINF \t\u00a0\uff11", max_size=6),
    st.floats(0, 1).map(repr))


@settings(max_examples=200, deadline=None)
@given(st.lists(_CELLS, min_size=1, max_size=30))
def test_cells_parse_as_pandas_parses_them(cells):
    """The scores and the not-a-number mask are pandas.to_numeric's (which the loader
    used before it dropped pandas' 0.4 s import), cell for cell."""
    array = np.array(cells, dtype=object).reshape(1, -1)
    values, text = _to_scores(array)
    series = pd.Series(cells, dtype=object)
    missing = series.isin(MISSING_TOKENS).to_numpy()
    expected = pd.to_numeric(series.where(~missing), errors="coerce").to_numpy(np.float64)
    np.testing.assert_array_equal(values[0], expected)
    np.testing.assert_array_equal(text[0], np.isnan(expected) & ~missing)


def test_real_files_parse_as_pandas_parses_them():
    for name in (GPQA_CSV, MMLU_PRO_CSV):
        _, body, _ = _read_cells(shared_data(name))
        values, text = _to_scores(body)
        series = pd.Series(body.ravel(), dtype=object)
        missing = series.isin(MISSING_TOKENS).to_numpy()
        expected = pd.to_numeric(series.where(~missing), errors="coerce").to_numpy(np.float64)
        np.testing.assert_array_equal(values.ravel(), expected)
        np.testing.assert_array_equal(text.ravel(), np.isnan(expected) & ~missing)


def test_the_catalog_says_where_each_dataset_is_and_how_to_get_the_missing(tmp_path,
                                                                          monkeypatch):
    """`mdad data list`'s entries: a search path of one empty folder has no named file,
    so every file dataset and every synthetic one says how to get it; a folder that
    `mdad data pull` wrote is found with its shape."""
    from mdad.data import catalog as catalog_module
    from mdad.data.compact import write_compact
    monkeypatch.setattr(catalog_module, "data_search_path", lambda: [tmp_path])
    entries = {e.name: e for e in catalog_module.catalog()}
    assert list(entries)[:2] == ["gpqa", "mmlu-pro-29"]
    assert entries["gpqa"].path is None and "open-llm-leaderboard-v2/gpqa_main.csv" in (
        entries["gpqa"].get)
    assert "mdad data pull leaderboard gpqa" in entries["gpqa"].get
    assert entries["synthetic:mmlu-pro"].get.startswith("needs mmlu-pro-29")
    assert entries["leaderboard:bbh"].get == (
        "mdad data pull leaderboard bbh (the Hugging Face Hub)")

    matrix = read_results(shared_data(GPQA_CSV), orientation="items-as-rows",
                          subtask_column="subset", meta_columns=("subtask_range",))
    write_compact(tmp_path / "leaderboard" / "gpqa", matrix.take(models=np.arange(7)),
                  {"benchmark": "gpqa", "metric": "acc_norm"})
    pulled = {e.name: e for e in catalog_module.catalog()}["leaderboard:gpqa"]
    assert pulled.path == tmp_path / "leaderboard" / "gpqa"
    assert (pulled.shape, pulled.get) == ("7 models x 448 items, 1 subtask", "")


def test_data_list_shows_the_found_and_the_missing(tmp_path):
    gpqa = shared_data(GPQA_CSV)
    proc = mdad_cli("data", "list", cwd=tmp_path, columns=60)
    assert_ok(proc)
    # a path and a command, each on one line whatever the width, to copy whole
    assert re.search(r"^gpqa +420 models x 448 items, 1 subtask\n  found: "
                     + re.escape(str(gpqa)) + "\n", proc.stdout, re.M)
    assert re.search(r"^leaderboard:musr +missing\n  get:   mdad data pull leaderboard musr "
                     r"\(the Hugging Face Hub\)\n", proc.stdout, re.M)
    listed = json.loads(mdad_cli("data", "list", "--json", cwd=tmp_path).stdout)
    assert listed["datasets"][0] == {
        "name": "gpqa", "description": DATASETS["gpqa"].description,
        "provenance": DATASETS["gpqa"].provenance, "path": str(gpqa),
        "shape": "420 models x 448 items, 1 subtask", "get": ""}
