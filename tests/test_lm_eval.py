"""Tests of the lm-evaluation-harness --log_samples loader."""

from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from helpers import STAMP, mc_record, mdad_cli, pythia_dir, pythia_file, write_samples
from hypothesis import given, settings
from hypothesis import strategies as st

from mdad.data.files import files_sha256
from mdad.data.lm_eval import holds_lm_eval_samples, lm_eval_files, load_lm_eval_samples
from mdad.errors import DataError


def read_records(path: Path, n: int | None = None) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        lines = [line for line in handle if line.strip()]
    return [json.loads(line) for line in lines[:n]]


def softmax_gold(lls: list[float], gold: int) -> float:
    peak = max(lls)
    weights = [math.exp(v - peak) for v in lls]
    return weights[gold] / sum(weights)


# --- the real pythia-14m files ----------------------------------------------------------


@pytest.fixture(scope="module")
def pythia():
    return load_lm_eval_samples(pythia_dir())


def test_real_pythia_shape(pythia):
    lines = {task: len(read_records(pythia_file(task)))
             for task in ("arc", "gsm8k", "hellaswag", "mmlu", "truthfulqa", "winogrande")}
    assert lines == {"arc": 100, "gsm8k": 498, "hellaswag": 58, "mmlu": 102,
                     "truthfulqa": 136, "winogrande": 106}
    assert sum(lines.values()) == 1000
    # gsm8k holds two passes over its 249 documents, one per filter (strict-match,
    # flexible-extract), so the matrix has 1000 - 249 = 751 items.
    assert pythia.n_models == 1
    assert pythia.model_names.tolist() == ["EleutherAI__pythia-14m"]
    assert pythia.n_items == 751
    assert pythia.subtask_names == tuple(
        f"metabench_{t}_secondary"
        for t in ("arc", "gsm8k", "hellaswag", "mmlu", "truthfulqa", "winogrande"))
    counts = {name: int((pythia.subtasks == name).sum()) for name in pythia.subtask_names}
    assert list(counts.values()) == [100, 249, 58, 102, 136, 106]
    assert pythia.item_ids[:3].tolist() == [f"metabench_arc_secondary/{i}" for i in range(3)]
    assert pythia.n_missing == 0
    assert pythia.source == str(pythia_dir())
    assert pythia.sha256 == files_sha256(sorted(pythia_dir().glob("*.jsonl")), pythia_dir())


def test_real_correctness_is_the_metric(pythia):
    column = {item: i for i, item in enumerate(pythia.item_ids.tolist())}
    for path in sorted(pythia_dir().glob("*.jsonl")):
        task = path.name[len("samples_"):-len(f"_{STAMP}.jsonl")]
        records = read_records(path)
        if task.startswith("metabench_gsm8k"):
            records = records[:249]  # the first filter's pass
        for record in records:
            value = float(record["acc"] if "acc" in record else record["exact_match"])
            assert pythia.correctness[0, column[f"{task}/{record['doc_id']}"]] == value


def test_real_gold_option_agrees_with_acc(pythia):
    column = {item: i for i, item in enumerate(pythia.item_ids.tolist())}
    checked = agree = 0
    for path in sorted(pythia_dir().glob("*.jsonl")):
        task = path.name[len("samples_"):-len(f"_{STAMP}.jsonl")]
        for record in read_records(path):
            if "acc" not in record:
                continue
            lls = np.array([float(pair[0]) for pair in record["filtered_resps"]])
            probs = np.exp(lls - lls.max())
            probs /= probs.sum()
            top = np.sort(probs)
            if top[-1] == top[-2]:
                continue  # tied argmax: the prediction is ambiguous
            conf = pythia.confidence[0, column[f"{task}/{record['doc_id']}"]]
            gold_is_argmax = bool(np.isclose(conf, top[-1], rtol=1e-5, atol=0))
            checked += 1
            agree += gold_is_argmax == bool(record["acc"])
    assert checked == 468  # of 502 multiple-choice items, 34 have a tied argmax
    assert agree == checked


def test_real_confidence_nan_exactly_for_gsm8k(pythia):
    conf = pythia.confidence[0]
    is_gsm8k = pythia.subtasks == "metabench_gsm8k_secondary"
    assert np.isnan(conf[is_gsm8k]).all()
    assert not np.isnan(conf[~is_gsm8k]).any()
    assert ((conf[~is_gsm8k] >= 0) & (conf[~is_gsm8k] <= 1)).all()
    assert pythia.confidence.dtype == np.float32


def test_real_missing_metric_names_the_fields():
    path = pythia_file("mmlu")
    pattern = (rf"{re.escape(path.name)}: line 1: no 'acc_norm' field; the records of task "
               r"metabench_mmlu_secondary have \['acc'\]; choose one of them as metric")
    with pytest.raises(DataError, match=pattern) as info:
        load_lm_eval_samples(path, metric="acc_norm")
    assert info.value.parameters == ("metric",)


def test_real_single_file_and_model_dir():
    matrix = load_lm_eval_samples(pythia_file("arc"), metric="acc_norm")
    assert matrix.model_names.tolist() == ["EleutherAI__pythia-14m"]
    assert matrix.n_items == 100
    expected = [r["acc_norm"] for r in read_records(pythia_file("arc"))]
    assert matrix.correctness[0].tolist() == expected
    assert matrix.sha256 == files_sha256([pythia_file("arc")], pythia_dir())


# --- fixtures built from the real records ---------------------------------------------


def test_several_models_and_missing_items(tmp_path):
    mmlu = read_records(pythia_file("mmlu"), 6)
    wino = read_records(pythia_file("winogrande"), 3)
    for name, keep in (("org__b", 6), ("org__a", 4), ("org__c", 6)):
        records = copy.deepcopy(mmlu[:keep])
        for record in records:
            record["acc"] = float(name == "org__c")
        write_samples(tmp_path / name, "metabench_mmlu_secondary", records)
    write_samples(tmp_path / "org__a", "metabench_winogrande_secondary", wino)
    (tmp_path / "notes").mkdir()  # no sample files: not a model

    matrix = load_lm_eval_samples(tmp_path)
    assert matrix.model_names.tolist() == ["org__a", "org__b", "org__c"]
    assert matrix.item_ids.tolist() == (
        [f"metabench_mmlu_secondary/{i}" for i in range(6)]
        + [f"metabench_winogrande_secondary/{i}" for i in range(3)])
    a, b, c = matrix.correctness
    assert np.isnan(a[4:6]).all() and not np.isnan(a[:4]).any()
    assert np.isnan(b[6:]).all() and np.isnan(c[6:]).all()
    assert (b[:6] == 0).all() and (c[:6] == 1).all()
    assert matrix.n_missing == 2 + 3 + 3
    assert np.isnan(matrix.confidence[1, 6:]).all()
    np.testing.assert_array_equal(matrix.confidence[1, :6], matrix.confidence[2, :6])


def test_latest_timestamp_wins(tmp_path):
    records = read_records(pythia_file("mmlu"), 5)
    old = copy.deepcopy(records)
    for record in old:
        record["acc"] = 1.0
    first = write_samples(tmp_path, "metabench_mmlu_secondary", old, "2024-06-01T09-00-00.000000")
    new = write_samples(tmp_path, "metabench_mmlu_secondary", records, "2024-11-26T10-50-23.1")
    matrix = load_lm_eval_samples(tmp_path)
    assert matrix.correctness[0].tolist() == [r["acc"] for r in records]
    assert matrix.sha256 == files_sha256([first, new], tmp_path)


# --- several files of one task: merged by doc_id, the newest winning -------------------

OLD, MID, NEW = "2025-01-02T09-00-00.000001", "2025-01-02T09-00-00.5", "2025-03-01T00-00-00"


def scored(doc_ids: list[int], acc: float, lls: list[float] | None = None) -> list[dict]:
    lls = lls or [-1.0, -2.0]
    return [mc_record(d, lls, 0, acc) for d in doc_ids]


def test_files_of_a_task_are_merged_newest_winning(tmp_path):
    # Written newest first, so neither file order nor mtime can explain the result.
    write_samples(tmp_path, "task", scored([3, 4], 1.0, [-1.0, -3.0]), NEW)
    write_samples(tmp_path, "task", scored([0, 1, 2, 3, 4, 5], 0.0), OLD)
    write_samples(tmp_path, "task", scored([2, 3], 0.5, [-2.0, -1.0]), MID)
    matrix = load_lm_eval_samples(tmp_path)
    assert matrix.item_ids.tolist() == [f"task/{d}" for d in range(6)]
    assert matrix.correctness[0].tolist() == [0.0, 0.0, 0.5, 1.0, 1.0, 0.0]
    expected = [softmax_gold([-1, -2], 0)] * 2 + [softmax_gold([-2, -1], 0)]
    expected += [softmax_gold([-1, -3], 0)] * 2 + [softmax_gold([-1, -2], 0)]
    np.testing.assert_allclose(matrix.confidence[0], expected, rtol=1e-6)


def test_a_subset_rerun_keeps_the_other_items(tmp_path):
    """The issue's case: a 20-item --samples re-run must not make 180 of 200 items missing."""
    full = write_samples(tmp_path / "m", "task", scored(list(range(200)), 0.0), OLD)
    rerun = write_samples(tmp_path / "m", "task", scored(list(range(0, 200, 10)), 1.0), NEW)
    matrix = load_lm_eval_samples(tmp_path)
    assert matrix.n_items == 200 and matrix.n_missing == 0
    assert matrix.correctness[0].sum() == 20
    assert lm_eval_files(tmp_path).models == {"m": [full, rerun]}


def test_merge_keeps_models_and_tasks_apart(tmp_path):
    write_samples(tmp_path / "a", "t1", scored([0, 1], 0.0), OLD)
    write_samples(tmp_path / "a", "t1", scored([1], 1.0), NEW)
    write_samples(tmp_path / "a", "t2", scored([0], 1.0), OLD)
    write_samples(tmp_path / "b", "t1", scored([0, 1], 1.0), OLD)
    write_samples(tmp_path / "b", "t2", scored([0], 0.0), NEW)
    matrix = load_lm_eval_samples(tmp_path)
    assert matrix.item_ids.tolist() == ["t1/0", "t1/1", "t2/0"]
    assert matrix.correctness.tolist() == [[0.0, 1.0, 1.0], [1.0, 1.0, 0.0]]


def test_files_listed_per_model_in_merge_order(tmp_path):
    a_new = write_samples(tmp_path / "org__a", "t1", scored([0], 1.0), NEW)
    a_old = write_samples(tmp_path / "org__a", "t1", scored([0], 0.0), OLD)
    a_t0 = write_samples(tmp_path / "org__a", "t0", scored([0], 0.0), NEW)
    unstamped = tmp_path / "org__a" / "samples_t1.jsonl"  # no timestamp: oldest
    unstamped.write_text(json.dumps(scored([1], 1.0)[0]) + "\n", encoding="utf-8")
    b = write_samples(tmp_path / "org__b", "t1", scored([0], 1.0), MID)
    (tmp_path / "notes").mkdir()
    found = lm_eval_files(tmp_path)
    assert found.models == {"org__a": [a_t0, unstamped, a_old, a_new], "org__b": [b]}
    assert (found.hidden, found.nested, found.empty) == ([], [], ["notes"])
    assert found.tasks() == ["t0", "t1"]
    assert lm_eval_files(tmp_path / "org__a").models == {"org__a": [a_t0, unstamped, a_old,
                                                                    a_new]}
    assert lm_eval_files(a_old).models == {"org__a": [a_old]}
    matrix = load_lm_eval_samples(tmp_path)
    assert matrix.sha256 == files_sha256([a_new, a_old, a_t0, unstamped, b], tmp_path)
    assert matrix.item_ids.tolist() == ["t0/0", "t1/0", "t1/1"]
    np.testing.assert_array_equal(matrix.correctness, [[0.0, 1.0, 1.0], [np.nan, 1.0, np.nan]])


def test_hidden_model_folders_are_skipped_and_named(tmp_path):
    write_samples(tmp_path / "model", "task", scored([0, 1], 1.0), OLD)
    write_samples(tmp_path / ".ipynb_checkpoints", "task", scored([0, 1], 0.0), NEW)
    (tmp_path / ".git").mkdir()  # no sample files: not reported
    found = lm_eval_files(tmp_path)
    assert list(found.models) == ["model"]
    assert found.hidden == [".ipynb_checkpoints"]
    matrix = load_lm_eval_samples(tmp_path)
    assert matrix.model_names.tolist() == ["model"]
    assert matrix.correctness[0].tolist() == [1.0, 1.0]
    assert matrix.notes == ("not read as models: 1 folder (names starting with '.', such as "
                            "copies in .ipynb_checkpoints): .ipynb_checkpoints",)


def test_folders_not_read_as_models_are_named(tmp_path):
    write_samples(tmp_path / "model", "task", scored([0, 1], 1.0), OLD)
    write_samples(tmp_path / "rerun" / "org__model", "task", scored([0, 1], 0.0), NEW)
    (tmp_path / "crashed").mkdir()
    matrix = load_lm_eval_samples(tmp_path)
    assert matrix.model_names.tolist() == ["model"]
    assert matrix.notes == (
        "not read: 1 folder whose sample files lie deeper than a model's folder: rerun; "
        "point at the folder that holds one folder per model",
        "not read as models: 1 folder without sample files: crashed")
    # a model's own folder: its subfolders with sample files are not read either
    write_samples(tmp_path / "model" / "old", "task", scored([0], 0.0), OLD)
    assert load_lm_eval_samples(tmp_path / "model").notes == (
        "not read: 1 folder whose sample files lie deeper than a model's folder: old; "
        "point at the folder that holds one folder per model",)
    assert load_lm_eval_samples(tmp_path / "model" / "old").notes == ()


def test_only_nested_sample_files_is_an_error_that_names_them(tmp_path):
    write_samples(tmp_path / "run1" / "org__a", "task", scored([0], 1.0), OLD)
    with pytest.raises(DataError, match=r"no samples_\*\.jsonl files.* \(only deeper, in "
                                        r"run1\); point at the --output_path"):
        load_lm_eval_samples(tmp_path)


def test_models_without_the_asked_tasks_are_named(tmp_path):
    write_samples(tmp_path / "a", "t1", scored([0], 1.0), OLD)
    write_samples(tmp_path / "b", "t2", scored([0], 1.0), OLD)
    matrix = load_lm_eval_samples(tmp_path, tasks=["t1"])
    assert matrix.model_names.tolist() == ["a"]
    assert matrix.notes == ("1 model(s) with no file of the tasks t1 left out: b",)
    assert load_lm_eval_samples(tmp_path).notes == ()


def test_many_folders_are_listed_with_a_count_of_the_rest(tmp_path):
    write_samples(tmp_path / "model", "task", scored([0], 1.0), OLD)
    for k in range(7):
        (tmp_path / f"empty{k}").mkdir()
    assert load_lm_eval_samples(tmp_path).notes == (
        "not read as models: 7 folders without sample files: empty0, empty1, empty2, "
        "empty3, empty4, ... (2 more)",)


def test_only_hidden_folders_is_an_error_that_says_so(tmp_path):
    write_samples(tmp_path / ".hidden", "task", scored([0], 1.0), OLD)
    with pytest.raises(DataError, match=r"no samples_\*\.jsonl files.*skipped hidden "
                                        r"folders \['\.hidden'\]"):
        load_lm_eval_samples(tmp_path)


def test_holds_lm_eval_samples(tmp_path):
    path = write_samples(tmp_path / "m", "task", scored([0], 1.0), OLD)
    assert holds_lm_eval_samples(tmp_path) and holds_lm_eval_samples(tmp_path / "m")
    assert holds_lm_eval_samples(path)
    assert not holds_lm_eval_samples(tmp_path / "absent")
    (tmp_path / "empty").mkdir()
    assert not holds_lm_eval_samples(tmp_path / "empty")


# --- results of another task ----------------------------------------------------------


def test_another_task_says_no_items_match(tmp_path):
    write_samples(tmp_path / "m", "mdad_alpha", scored([0, 1], 1.0), OLD)
    write_samples(tmp_path / "m", "mdad_beta", scored([0], 1.0), OLD)
    with pytest.raises(DataError) as info:
        load_lm_eval_samples(tmp_path / "m", metric="acc_norm", tasks=["leaderboard_gpqa_main"])
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 'm'}: no samples of task leaderboard_gpqa_main; "
                              "these results hold tasks mdad_alpha, mdad_beta")
    assert "acc_norm" not in message and "\n" not in message


def test_tasks_reads_only_those_tasks(tmp_path):
    write_samples(tmp_path / "a", "wanted", scored([0, 1], 1.0), OLD)
    write_samples(tmp_path / "a", "other", [{"doc_id": 0, "no_metric": 1}], OLD)
    write_samples(tmp_path / "b", "other", scored([0], 1.0), OLD)  # left out: no 'wanted'
    matrix = load_lm_eval_samples(tmp_path, tasks={"wanted"})
    assert matrix.model_names.tolist() == ["a"]
    assert matrix.item_ids.tolist() == ["wanted/0", "wanted/1"]
    assert matrix.sha256 == files_sha256(
        [tmp_path / "a" / f"samples_wanted_{OLD}.jsonl"], tmp_path)


def test_many_wanted_tasks_are_shortened(tmp_path):
    write_samples(tmp_path, "arc", scored([0], 1.0), OLD)
    wanted = [f"mmlu_{k:02d}" for k in range(57)]
    with pytest.raises(DataError, match=r"no samples of tasks mmlu_00, mmlu_01, mmlu_02, "
                                        r"mmlu_03, mmlu_04 and 52 more; these results hold "
                                        r"tasks arc"):
        load_lm_eval_samples(tmp_path, tasks=wanted)


def test_filter_passes_use_the_first(tmp_path):
    gsm8k = read_records(pythia_file("gsm8k"), 3)
    second = copy.deepcopy(gsm8k)
    for record in second:
        record["filtered_resps"] = ["another extraction"]
    write_samples(tmp_path, "gsm8k", gsm8k + second)
    matrix = load_lm_eval_samples(tmp_path)
    assert matrix.correctness[0].tolist() == [0.0, 0.0, 0.0]
    assert matrix.confidence is None


def test_unfiltered_passes_that_disagree_are_refused(tmp_path):
    # Without a 'filter' field a second pass cannot be told from a stray copy: which
    # score is right is unknown, so neither is taken.
    gsm8k = read_records(pythia_file("gsm8k"), 3)
    second = copy.deepcopy(gsm8k)
    second[1]["exact_match"] = 1.0
    path = write_samples(tmp_path, "gsm8k", gsm8k + second)
    with pytest.raises(DataError, match=(
            rf"^{re.escape(str(path))}: line 5: doc_id 1 has exact_match 1 here and 0 on line "
            r"2, and the records have no 'filter' field to tell lm-eval's passes \(one per "
            r"filter\) from a stray copy; keep one pass, or add the harness's 'filter' field "
            r"to the records$")):
        load_lm_eval_samples(tmp_path)


def test_filter_field_distinguishes_passes(tmp_path):
    records = [{"doc_id": d, "filtered_resps": ["7"], "filter": f, "exact_match": float(k)}
               for k, f in enumerate(("strict-match", "flexible-extract")) for d in range(3)]
    write_samples(tmp_path, "gsm8k", records)
    assert load_lm_eval_samples(tmp_path).correctness[0].tolist() == [0.0, 0.0, 0.0]
    path = write_samples(tmp_path, "gsm8k", records[:3] + records[:3], "2025-01-01T00-00-00")
    with pytest.raises(DataError, match=rf"{re.escape(path.name)}: line 4: doc_id 0 appears"):
        load_lm_eval_samples(tmp_path)


def test_leaderboard_text_and_letter_targets(tmp_path):
    yes_no = {"gen_args_0": {"arg_0": "Q", "arg_1": " Yes"},
              "gen_args_1": {"arg_0": "Q", "arg_1": " No"}}
    bbh = [mc_record(0, [-0.5, -1.5], "No", 0.0, arguments=yes_no),
           mc_record(1, [-0.5, -1.5], "Yes", 1.0, arguments=yes_no)]
    for record in bbh:
        record["acc_norm"] = record.pop("acc")
        record["filter"], record["metrics"] = "none", ["acc_norm"]
    write_samples(tmp_path, "leaderboard_bbh_navigate", bbh, "2024-06-26T12-00-00.000000")
    letters = [mc_record(0, [-2.0, -1.0, -3.0, -4.0], "(B)", 1.0, arguments={}),
               mc_record(1, [-2.0, -1.0, -3.0, -4.0], " C ", 0.0, arguments={})]
    for record in letters:
        record["acc_norm"] = record.pop("acc")
    write_samples(tmp_path, "leaderboard_gpqa_main", letters, "2024-06-26T12-00-00.000000")

    matrix = load_lm_eval_samples(tmp_path, metric="acc_norm")
    assert matrix.model_names.tolist() == [tmp_path.name]
    assert matrix.item_ids.tolist() == [
        "leaderboard_bbh_navigate/0", "leaderboard_bbh_navigate/1",
        "leaderboard_gpqa_main/0", "leaderboard_gpqa_main/1"]
    assert matrix.correctness[0].tolist() == [0.0, 1.0, 1.0, 0.0]
    expected = [softmax_gold([-0.5, -1.5], 1), softmax_gold([-0.5, -1.5], 0),
                softmax_gold([-2, -1, -3, -4], 1), softmax_gold([-2, -1, -3, -4], 2)]
    np.testing.assert_allclose(matrix.confidence[0], expected, rtol=1e-6)
    with pytest.raises(DataError, match=r"no 'acc' field; the records of task "
                                        r"leaderboard_bbh_navigate have \['acc_norm'\]"):
        load_lm_eval_samples(tmp_path)


def test_gold_from_doc_fields(tmp_path):
    wino = read_records(pythia_file("winogrande"), 2)  # answer "1"/"2" is 1-based
    hella = mc_record(0, [-3.0, -2.0, -1.0], "unmatched text", 1.0, doc={"label": "2"})
    write_samples(tmp_path, "winogrande", wino)
    write_samples(tmp_path, "hellaswag", [hella])
    matrix = load_lm_eval_samples(tmp_path)
    lls = [[float(p[0]) for p in r["filtered_resps"]] for r in wino]
    gold = [int(r["doc"]["answer"]) - 1 for r in wino]
    expected = [softmax_gold([-3, -2, -1], 2)]
    expected += [softmax_gold(x, g) for x, g in zip(lls, gold, strict=True)]
    np.testing.assert_allclose(matrix.confidence[0], expected, rtol=1e-6)


def test_unresolvable_gold_is_nan(tmp_path):
    write_samples(tmp_path, "task", [mc_record(0, [-1.0, -2.0], "neither", 0.0, arguments={}),
                                     mc_record(1, [-1.0, -2.0], 1, 0.0)])
    conf = load_lm_eval_samples(tmp_path).confidence[0]
    assert np.isnan(conf[0]) and conf[1] == pytest.approx(softmax_gold([-1, -2], 1))


def test_hand_computed_softmax_from_nested_resps(tmp_path):
    record = mc_record(0, [-1.0, -2.0, -3.0], "0", "1.0")
    del record["filtered_resps"]  # falls back to `resps`, nested one level deeper
    write_samples(tmp_path, "task", [record])
    matrix = load_lm_eval_samples(tmp_path / f"samples_task_{STAMP}.jsonl")
    expected = math.exp(-1) / (math.exp(-1) + math.exp(-2) + math.exp(-3))
    assert expected == pytest.approx(0.6652, abs=1e-4)
    assert matrix.confidence[0, 0] == pytest.approx(expected, rel=1e-6)
    assert matrix.correctness[0, 0] == 1.0


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-5000, 0), min_size=1, max_size=8), st.data())
def test_softmax_is_stable(tmp_path_factory, lls, data):
    gold = data.draw(st.integers(0, len(lls) - 1))
    directory = tmp_path_factory.mktemp("softmax")
    write_samples(directory, "task", [mc_record(0, lls, gold, 0.0)])
    conf = load_lm_eval_samples(directory).confidence[0, 0]
    assert conf == pytest.approx(softmax_gold(lls, gold), rel=1e-5, abs=1e-30)


def test_doc_ids_sort_numerically(tmp_path):
    write_samples(tmp_path, "task", [mc_record(d, [-1.0], 0, 1.0) for d in (10, 2, 1)])
    matrix = load_lm_eval_samples(tmp_path)
    assert matrix.item_ids.tolist() == ["task/1", "task/2", "task/10"]


# --- malformed input ------------------------------------------------------------------


def test_invalid_json_line(tmp_path):
    path = write_samples(tmp_path, "task", [mc_record(0, [-1.0], 0, 1.0)])
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"doc_id": 1, "acc": \n')
    with pytest.raises(DataError, match=rf"^{re.escape(str(path))}: line 2: not valid JSON \("):
        load_lm_eval_samples(tmp_path)


def test_record_without_doc_id(tmp_path):
    path = write_samples(tmp_path, "task", [mc_record(0, [-1.0], 0, 1.0), {"acc": 1.0}])
    with pytest.raises(DataError, match=rf"{re.escape(path.name)}: line 2: .*without 'doc_id'"):
        load_lm_eval_samples(tmp_path)


def test_repeated_doc_id(tmp_path):
    records = [mc_record(d, [-1.0], 0, 1.0) for d in (0, 1, 1, 2)]
    path = write_samples(tmp_path, "task", records)
    with pytest.raises(DataError, match=rf"{re.escape(path.name)}: line 3: doc_id 1 appears "
                                        r"again \(first on line 2\)"):
        load_lm_eval_samples(tmp_path)


def test_truncated_second_pass(tmp_path):
    records = [mc_record(d, [-1.0], 0, 1.0) for d in (0, 1, 2, 0)]
    with pytest.raises(DataError, match=r"repeat the documents only partly"):
        load_lm_eval_samples(write_samples(tmp_path, "task", records))


def test_non_numeric_metric(tmp_path):
    write_samples(tmp_path, "task", [mc_record(0, [-1.0], 0, "yes")])
    with pytest.raises(DataError, match=r"line 1: acc is 'yes', not a score in \[0, 1\]"):
        load_lm_eval_samples(tmp_path)


def test_empty_directory(tmp_path):
    (tmp_path / "model").mkdir()
    with pytest.raises(DataError, match=r"no samples_\*\.jsonl files"):
        load_lm_eval_samples(tmp_path)


def test_missing_path(tmp_path):
    with pytest.raises(DataError, match="no such file or directory"):
        load_lm_eval_samples(tmp_path / "absent")


def test_messages_are_one_line(tmp_path):
    path = write_samples(tmp_path, "task", [mc_record(0, [-1.0], 0, 1.0)])
    path.write_text("not json\n", encoding="utf-8")
    with pytest.raises(DataError) as info:
        load_lm_eval_samples(path)
    assert "\n" not in str(info.value)


# --- `mdad data info` lists the files read ------------------------------------------



def test_data_info_lists_the_files_per_model(tmp_path):
    a_old = write_samples(tmp_path / "org__a", "task", scored([0, 1, 2], 0.0), OLD)
    a_new = write_samples(tmp_path / "org__a", "task", scored([1], 1.0), NEW)
    b = write_samples(tmp_path / "org__b", "task", scored([0, 1, 2], 1.0), MID)
    write_samples(tmp_path / ".ipynb_checkpoints", "task", scored([0], 1.0), NEW)
    proc = mdad_cli("data", "info", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    listing = proc.stdout[proc.stdout.index("files read, per model"):].splitlines()
    assert listing == [
        "files read, per model; 1 model has several files of a task, merged by doc_id, "
        "the newest timestamp winning for a doc in several:",
        "  org__a", f"    {a_old.name}", f"    {a_new.name}",
        "  org__b", f"    {b.name}",
        "note: not read as models: 1 folder (names starting with '.', such as copies in "
        ".ipynb_checkpoints): .ipynb_checkpoints"]


def test_data_info_error_is_one_line(tmp_path):
    write_samples(tmp_path / ".hidden", "task", scored([0], 1.0), OLD)
    proc = mdad_cli("data", "info", str(tmp_path))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "skipped hidden folders ['.hidden']" in proc.stderr


def test_every_command_s_load_notices_carry_the_loader_s_notes(tmp_path):
    from mdad.cli.render import load_notices
    from mdad.data import load_dataset

    write_samples(tmp_path / "model", "task", scored([0, 1], 1.0), OLD)
    (tmp_path / "crashed").mkdir()
    assert load_notices(load_dataset(tmp_path)) == [
        "not read as models: 1 folder without sample files: crashed"]


@pytest.mark.parametrize("change, message", [
    ({"doc_id": None}, r"line 2: doc_id is None; lm-eval writes the document's index"),
    ({"doc_id": 1.5}, r"line 2: doc_id is 1\.5;"),
    ({"doc_id": True}, r"line 2: doc_id is True;"),
    ({"doc_id": [1]}, r"line 2: doc_id is \[1\];"),
    ({"doc_id": " "}, r"line 2: doc_id is ' ';"),
    ({"acc": float("nan")}, r"line 2: acc is nan, not a score in \[0, 1\]; fix that record, "
                            r"or choose another --metric"),
    ({"acc": 2.0}, r"line 2: acc is 2\.0, not a score in \[0, 1\]"),
    ({"acc": "yes"}, r"line 2: acc is 'yes', not a score"),
    ({"filtered_resps": [["NaN", "False"], ["-2.0", "False"]]},
     r"line 2: an option's log-likelihood is nan, so its confidence is unknown"),
    ({"filtered_resps": [["Infinity", "False"], ["-2.0", "False"]]},
     r"line 2: an option's log-likelihood is inf"),
])
def test_a_bad_record_is_refused_naming_its_line(tmp_path, change, message):
    records = scored([0, 1], 1.0)
    records[1].update(change)
    path = write_samples(tmp_path, "task", records)
    with pytest.raises(DataError, match=rf"{re.escape(str(path))}: {message}"):
        load_lm_eval_samples(path)


# --- the exact_match fallback for generative tasks -------------------------------------


def test_fallback_to_exact_match_is_noted(pythia):
    assert pythia.notes == (
        "1 task(s) without acc scored by exact_match instead (generative records, no option "
        "log-likelihoods), for 1 model(s): metabench_gsm8k_secondary",)
    only_choice = load_lm_eval_samples(pythia_dir(), tasks={"metabench_arc_secondary"})
    assert only_choice.notes == ()
    asked = load_lm_eval_samples(pythia_file("gsm8k"), metric="exact_match")
    assert asked.notes == ()


def test_fallback_refused_when_the_metric_is_the_measurement():
    with pytest.raises(DataError, match=(
            rf"^{re.escape(str(pythia_file('gsm8k')))}: line 1: these records hold only "
            r"exact_match \(a generative task's\), no 'acc_norm', which is what is measured; "
            r"run the model on the multiple-choice task, or use a micro-benchmark or test "
            r"measured by --metric exact_match$")):
        load_lm_eval_samples(pythia_dir(), metric="acc_norm", fallback_metric=False)
    matrix = load_lm_eval_samples(pythia_dir(), metric="acc", fallback_metric=False,
                                  tasks={"metabench_arc_secondary"})
    assert matrix.n_items == 100
    generative = load_lm_eval_samples(pythia_file("gsm8k"), metric="exact_match",
                                      fallback_metric=False)
    assert generative.n_items == 249
