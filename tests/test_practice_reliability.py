"""Issue 11 for plan, select, estimate and compare: a censored MDAD is never a number,
plan says what it is measured against, estimate and compare never judge from items
they did not see, and both follow one rule for "reliably above / below"."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import GPQA_CSV, assert_ok, assert_user_error, flat, mdad_cli, shared_data

from mdad.cli.errors import as_options
from mdad.data import MissingPolicy, ResponseMatrix
from mdad.data.missing import MissingReport
from mdad.data.registry import Dataset
from mdad.errors import ConfigError, DataError
from mdad.practice import (
    RULE,
    ItemScores,
    MicroBenchmarkFile,
    analytic_mdad,
    compare_models,
    estimate_score,
    pair_structure,
    plan,
    read_model_scores,
    select_microbenchmark,
    select_microbenchmarks,
    size_for_gap,
)
from mdad.practice.estimators import estimates_of
from mdad.practice.sizing import StudyPoint, _study_point, interpolate, study_mdad_curve
from mdad.study.folder import censor_legacy

INTEL, LLAMA = "Intel__neural-chat-7b-v3-3", "meta-llama__Llama-2-13b-chat-hf"


# --- hand-made data ---------------------------------------------------------------

def irt_matrix(n_models: int = 40, n_items: int = 60, seed: int = 0,
               item_ids: list[str] | None = None) -> ResponseMatrix:
    """A small 1-D IRT-like 0/1 matrix with two subtasks."""
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=n_models)
    difficulty = rng.normal(size=n_items)
    p = 1 / (1 + np.exp(-(ability[:, None] - difficulty[None, :])))
    correctness = (rng.random((n_models, n_items)) < p).astype(np.uint8)
    ids = item_ids or [f"q{j}" for j in range(n_items)]
    return ResponseMatrix(correctness, np.array([f"m{i}" for i in range(n_models)]),
                          np.array(ids), subtasks=np.repeat(["s0", "s1"], n_items // 2),
                          source="hand-made", sha256="a" * 64)


def as_dataset(matrix: ResponseMatrix, name: str = "tiny") -> Dataset:
    return Dataset(name, matrix, Path(name),
                   MissingReport(MissingPolicy.DROP_ITEMS, 0, (), (), {}), None)


def write_csv(path: Path, correctness: np.ndarray, *, empty: tuple[int, int] | None = None
              ) -> Path:
    """Items as rows: item_id, then one column per model m0, m1, ..."""
    n_models, n_items = correctness.shape
    lines = ["item_id," + ",".join(f"m{i}" for i in range(n_models))]
    for j in range(n_items):
        cells = [str(int(correctness[i, j])) for i in range(n_models)]
        if empty is not None and empty[1] == j:
            cells[empty[0]] = ""
        lines.append(f"q{j}," + ",".join(cells))
    path.write_text("\n".join(lines) + "\n")
    return path


def answers(bundle: MicroBenchmarkFile, row: np.ndarray, name: str,
            answered: np.ndarray | None = None) -> ItemScores:
    scores = np.asarray(row, dtype=np.float64).copy()
    missing = []
    if answered is not None:
        scores[~answered] = np.nan
        missing = [item for item, seen in zip(bundle.items, answered, strict=True) if not seen]
    return ItemScores(name, scores, missing, 0)


def results_csv(path: Path, bundle: MicroBenchmarkFile, row: np.ndarray,
                keep: int | None = None) -> Path:
    items = bundle.items[:keep] if keep is not None else bundle.items
    lines = ["item_id,correct", *(f"{i},{int(s)}" for i, s in zip(items, row, strict=False))]
    path.write_text("\n".join(lines) + "\n")
    return path


def assert_consistent(bundle: MicroBenchmarkFile, new: ItemScores) -> dict[str, int]:
    """Every above/below of estimate is the winner compare names, and its full accuracy
    lies outside the 99.9% interval, at least the MDAD from the estimate; a too-close
    model may have a compare winner (the lists are stricter). Returns how many of each
    were seen, with "separated" counting too-close models compare separates."""
    from mdad.practice.estimate import LIST_CONFIDENCE
    from mdad.practice.intervals import accuracy_interval

    estimate = estimate_score(bundle, new, allow_partial=True)
    strict = accuracy_interval(bundle, estimate.accuracy, estimate.items_used,
                               LIST_CONFIDENCE)
    references = bundle.reference_scores()
    seen = {"above": 0, "below": 0, "too_close": 0, "separated": 0}
    above, below = set(estimate.above), set(estimate.below)
    for name, row, truth in zip(bundle.reference_models, references,
                                bundle.reference_accuracy, strict=True):
        comparison = compare_models(bundle, new, ItemScores(name, row, [], 0),
                                    allow_partial=True)
        if name in above:
            assert comparison.winner == new.model, (new.model, name, comparison)
            assert truth < strict.low and estimate.accuracy - truth >= estimate.mdad - 1e-9
            seen["above"] += 1
        elif name in below:
            assert comparison.winner == name, (new.model, name, comparison)
            assert truth > strict.high and truth - estimate.accuracy >= estimate.mdad - 1e-9
            seen["below"] += 1
        else:
            seen["too_close"] += 1
            seen["separated"] += comparison.winner is not None
    return seen


@pytest.fixture(scope="module")
def gpqa_random_100(gpqa_data):
    return select_microbenchmark(gpqa_data, "random", 100, seed=1)


# --- 1 and 3: censored MDAD in plan -----------------------------------------------

def test_analytic_mdad_is_censored_not_a_number():
    matrix = irt_matrix()
    structure = pair_structure(matrix.correctness, matrix.subtask_codes)
    result = analytic_mdad(structure, 1)
    assert result.value is None and not result.reached
    assert result.max_gap == pytest.approx(np.abs(structure.gap).max())
    assert result.pairs == 40 * 39 // 2 and result.differing <= result.pairs
    assert analytic_mdad(structure, 60, against="full").reached  # the whole pool: exact


def test_analytic_mdad_counts_the_pairs_of_the_bin_that_sets_it():
    """The whole pool ranks every differing pair right: the MDAD is the smallest gap's
    bin, here the 2 pairs 1 item (5 points) apart of accuracies 10, 11, 12 and 18 of
    20; not reached at 1 item, where no pair counts."""
    rows = np.zeros((4, 20))
    for row, correct in zip(rows, (10, 11, 12, 18), strict=True):
        row[:correct] = 1
    structure = pair_structure(rows, np.zeros(20, dtype=int))
    whole = analytic_mdad(structure, 20)
    assert whole.value == pytest.approx(0.05) and whole.crossing_pairs == 2
    assert analytic_mdad(structure, 1).crossing_pairs == 0


def test_gpqa_mdad_set_by_a_handful_of_pairs_says_so(gpqa_data, tmp_path: Path):
    """GPQA's MDAD of 9 and 10 random items is set by bins of 1 and 3 of its 87,990
    pairs: plan, select, estimate and compare say so, and the file keeps the counts."""
    structure = pair_structure(gpqa_data.matrix.correctness, gpqa_data.matrix.subtask_codes)
    assert [analytic_mdad(structure, n).crossing_pairs for n in (8, 9, 10, 50)] == [
        0, 1, 3, 2565]
    note = r"note: the MDAD is set by the 1 model pair of its gap bin alone \(fewer than " \
        r"30; 87,990 pairs in all\)"
    proc = mdad_cli("plan", "gpqa", "--size", "9", cwd=tmp_path)
    assert_ok(proc)
    assert re.search(note, flat(proc.stderr))
    answer = json.loads(mdad_cli("plan", "gpqa", "--size", "9", "--json",
                                 cwd=tmp_path).stdout)
    assert answer["crossing_pairs"] == 1 and answer["pairs"] == 87990
    mb = tmp_path / "mb.json"
    assert_ok(mdad_cli("select", "gpqa", "--method", "random", "--size", "10", "--out", mb,
                       cwd=tmp_path))
    assert json.loads(mb.read_text())["mdad_curve_crossing_pairs"][8:] == [1, 3]
    answers = tmp_path / "a.csv"
    assert_ok(mdad_cli("data", "answers", "gpqa", "--model", "bigscience__bloom-3b",
                       "--items", mb, "--out", answers, cwd=tmp_path))
    three = note.replace("the 1 model pair", "the 3 model pairs")
    for command in (("estimate", mb, answers), ("compare", mb, answers, answers)):
        proc = mdad_cli(*command, cwd=tmp_path)
        assert_ok(proc)
        assert re.search(three, flat(proc.stderr)), command
    # judged from 9 answered items, the 9-item MDAD's single pair is named
    pd.read_csv(answers).iloc[:-1].to_csv(answers, index=False)
    proc = mdad_cli("estimate", mb, answers, "--allow-partial", "--json", cwd=tmp_path)
    assert_ok(proc)
    assert json.loads(proc.stdout)["mdad_crossing_pairs"] == 1
    proc = mdad_cli("plan", "gpqa", "--size", "50", cwd=tmp_path)
    assert_ok(proc)
    assert "gap bin alone" not in proc.stderr
    # a /2 file cannot say: estimate says that instead of nothing
    mb.write_text(json.dumps(older_file(json.loads(mb.read_text()), "mdad-microbenchmark/2")))
    proc = mdad_cli("estimate", mb, answers, "--allow-partial", cwd=tmp_path)
    assert_ok(proc)
    assert "gap bin alone" not in proc.stderr
    assert re.search(r"note: .*mb\.json \(format mdad-microbenchmark/2\) does not record how "
                     r"many model pairs set its MDAD", flat(proc.stderr))


@pytest.mark.parametrize("kind", ["identical", "all-correct", "all-wrong"])
def test_degenerate_data_says_no_pair_differs(kind: str, tmp_path: Path):
    rng = np.random.default_rng(0)
    row = rng.integers(0, 2, 30)
    values = {"identical": np.tile(row, (5, 1)), "all-correct": np.ones((5, 30)),
              "all-wrong": np.zeros((5, 30))}[kind]
    matrix = ResponseMatrix(values, np.array([f"m{i}" for i in range(5)]),
                            np.array([f"q{j}" for j in range(30)]))
    answer = plan(as_dataset(matrix), size=10)
    assert answer.mdad is None and not answer.reached
    assert answer.differing_pairs == 0 and answer.pairs == 10
    path = write_csv(tmp_path / "flat.csv", values)
    proc = mdad_cli("plan", path, "--size", "10", "--json", cwd=tmp_path)
    assert_ok(proc)
    assert json.loads(proc.stdout)["mdad"] is None
    assert "no pair of models differs (all 10 pairs have the same accuracy): MDAD cannot be " \
           "measured" in flat(proc.stderr)


def test_few_differing_pairs_are_named(tmp_path: Path):
    values = np.zeros((4, 30), dtype=int)
    values[0, :3] = 1  # only model 0 differs from the others: 3 of 6 pairs
    proc = mdad_cli("plan", write_csv(tmp_path / "few.csv", values), "--size", "10",
                    cwd=tmp_path)
    assert_ok(proc)
    assert "only 3 of 6 pairs of models differ" in flat(proc.stderr)


@pytest.mark.slow
def test_plan_not_reached_is_null_and_says_so(gpqa_data, tmp_path: Path):
    answer = plan(gpqa_data, size=2)
    assert answer.mdad is None and not answer.reached and answer.pairs == 420 * 419 // 2
    assert answer.max_gap == pytest.approx(0.24553571428571427)
    proc = mdad_cli("plan", "gpqa", "--size", "2", "--json", cwd=tmp_path)
    assert_ok(proc)
    assert json.loads(proc.stdout)["mdad"] is None and '"mdad": null' in proc.stdout
    proc = mdad_cli("plan", "gpqa", "--size", "2", cwd=tmp_path)
    assert ("MDAD not reached within the observed gaps (> 24.6 points, the largest gap "
            "between the dataset's models)") in flat(proc.stdout)
    assert "from 87,990 model pairs" in flat(proc.stdout)


def test_size_for_gap_treats_unreached_as_above_every_gap():
    matrix = irt_matrix()
    structure = pair_structure(matrix.correctness, matrix.subtask_codes)
    size, result = size_for_gap(structure, 0.0001, against="universe")
    assert size == 60 and not (result.reached and result.value <= 0.0001)
    size, result = size_for_gap(structure, 0.2)
    assert result.reached and result.value <= 0.2
    assert not (analytic_mdad(structure, size - 1).value or 1.0) <= 0.2


# --- 6: what plan measures against -------------------------------------------------

@pytest.mark.slow
def test_plan_against_full_and_universe(gpqa_data, tmp_path: Path):
    full, universe = plan(gpqa_data, size=100), plan(gpqa_data, size=100, against="universe")
    assert (full.against, universe.against) == ("full", "universe")
    assert full.mdad == pytest.approx(0.05)  # the documented number stays
    assert universe.mdad > full.mdad  # no finite population correction
    whole = plan(gpqa_data, size="all", against="universe")
    assert whole.size == 448 and whole.reached and 0 < whole.mdad < universe.mdad
    proc = mdad_cli("plan", "gpqa", "--size", "all", "--against", "universe", "--json",
                    cwd=tmp_path)
    assert_ok(proc)
    answer = json.loads(proc.stdout)
    assert answer["against"] == "universe" and answer["size"] == 448
    assert answer["mdad"] == pytest.approx(whole.mdad)
    proc = mdad_cli("plan", "gpqa", "--size", "100", cwd=tmp_path)
    assert "Measured against the full benchmark" in flat(proc.stdout)
    assert_user_error(mdad_cli("plan", "gpqa", "--size", "10", "--against", "moon",
                               cwd=tmp_path), r"--against must be full or universe")


def test_study_rows_old_and_new_and_no_interpolation_through_unreached():
    legacy = censor_legacy(pd.DataFrame([{"size": 10, "mdad": 0.5}]))  # as read_study_folder reads
    old = _study_point(legacy.to_dict("records")[0])
    assert old.value is None and old.pairs is None  # an old folder's 0.5 was "not reached"
    new = _study_point({"size": 10, "mdad": float("nan"), "reached": False, "max_gap": 0.2,
                        "pairs": 1225})
    assert new.value is None and new.max_gap == 0.2 and new.pairs == 1225
    assert _study_point({"size": 25, "mdad": 0.06, "reached": "true"}).value == 0.06
    curve = [StudyPoint(10, None, 0.2, 100), StudyPoint(25, 0.08, 0.2, 100),
             StudyPoint(50, 0.05, 0.2, 100)]
    assert interpolate(curve, gap=None, size=20)[1].value is None
    assert interpolate(curve, gap=None, size=25)[1].value == 0.08
    assert 0.05 < interpolate(curve, gap=None, size=30)[1].value < 0.08
    assert interpolate(curve, gap=0.1, size=None)[0] == 25  # not through size 10
    assert interpolate(curve, gap=0.01, size=None)[0] is None
    known = study_mdad_curve(curve, 40)
    assert list(known) == list(range(10, 41)) and known[15] is None and known[40] is not None


def test_a_point_between_a_flagged_row_and_another_is_flagged():
    curve = [StudyPoint(10, 0.2, 0.3, 100, thin=True), StudyPoint(25, 0.08, 0.3, 5000),
             StudyPoint(50, 0.05, 0.3, 5000)]
    assert interpolate(curve, gap=None, size=20)[1].thin
    assert not interpolate(curve, gap=None, size=30)[1].thin
    assert interpolate(curve, gap=0.1, size=None)[1].thin  # between 10 and 25 items
    assert not interpolate(curve, gap=0.06, size=None)[1].thin


def test_plan_from_a_thin_study_says_so(tmp_path: Path):
    """Three targets make 3 pairs: the study notes that no MDAD can be measured, and a
    plan interpolated from it once printed a confident size with no word of that (and
    then a value with a note): now it gives none."""
    shared_data(GPQA_CSV)
    study = tmp_path / "t3"
    assert_ok(mdad_cli("run", "gpqa", "--methods", "subtask-proportional", "--runs", "1",
                       "--targets", "3", "--sources", "10", "--sizes", "10,50", "--out", study,
                       cwd=tmp_path))
    for option in ("--size", "30"), ("--gap", "0.04"):
        proc = mdad_cli("plan", "gpqa", "--method", "subtask-proportional", *option,
                        "--run", study, cwd=tmp_path)
        assert_ok(proc)
        assert "note: the study's notes say no MDAD can be measured at the rows this " \
            "answer is interpolated from" in flat(proc.stderr)
        assert "no MDAD can be measured" in flat(proc.stdout)
        assert "from 3 model pairs" in flat(proc.stdout)
        assert "3.6" not in proc.stdout  # the targets' spread is no bound on a MDAD
    answer = json.loads(mdad_cli("plan", "gpqa", "--method", "subtask-proportional",
                                 "--size", "30", "--run", study, "--json",
                                 cwd=tmp_path).stdout)
    assert answer["thin"] is True and answer["measurable"] is False
    assert answer["mdad"] is None and answer["max_gap"] is None
    # a micro-benchmark that takes its MDAD from that study carries its 3 pairs on
    few = r"note: the MDAD rests on only 3 model pairs \(fewer than 1,000\)"
    mb = tmp_path / "mb.json"
    proc = mdad_cli("select", "gpqa", "--method", "subtask-proportional", "--size", "30",
                    "--run", study, "--out", mb, cwd=tmp_path)
    assert_ok(proc)
    assert re.search(few, flat(proc.stderr))
    answers = tmp_path / "a.csv"
    assert_ok(mdad_cli("data", "answers", "gpqa", "--model", "bigscience__bloom-3b",
                       "--items", mb, "--out", answers, cwd=tmp_path))
    for command in (("estimate", mb, answers), ("compare", mb, answers, answers)):
        proc = mdad_cli(*command, cwd=tmp_path)
        assert_ok(proc)
        assert re.search(few, flat(proc.stderr)), command
    proc = mdad_cli("plan", "gpqa", "--size", "10", cwd=tmp_path)  # 87,990 pairs
    assert_ok(proc)
    assert "rests on only" not in proc.stderr


# --- the file -----------------------------------------------------------------------

def older_file(data: dict, fmt: str) -> dict:
    """`data` as a file of format /3 or /2 was written: without /4's fields (and /2
    without the crossing counts)."""
    from mdad.practice.bundle_format import NEW_IN_4

    old = {k: v for k, v in data.items() if k not in NEW_IN_4}
    if fmt.endswith("/2"):
        del old["mdad_curve_crossing_pairs"]
    return {**old, "format": fmt}


def test_file_format_5_reads_3_and_2_and_refuses_older(tmp_path: Path):
    bundle = select_microbenchmark(as_dataset(irt_matrix()), "random", 10, seed=0)
    path = tmp_path / "mb.json"
    bundle.save(path)
    loaded = MicroBenchmarkFile.load(path)
    assert loaded.format == "mdad-microbenchmark/5"
    assert loaded.mdad_curve_sizes == list(range(1, 11)) and len(loaded.mdad_curve) == 10
    crossing = loaded.mdad_curve_crossing_pairs
    assert [count == 0 for count in crossing] == [v is None for v in loaded.mdad_curve]
    assert loaded.reference_scores().shape == (40, 10)
    data = json.loads(path.read_text())
    # a /2 file (no crossing counts) reads as not recorded, and stays /2 saved again
    three = older_file(data, "mdad-microbenchmark/3")
    path.write_text(json.dumps(three))
    assert MicroBenchmarkFile.load(path).source_models is None
    path.write_text(json.dumps(older_file(data, "mdad-microbenchmark/2")))
    old = MicroBenchmarkFile.load(path)
    assert old.crossing_pairs_at(10) is None and old.format == "mdad-microbenchmark/2"
    assert old.mdad_curve == loaded.mdad_curve
    old.save(path)
    assert MicroBenchmarkFile.load(path).format == "mdad-microbenchmark/2"
    reached = crossing.index(next(c for c in crossing if c))
    for edited, message in (
            ({"mdad_curve_crossing_pairs": [1, 2]}, "one count of pairs per size"),
            ({"mdad_curve_crossing_pairs": None}, "one count of pairs per size"),
            ({"mdad_curve_crossing_pairs": [*crossing[:reached], 0, *crossing[reached + 1:]]},
             "0 exactly where the MDAD is not reached"),
            ({"mdad_curve_crossing_pairs": [c + 1 for c in crossing]},
             "0 exactly where the MDAD is not reached"),
            ({"mdad_curve_crossing_pairs": [c * 10**6 for c in crossing]},
             "one count of pairs per size"),  # more than the pairs in all
            ({"format": "mdad-microbenchmark/2"}, "null or absent in a format /2 file")):
        path.write_text(json.dumps({**data, **edited}))
        with pytest.raises(DataError, match=f"'mdad_curve_crossing_pairs' must be .*{message}"):
            MicroBenchmarkFile.load(path)
    data["format"] = "mdad-microbenchmark/1"
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match=r"format mdad-microbenchmark/1, this version reads "
                                        r"mdad-microbenchmark/2 to mdad-microbenchmark/5.*"
                                        r"select again"):
        MicroBenchmarkFile.load(path)


@pytest.mark.parametrize(("method", "caveat"), [("anchor-points", True),
                                               ("anchor-points-predictor", True),
                                               ("confidence-strata", False)])
def test_a_format_4_file_of_a_confidence_estimator_says_how_it_was_calibrated(
        method, caveat, tmp_path: Path):
    # /4 estimated the held-out models of Anchor Points' estimators from their
    # confidences; its interval is read as it was, and says so
    bundle = select_microbenchmark(as_dataset(irt_matrix()), method, 10, seed=0)
    path = tmp_path / "mb.json"
    path.write_text(json.dumps({**json.loads(bundle.to_json()),
                                "format": "mdad-microbenchmark/4"}))
    old = MicroBenchmarkFile.load(path)
    assert old.calibration() is not None and old.cv_estimate == bundle.cv_estimate
    new = ItemScores("new", bundle.reference_scores()[0], [], 0)
    how = estimate_score(old, new).interval_how
    assert ("not their scores" in how and "select again" in how) == caveat, how
    assert "not their scores" not in estimate_score(bundle, new).interval_how
    old.save(path)  # saved again, still /4 with its pairs
    assert MicroBenchmarkFile.load(path).cv_estimate == bundle.cv_estimate


def test_select_records_the_tasks_for_lm_eval(tmp_path: Path):
    ids = [f"task_{'a' if j < 50 else 'b'}/{j}" for j in range(60)]
    matrix = irt_matrix(item_ids=ids)
    bundle = select_microbenchmark(as_dataset(matrix), "random", 5, seed=3)
    tasks = sorted({item.split("/")[0] for item in bundle.items})
    assert bundle.lm_eval_tasks == tasks and set(tasks) <= {"task_a", "task_b"}


def test_select_prints_the_tasks_and_writes_them(gpqa_data, tmp_path: Path):
    out = tmp_path / "mb.json"
    proc = mdad_cli("select", "gpqa", "--method", "random", "--size", "10", "--out", out,
                    "--format", "lm-eval", cwd=tmp_path)
    assert_ok(proc)
    assert "--tasks leaderboard_gpqa_main" in flat(proc.stdout)
    assert MicroBenchmarkFile.load(out).lm_eval_tasks == ["leaderboard_gpqa_main"]
    assert MicroBenchmarkFile.load(out).lm_eval_metric == "acc_norm"


@pytest.mark.slow
def test_select_plan_and_estimate_print_the_drop_notice(tmp_path: Path):
    values = irt_matrix().correctness
    path = write_csv(tmp_path / "holes.csv", values, empty=(3, 7))
    out = tmp_path / "mb.json"
    for args in (("plan", path, "--size", "10"),
                 ("select", path, "--method", "random", "--size", "10", "--out", out)):
        proc = mdad_cli(*args, cwd=tmp_path)
        assert_ok(proc)
        assert "note: dropped 1 items that lack a result" in flat(proc.stderr), args
    bundle = MicroBenchmarkFile.load(out)
    row = values[0, [int(i[1:]) for i in bundle.items]]
    proc = mdad_cli("estimate", out, results_csv(tmp_path / "m0.csv", bundle, row),
                    "--dataset", path, cwd=tmp_path)
    assert_ok(proc)
    assert "note: dropped 1 items that lack a result" in flat(proc.stderr)


# --- 4: never judge from items not seen --------------------------------------------

@pytest.mark.slow
def test_one_of_twenty_items_is_refused_unless_partial(tmp_path: Path):
    matrix = irt_matrix()
    bundle = select_microbenchmark(as_dataset(matrix), "random", 20, seed=0)
    out = tmp_path / "mb.json"
    bundle.save(out)
    row = matrix.correctness[0, [int(i[1:]) for i in bundle.items]]
    one = results_csv(tmp_path / "one.csv", bundle, row, keep=1)
    assert_user_error(mdad_cli("estimate", out, one, cwd=tmp_path),
                      r"one: 19 of the micro-benchmark's 20 items are missing; run them, or "
                      r"pass --allow-partial")
    proc = mdad_cli("estimate", out, one, "--allow-partial", "--json", cwd=tmp_path)
    assert_ok(proc)
    answer = json.loads(proc.stdout)
    assert answer["partial"] and answer["items_used"] == 1 and answer["size"] == 20
    assert answer["mdad"] == bundle.mdad_curve[0]  # the MDAD of 1 item: not reached
    assert answer["mdad"] is None and not answer["above"] and not answer["below"]
    assert answer["accuracy"] == row[0] and answer["confidence"] == 0.95
    # the interval is one item's: Wilson with n = 1, about 0-79 points when right
    assert answer["high"] - answer["low"] > 0.6
    proc = mdad_cli("estimate", out, one, "--allow-partial", cwd=tmp_path)
    text = flat(proc.stdout)
    assert "PARTIAL: 1 of the 20 items answered" in text
    assert "no model is reliably above or below: the MDAD is not reached" in text
    two = results_csv(tmp_path / "two.csv", bundle, matrix.correctness[1, [
        int(i[1:]) for i in bundle.items]])
    assert_user_error(mdad_cli("compare", out, one, two, cwd=tmp_path),
                      r"19 of the micro-benchmark's 20 items are missing")
    proc = mdad_cli("compare", out, one, two, "--allow-partial", "--json", cwd=tmp_path)
    assert_ok(proc)
    answer = json.loads(proc.stdout)
    assert answer["items_used"] == 1 and answer["partial"] and answer["winner"] is None
    assert "not reached" in answer["reason"]


def test_partial_linear_estimate_is_reweighted_over_answered_items():
    matrix = irt_matrix()
    bundle = select_microbenchmark(as_dataset(matrix), "subtask-equal", 20, seed=0)
    row = matrix.correctness[5, [int(i[1:]) for i in bundle.items]].astype(float)
    answered = np.arange(20) < 13
    estimate = estimate_score(bundle, answers(bundle, row, "x", answered),
                              allow_partial=True)
    weights = (np.ones(20) if bundle.estimator["weights"] is None
               else np.asarray(bundle.estimator["weights"]))[answered]
    assert estimate.accuracy == pytest.approx(row[answered] @ weights / weights.sum())
    assert estimate.mdad == bundle.mdad_curve[12] and estimate.items_used == 13
    with pytest.raises(DataError, match="7 of the micro-benchmark's 20 items are missing"):
        estimate_score(bundle, answers(bundle, row, "x", answered))


def test_library_errors_name_python_parameters(tmp_path: Path):
    """The library says allow_partial and metric; only the CLI says --allow-partial."""
    matrix = irt_matrix()
    bundle = select_microbenchmark(as_dataset(matrix), "random", 20, seed=0)
    row = matrix.correctness[0, [int(i[1:]) for i in bundle.items]].astype(float)
    with pytest.raises(DataError, match=r"^x: 7 of .* items are missing; run them, or pass "
                                        r"allow_partial to judge") as caught:
        estimate_score(bundle, answers(bundle, row, "x", np.arange(20) < 13))
    assert caught.value.parameters == ("allow_partial",)
    path = results_csv(tmp_path / "m.csv", bundle, row)
    built_on = bundle.lm_eval_metric
    other = "acc_norm" if built_on != "acc_norm" else "acc"
    with pytest.raises(ConfigError, match=rf"^metric {other}: the micro-benchmark was built "
                                          rf"on {built_on}; .*\(pass allow_other_metric "
                                          "to use it anyway") as caught:
        read_model_scores(path, bundle, metric=other)
    assert caught.value.parameters == ("metric", "allow_other_metric")
    assert "--" not in str(caught.value)
    assert as_options(str(caught.value), caught.value.parameters).startswith(
        f"--metric {other}: the micro-benchmark was built on {built_on}; ")
    scores = read_model_scores(path, bundle, metric=other, allow_other_metric=True)
    assert scores.model == "m" and np.array_equal(scores.scores, row)


# --- 5: one rule ---------------------------------------------------------------------

def test_compare_a_model_with_itself(gpqa_data, gpqa_random_100, tmp_path: Path):
    out = tmp_path / "mb.json"
    gpqa_random_100.save(out)
    model = list(gpqa_data.matrix.model_names).index(INTEL)
    column = {str(i): k for k, i in enumerate(gpqa_data.matrix.item_ids)}
    row = gpqa_data.matrix.correctness[model, [column[i] for i in gpqa_random_100.items]]
    path = results_csv(tmp_path / f"{INTEL}.csv", gpqa_random_100, row)
    proc = mdad_cli("compare", out, path, path, "--json", cwd=tmp_path)
    assert_ok(proc)
    answer = json.loads(proc.stdout)
    # the same answers on 100 of 448 items: no difference, and not a width of 0 (Bonett
    # and Price's interval: variance 2 / 102^2, finite-population corrected)
    half = 1.959963984540054 * np.sqrt(2) / 102 * np.sqrt(348 / 447)
    assert answer["difference"] == 0.0
    assert (answer["low"], answer["high"]) == pytest.approx((-half, half), rel=1e-12)
    assert answer["verdict"] == "too close to call" and answer["winner"] is None
    assert answer["reason"] == "the difference is below the MDAD"
    assert answer["confidence"] == 0.95 and answer["rule"] == RULE
    text = flat(mdad_cli("compare", out, path, path, cwd=tmp_path).stdout)
    assert "paired 95% interval -2.4 to 2.4" in text and "95% confidence" in text


def test_compare_names_two_results_of_one_model_name_by_their_paths(
        gpqa_data, gpqa_random_100, tmp_path: Path):
    """Two folders of one model name once gave 'h2__m02 is reliably better', and --json
    had first, second and winner all 'h2__m02'."""
    out = tmp_path / "mb.json"
    gpqa_random_100.save(out)
    column = {str(i): k for k, i in enumerate(gpqa_data.matrix.item_ids)}
    names = list(gpqa_data.matrix.model_names)
    paths = []
    for folder, name in (("a", INTEL), ("b", LLAMA)):
        row = gpqa_data.matrix.correctness[names.index(name),
                                           [column[i] for i in gpqa_random_100.items]]
        (tmp_path / folder).mkdir()
        paths.append(results_csv(tmp_path / folder / "h2__m02.csv", gpqa_random_100, row))
    proc = mdad_cli("compare", out, *paths, "--json", cwd=tmp_path)
    assert_ok(proc)
    answer = json.loads(proc.stdout)
    assert (answer["first"], answer["second"]) == tuple(map(str, paths))
    assert answer["winner"] in (None, *map(str, paths))
    assert "both results name the model 'h2__m02'" in flat(proc.stderr)
    same = json.loads(mdad_cli("compare", out, paths[0], paths[0], "--json",
                               cwd=tmp_path).stdout)
    assert same["first"] == f"{paths[0]} (first)" and same["second"] == f"{paths[0]} (second)"


def test_intel_and_llama_get_one_verdict(gpqa_data, gpqa_random_100, tmp_path: Path):
    """The issue's case: estimate called Intel (29.0) reliably above Llama-2-13b-chat
    (23.0) while compare said too close. Both now say the same."""
    bundle = gpqa_random_100
    out = tmp_path / "mb.json"
    bundle.save(out)
    column = {str(i): k for k, i in enumerate(gpqa_data.matrix.item_ids)}
    names = list(gpqa_data.matrix.model_names)
    paths = []
    for name in (INTEL, LLAMA):
        row = gpqa_data.matrix.correctness[names.index(name), [column[i] for i in bundle.items]]
        paths.append(results_csv(tmp_path / f"{name}.csv", bundle, row))
    estimate = json.loads(mdad_cli("estimate", out, paths[0], "--json", cwd=tmp_path).stdout)
    compare = json.loads(mdad_cli("compare", out, *paths, "--json", cwd=tmp_path).stdout)
    intel = gpqa_data.matrix.correctness[names.index(INTEL), [column[i] for i in bundle.items]]
    assert estimate["accuracy"] == pytest.approx(intel.mean())  # random: the mean itself
    assert (LLAMA in estimate["above"]) == (compare["winner"] == INTEL)
    assert LLAMA in estimate["too_close"] and compare["winner"] is None


@pytest.mark.slow
def test_estimate_and_compare_agree_on_every_gpqa_pair(gpqa_data, gpqa_random_100):
    """Every reference model estimate lists as above or below is the winner compare
    names for the same two answer vectors, for 40 new models against all 420; the lists
    are stricter, so some too-close ones compare separates."""
    bundle = gpqa_random_100
    references = bundle.reference_scores()
    totals = {"above": 0, "below": 0, "too_close": 0, "separated": 0}
    for model in np.linspace(0, len(references) - 1, 40).astype(int):
        seen = assert_consistent(bundle, answers(bundle, references[model],
                                                 f"new-{model}"))
        totals = {k: totals[k] + seen[k] for k in totals}
    # both verdicts exercised: lists also weigh the reference models' accuracies (at most
    # 0.5% on the other side), so 40 models list fewer than the 100+ each they did before
    assert totals["above"] >= 20 and totals["below"] >= 20, totals


@pytest.mark.slow
@pytest.mark.parametrize("method", ["anchor-points", "anchor-points-predictor",
                                    "tinybenchmarks-pirt", "tinybenchmarks-gpirt"])
def test_estimate_and_compare_agree_for_every_estimator(method: str):
    matrix = irt_matrix(n_models=30, n_items=60)
    bundle = select_microbenchmark(as_dataset(matrix), method, 20, seed=0)
    references = bundle.reference_scores()
    # the estimate on all items is the method's own estimator, exactly
    assert np.allclose(estimates_of(bundle, references, np.ones(20, dtype=bool)),
                       bundle.to_microbenchmark().estimate(references), atol=1e-12)
    for model in (0, 7, 19):
        name = bundle.reference_models[model]
        estimate = estimate_score(bundle, answers(bundle, references[model], name))
        assert name in estimate.too_close  # never above or below itself
        assert_consistent(bundle, answers(bundle, references[model], f"new-{model}"))
        itself = compare_models(bundle, answers(bundle, references[model], "a"),
                                answers(bundle, references[model], "b"))
        # the same answers: no difference, an interval about 0 of nonzero width
        assert (itself.difference, itself.winner) == (0, None)
        assert itself.low == pytest.approx(-itself.high) and itself.high > 0
    partial = np.arange(20) < 15
    if method == "anchor-points-predictor":
        with pytest.raises(DataError, match="cannot work on a subset"):
            estimate_score(bundle, answers(bundle, references[0], "x", partial),
                           allow_partial=True)
    else:
        seen = assert_consistent(bundle, answers(bundle, references[3], "x", partial))
        assert seen["above"] + seen["below"] + seen["too_close"] == 30


def test_the_paired_interval_on_the_whole_pool_is_the_exact_difference():
    """Every item of the pool: the difference is the models' true one, with no width
    and no pull toward 0; one item fewer gives it a width, and the pull."""
    matrix = irt_matrix(n_models=10, n_items=30)
    scores = matrix.correctness.astype(float)
    whole = select_microbenchmark(as_dataset(matrix), "random", 30, seed=0)
    order = [int(item[1:]) for item in whole.items]
    first, second = scores[0, order], scores[1, order]
    truth = scores[0].mean() - scores[1].mean()
    assert truth != 0
    answer = compare_models(whole, answers(whole, first, "a"), answers(whole, second, "b"))
    assert (answer.difference, answer.low, answer.high) == pytest.approx((truth,) * 3)
    answered = np.arange(30) != 0
    part = compare_models(whole, answers(whole, first, "a", answered),
                          answers(whole, second, "b", answered), allow_partial=True)
    centre = (part.low + part.high) / 2
    assert part.high > part.low and abs(centre) < abs(part.difference)


def test_a_reference_model_is_never_below_itself_on_a_partial_file(gpqa_data,
                                                                 gpqa_random_100):
    """The issue's Phi-3.5 case: with 12 of 50 items it was 'reliably below' itself."""
    bundle = gpqa_random_100
    model = bundle.reference_models.index("microsoft__Phi-3.5-mini-instruct")
    answered = np.arange(bundle.size) < 12
    estimate = estimate_score(bundle, answers(bundle, bundle.reference_scores()[model],
                                              "microsoft__Phi-3.5-mini-instruct", answered),
                              allow_partial=True)
    assert "microsoft__Phi-3.5-mini-instruct" in estimate.too_close
    assert estimate.partial and estimate.items_used == 12


# --- 7: the metric ---------------------------------------------------------------------

@pytest.mark.slow
def test_another_metric_is_refused_unless_allowed(gpqa_random_100, tmp_path: Path):
    out = tmp_path / "mb.json"
    gpqa_random_100.save(out)
    path = results_csv(tmp_path / "m.csv", gpqa_random_100, np.ones(100))
    for command in (("estimate", out, path), ("compare", out, path, path)):
        assert_user_error(mdad_cli(*command, "--metric", "acc", cwd=tmp_path),
                          r"--metric acc: the micro-benchmark was built on acc_norm; .*"
                          r"--allow-other-metric")
        assert_ok(mdad_cli(*command, "--metric", "acc", "--allow-other-metric",
                           cwd=tmp_path))
        assert_ok(mdad_cli(*command, "--metric", "acc_norm", cwd=tmp_path))
    assert_user_error(mdad_cli("select", "gpqa", "--method", "random", "--size", "5",
                               "--metric", "acc", "--out", tmp_path / "x.json",
                               cwd=tmp_path), r"the gpqa data holds acc_norm scores only")


@pytest.mark.parametrize("answered", [20, 12])
def test_an_estimate_and_a_comparison_on_the_same_items_stand_on_one_footing(answered):
    # the fields both carry (items, MDAD, its pairs and source) are made in one place
    from dataclasses import fields

    from mdad.practice import Footing

    data = as_dataset(irt_matrix(n_models=40, n_items=60))
    bundle = select_microbenchmark(data, "anchor-points", 20, seed=0)
    scores = bundle.reference_scores()
    first, second = scores[0].copy(), scores[1].copy()
    first[answered:] = second[answered:] = np.nan
    estimate = estimate_score(bundle, ItemScores("a", first, [], 0), allow_partial=True)
    comparison = compare_models(bundle, ItemScores("a", first, [], 0),
                                ItemScores("b", second, [], 0), allow_partial=True)
    names = [f.name for f in fields(Footing)]
    shared = {name: getattr(estimate, name) for name in names}
    assert shared == {name: getattr(comparison, name) for name in names}
    assert shared["items_used"] == answered and shared["partial"] == (answered < 20)
    assert (shared["mdad_reached"], shared["mdad"]) == (
        bundle.mdad_at(answered)[1] is not None, bundle.mdad_at(answered)[1])


@pytest.mark.parametrize("method", ["random", "anchor-points", "confidence-strata",
                                    "diversity-fast", "tinybenchmarks-map"])
def test_several_sizes_at_once_are_the_files_one_size_at_a_time_gives(method):
    # the sizes share each pool's work, never its random draws or its models
    data = as_dataset(irt_matrix(n_models=40, n_items=60))
    train = [*range(0, 40, 2), 1, 3, 5, 7, 9, 11, 13]
    together = select_microbenchmarks(data, method, [12, 5, 20], seed=3, models=train)
    for size, file in zip([12, 5, 20], together, strict=True):
        alone = select_microbenchmark(data, method, size, seed=3, models=train)
        assert file == alone, size
    assert [file.size for file in together] == [12, 5, 20]
    with pytest.raises(ConfigError, match="size 61 is outside"):
        select_microbenchmarks(data, method, [5, 61])
    for bad in (5, [5, 2.5], [5, "7"]):
        with pytest.raises(ConfigError, match=r"sizes must be a list|size must be a whole"):
            select_microbenchmarks(data, method, bad)


@pytest.mark.parametrize("method", ["tinybenchmarks-pirt", "tinybenchmarks-gpirt"])
@pytest.mark.parametrize("answered", [20, 13, 1])
def test_irt_lists_score_each_model_once_and_agree_with_each_pair(method, answered):
    # estimate's lists compare a model with many reference models at once; each pair
    # must come out as compare's paired_difference gives it
    from mdad.practice.compare import paired_difference, verdicts_against

    data = as_dataset(irt_matrix(n_models=40, n_items=60))
    bundle = select_microbenchmark(data, method, 20, seed=0, models=list(range(30)))
    references = bundle.reference_scores()
    model = references[3].copy()
    model[answered:] = np.nan
    observed = ~np.isnan(model)
    others = np.arange(len(references))
    first = verdicts_against(bundle, model, references, observed, 0.05, reference=others)
    again = verdicts_against(bundle, model, references, observed, 0.05, reference=others)
    apart = verdicts_against(bundle, model, references, observed, 0.05)
    for k, other in enumerate(references):
        pair = paired_difference(bundle, model, other, observed)
        np.testing.assert_allclose([first.difference[k], first.low[k], first.high[k]],
                                   [pair.difference, pair.low, pair.high], atol=1e-12)
    assert first.difference[3] == 0.0  # itself: exactly no difference
    for verdicts in (again, apart):
        np.testing.assert_allclose(verdicts.low, first.low, atol=1e-12)
        np.testing.assert_array_equal(verdicts.reliable, first.reliable)
    assert list(bundle._jackknives) == [observed.tobytes()]  # kept for the next model


def test_a_shared_cache_fits_tinybenchmarks_variants_once_and_changes_no_file(monkeypatch):
    # a round trip of map, p-IRT and gp-IRT costs one set of fits, not three
    from mdad.selection import tinybenchmarks

    data = as_dataset(irt_matrix(n_models=40, n_items=60))
    train = [*range(0, 40, 2), 1, 3, 5, 7, 9]
    alone = {method: select_microbenchmarks(data, method, [5, 12], seed=3, models=train)
             for method in ("tinybenchmarks-map", "tinybenchmarks-pirt")}
    fits = []
    real_fit = tinybenchmarks.fit_irt
    monkeypatch.setattr(tinybenchmarks, "fit_irt",
                        lambda *args, **kwargs: fits.append(1) or real_fit(*args, **kwargs))
    cache: dict = {}
    for method, files in alone.items():
        assert select_microbenchmarks(data, method, [5, 12], seed=3, models=train,
                                      cache=cache) == files
    assert len(fits) == 1 + 5  # the selection's pool and the 5 folds', fitted once each
    assert select_microbenchmarks(data, "tinybenchmarks-map", [5], seed=4, models=train,
                                  cache=cache)[0] == select_microbenchmarks(
        data, "tinybenchmarks-map", [5], seed=4, models=train)[0]  # another seed: its own
    # the same names with other answers: a pool of its own, never another data's fits
    other = as_dataset(irt_matrix(n_models=40, n_items=60, seed=1))
    assert list(other.matrix.model_names) == list(data.matrix.model_names)
    assert select_microbenchmarks(other, "tinybenchmarks-map", [5], seed=3, models=train,
                                  cache=cache)[0] == select_microbenchmarks(
        other, "tinybenchmarks-map", [5], seed=3, models=train)[0]
    with pytest.raises(ConfigError, match="cache must be a dict or None; got list"):
        select_microbenchmarks(data, "random", [5], cache=[])


@pytest.mark.parametrize(("method", "needs"), [("tinybenchmarks-gpirt", 3),
                                              ("anchor-points", 2)])
def test_select_refuses_fewer_models_than_the_method_needs(method, needs):
    # the methods themselves are never asked (tests/test_methods.py runs them only
    # with enough sources): select and the study's plan refuse first
    data = as_dataset(irt_matrix(n_models=40, n_items=60))
    with pytest.raises(ConfigError, match=f"method {method} needs at least {needs} models"):
        select_microbenchmark(data, method, 5, models=list(range(needs - 1)))


def test_an_estimate_beyond_the_reference_models_lists_none(gpqa_data):
    # the micro-benchmark knows the weaker 70% of GPQA's models; a stronger model whose
    # estimate lies past the band of the strongest of them is read by the belt's
    # extrapolation, so no list-level claim is made from it; compare still tests a pair
    matrix, accuracy = gpqa_data.matrix, gpqa_data.matrix.accuracy()
    weaker = np.flatnonzero(accuracy <= np.quantile(accuracy, 0.7))
    # seed 2: four of the 40 strongest lie past the band (0 to 4 over seeds 0 to 5)
    bundle = select_microbenchmark(gpqa_data, "anchor-points", 100, seed=2, models=weaker)
    column = {str(item): k for k, item in enumerate(matrix.item_ids)}
    items = [column[item] for item in bundle.items]
    beyond = []
    for model in np.argsort(accuracy)[::-1][:40]:
        new = ItemScores(str(matrix.model_names[model]),
                         matrix.scores([model])[0, items].astype(np.float64), [], 0)
        estimate = estimate_score(bundle, new)
        if estimate.beyond and not estimate.unexplained:
            beyond.append(new)
            assert estimate.mdad is not None and estimate.high > max(bundle.reference_accuracy)
            assert estimate.above == estimate.below == estimate.too_close == []
    assert len(beyond) >= 2
    weakest = int(np.argmin(bundle.reference_accuracy))
    other = ItemScores(bundle.reference_models[weakest],
                       bundle.reference_scores()[weakest], [], 0)
    assert compare_models(bundle, beyond[0], other).winner == beyond[0].model


def test_an_interval_end_at_the_calibration_s_reach_is_said_to_be_censored(
        gpqa_data, tmp_path: Path):
    # selected from the weaker 70%: a stronger model's interval runs to where the belt
    # stops speaking (one range past the strongest), which is no bound the data set.
    # Seed 0: a draw whose middle models' intervals end inside the belt, so both kinds
    # of end are checked (with seeds 1, 3 and 4 every one of them reaches an end)
    matrix, accuracy = gpqa_data.matrix, gpqa_data.matrix.accuracy()
    weaker = np.flatnonzero(accuracy <= np.quantile(accuracy, 0.7))
    bundle = select_microbenchmark(gpqa_data, "anchor-points", 100, seed=0, models=weaker)
    bundle.save(tmp_path / "mb.json")
    low_end, high_end = bundle.calibration().reach()
    seen = {}
    middle = weaker[np.argsort(accuracy[weaker])][[weaker.size * k // 10 for k in (4, 6, 8)]]
    for model in (int(np.argmax(accuracy)), *map(int, middle)):
        row = matrix.scores([model])[0]
        name = str(matrix.model_names[model])
        path = results_csv(tmp_path / f"{model}.csv", bundle, row[[
            {str(i): k for k, i in enumerate(matrix.item_ids)}[item]
            for item in bundle.items]])
        estimate = estimate_score(bundle, ItemScores(name, row[[
            {str(i): k for k, i in enumerate(matrix.item_ids)}[item]
            for item in bundle.items]].astype(np.float64), [], 0))
        proc = mdad_cli("estimate", tmp_path / "mb.json", path, cwd=tmp_path)
        assert_ok(proc)
        reaches = estimate.high >= high_end - 1e-3 or estimate.low <= low_end + 1e-3
        seen[model] = (reaches,
                       "only where the calibration stops" in flat(proc.stderr + proc.stdout))
        # and --json says which end, so a program never reads it as a bound
        as_json = json.loads(mdad_cli("estimate", tmp_path / "mb.json", path, "--json",
                                      cwd=tmp_path).stdout)
        assert as_json["high_censored"] == (estimate.high >= high_end - 1e-3)
        assert as_json["low_censored"] == (estimate.low <= low_end + 1e-3)
    assert all(said == reaches for reaches, said in seen.values()), seen
    assert seen[int(np.argmax(accuracy))][0]  # the strongest model's reaches
    assert not all(reaches for reaches, _ in seen.values())  # and some do not
