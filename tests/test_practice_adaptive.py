"""The practitioner's adaptive test (mdad.practice.adaptive, `mdad adaptive`): the
state file, the one-answer-once rules, the cross-validated interval, and what batches
cost, measured on GPQA's real models."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import assert_ok, assert_user_error, flat, mdad_cli
from scipy.stats import kendalltau

from mdad.data import load_dataset
from mdad.errors import ConfigError, DataError
from mdad.irt.cat import administer
from mdad.practice.adaptive import (
    CV_FOLDS,
    AdaptiveTest,
    run_batches,
    start_adaptive_test,
)
from mdad.selection.threads import one_thread
from mdad.selection.tinybenchmarks import fit_irt


@pytest.fixture(scope="module")
def started_on_gpqa(gpqa_data):
    return start_adaptive_test(gpqa_data, budget=20, batch=5)


def _answer(test: AdaptiveTest, matrix, model: int) -> None:
    column = {str(item): k for k, item in enumerate(matrix.item_ids)}
    for item in list(test.pending):
        test.record(item, float(matrix.correctness[model, column[item]]))


def test_batches_of_one_follow_the_study_engine(gpqa_data):
    """With batches of 1 the practitioner's test gives the items and the estimate of
    `mdad.irt.cat.administer` on the same fit: one engine for study and practice."""
    matrix = gpqa_data.matrix
    test = start_adaptive_test(gpqa_data, budget=8, batch=1)
    while not test.finished:
        _answer(test, matrix, 3)
        if not test.finished:
            test.next_items()
    run = administer(matrix.correctness[3:4].astype(float), test.discrimination[:, 0],
                     test.difficulty, 8)
    column = {str(item): k for k, item in enumerate(matrix.item_ids)}
    assert [column[i] for i in test.answers] == run.items[0].tolist()
    assert test.estimate().accuracy == pytest.approx(run.estimates[0], abs=1e-10)


def test_the_fits_give_the_same_test_in_one_thread_or_several(gpqa_data, monkeypatch):
    # the six fits run in a thread per core: how many never changes a number
    import mdad.practice.adaptive as adaptive

    sub = np.arange(0, gpqa_data.matrix.n_models, 3)
    runs = []
    for threads in (1, 2):
        monkeypatch.setattr(adaptive, "_fit_threads", lambda scores, tasks, t=threads: t)
        runs.append(start_adaptive_test(gpqa_data, budget=12, method="adaptive-md",
                                        seed=2, models=sub).to_json())
    assert runs[0] == runs[1]


def test_state_round_trip_and_the_interval(started_on_gpqa, gpqa_data, tmp_path):
    test = AdaptiveTest.from_json(json.loads(json.dumps(started_on_gpqa.to_json())))
    assert len(test.pending) == 5 and not test.answers
    assert test.cv_answered == [0, 5, 10, 15, 20]
    _answer(test, gpqa_data.matrix, 0)
    test.save(tmp_path / "state.json")
    again = AdaptiveTest.load(tmp_path / "state.json")
    assert again.estimate() == test.estimate()
    estimate = test.estimate()
    assert estimate.cv_error == pytest.approx(test.cv_error[1])
    # the belt of the held-out tests after 5 answers, recomputed from their estimates
    assert (estimate.low, estimate.high) == test.interval_at(np.array(estimate.accuracy), 5)
    assert estimate.low <= estimate.accuracy <= estimate.high
    assert estimate.interval_how.startswith("calibrated on 420 held-out tests after 5")
    # an end at the belt's reach is marked censored, and only such an end
    low_end, high_end = test.calibration_at(5).reach()
    assert estimate.high_censored == (0 < high_end < 1 and estimate.high >= high_end - 1e-3)
    assert estimate.low_censored == (0 < low_end < 1 and estimate.low <= low_end + 1e-3)
    strongest = test.calibration_at(5).interval(0.95)
    assert test.calibration_at(5).censored(*strongest)[1]


def test_one_answer_once_and_the_budget(started_on_gpqa):
    test = AdaptiveTest.from_json(started_on_gpqa.to_json())
    item = test.pending[0]
    test.record(item, 1)
    with pytest.raises(DataError, match="answered already"):
        test.record(item, 0)
    with pytest.raises(DataError, match="not one of the test's items"):
        test.record("no-such-item", 1)
    with pytest.raises(DataError, match=r"score 1.5 is not in \[0, 1\]"):
        test.record(test.pending[0], 1.5)
    for other in [i for i in test.item_ids if i not in test.answers][:19]:
        test.record(other, 0)
    assert test.finished and "budget of 20 items is spent" in test.estimate().reason
    assert test.next_items() == []


def test_target_standard_error_stops_early(gpqa_data):
    test = start_adaptive_test(gpqa_data, budget=40, batch=5, target_se=0.6)
    _answer(test, gpqa_data.matrix, 1)
    estimate = test.estimate()
    assert estimate.finished and estimate.ability_standard_error < 0.6 and estimate.answered == 5
    assert "below the target 0.6" in estimate.reason


@pytest.mark.parametrize(("field", "value", "message"), [
    ("format", "mdad-adaptive/0", "field 'format' must be"),
    ("budget", 0, "field 'budget' must be a whole number from 1 to the number of items"),
    ("answers", [["0", 2]], "field 'answers' must be"),
    ("pending", ["nope"], "field 'pending' must list distinct unanswered items"),
    ("pending", ["0", "0"], "field 'pending' must list distinct unanswered items of the test"),
    ("cv_error", [-0.01, 0.04, 0.04, 0.03, 0.03], r"field 'cv_error' must hold one number in "
     r"\[0, 1\] per cv_answered"),
    ("cv_error", [float("nan")] * 5, r"field 'cv_error' must hold one number in \[0, 1\]"),
    ("cv_answered", [0.5, 5, 10, 15, 20], "field 'cv_answered' must be whole numbers"),
    ("discrimination", "x", "field 'discrimination'"),
    ("method", "random", "field 'method' must be one of adaptive"),
])
def test_a_damaged_state_is_refused_naming_the_field(started_on_gpqa, field, value, message):
    data = started_on_gpqa.to_json()
    data[field] = value
    with pytest.raises(DataError, match=message):
        AdaptiveTest.from_json(data, "state.json")


def test_bad_options_name_the_parameter(gpqa_data):
    for kwargs, message in (({"budget": 0}, "budget must lie in 1..448"),
                            ({"budget": 5, "batch": 6}, r"batch must lie in 1..budget \(5\)"),
                            ({"budget": 5, "target_se": 0.0},
                             "target_se must be a finite number > 0; got 0.0"),
                            ({"budget": 5, "target_se": float("inf")},
                             "target_se must be a finite number > 0; got inf"),
                            ({"budget": 5, "method": "random"}, "method must be one of"),
                            ({"budget": 2.5}, r"^budget must be a whole number; got 2.5"),
                            ({"budget": "5"}, r"^budget must be a whole number; got '5'"),
                            ({"budget": 5, "batch": True}, r"^batch must be a whole number"),
                            ({"budget": 5, "target_se": "x"}, r"^target_se must be a finite")):
        with pytest.raises(ConfigError, match=message):
            start_adaptive_test(gpqa_data, **kwargs)


@pytest.mark.parametrize("score", [0, 1])
def test_models_that_all_answer_alike_are_refused_not_given_zero_error(score, tmp_path: Path):
    """All right (or all wrong): the cross-validated error would be 0.0 points, which
    says only that these models agree, nothing about a new model."""
    data = tmp_path / "alike.csv"
    header = "model," + ",".join(f"q{j}" for j in range(12))
    data.write_text("\n".join([header, *(f"m{i}," + ",".join([str(score)] * 12)
                                          for i in range(12))]) + "\n")
    with pytest.raises(DataError, match="every model of alike gave the same answers"):
        start_adaptive_test(load_dataset(data), budget=4)


def test_cli_loop_with_a_csv_and_results_applied_once(tmp_path: Path, gpqa_data):
    state = tmp_path / "state.json"
    assert_ok(mdad_cli("adaptive", "start", "gpqa", "--budget", "6", "--batch", "3", "--out",
                       state, cwd=tmp_path))
    matrix = gpqa_data.matrix
    column = {str(item): k for k, item in enumerate(matrix.item_ids)}
    for round_ in (1, 2):
        batch = json.loads(state.with_suffix(".samples.json").read_text())
        docs = batch["leaderboard_gpqa_main"]
        answers = tmp_path / f"round{round_}.csv"
        answers.write_text("item_id,correct\n" + "".join(
            f"{d},{int(matrix.correctness[2, column[str(d)]])}\n" for d in docs)
            + ("" if round_ == 1 else "99999,1\n"))  # an item outside the batch
        if round_ == 1:  # a folder where the next batch goes: refused before any change
            saved = state.read_bytes()
            state.with_suffix(".samples.json").unlink()
            state.with_suffix(".samples.json").mkdir()
            assert_user_error(mdad_cli("adaptive", "next", state, answers, cwd=tmp_path),
                              r"^mdad: error: the batch file \S+state\.samples\.json is a "
                              r"folder; remove that folder$")
            assert state.read_bytes() == saved
            assert [p.name for p in tmp_path.glob(".*")] == [".state.json.lock"]
            state.with_suffix(".samples.json").rmdir()
        proc = mdad_cli("adaptive", "next", state, answers, cwd=tmp_path)
        assert_ok(proc)
        assert ("round2.csv has 1 items that are not in the batch; they are not recorded"
                in flat(proc.stderr)) == (round_ == 2)
        if round_ == 1:
            assert_user_error(mdad_cli("adaptive", "next", state, answers, cwd=tmp_path),
                              r"round1.csv: these results were applied already \(round 1\)")
    assert "FINAL" in " ".join(proc.stdout.split())
    # no temporary file left; the lock file stays (removing it would race a writer)
    assert [p.name for p in tmp_path.glob(".*")] == [".state.json.lock"]
    # no batch is left to run: the last one's file would ask for answered items
    assert not state.with_suffix(".samples.json").exists()
    assert f"the test is finished: removed {state.with_suffix('.samples.json')}" in flat(
        proc.stdout)
    shown = json.loads(mdad_cli("adaptive", "estimate", state, "--json",
                                cwd=tmp_path).stdout)
    assert shown["finished"] and shown["answered"] == 6 and shown["round"] == 2
    assert_user_error(mdad_cli("adaptive", "next", state, tmp_path / "round1.csv",
                               cwd=tmp_path),
                      r"state\.json: the test is finished \(6 items answered\), no batch is "
                      r"pending; its estimate: `mdad adaptive estimate .*state\.json`")
    assert_user_error(mdad_cli("adaptive", "start", "gpqa", "--budget", "6", "--out", state,
                               cwd=tmp_path), r"--out .*already exists")


@pytest.mark.slow
@pytest.mark.parametrize("dims", [1, 3])
def test_batches_of_ten_cost_little_against_batches_of_one(gpqa_data, dims):
    """Round trip over held-out models (5 folds, each fitted on the other models): at a
    budget of 50 on GPQA, batches of 10 give the error and tau of batches of 1 within
    noise (measured on the standardised fits: 1-D error 2.41 against 2.38 points, tau
    0.483 against 0.491; 3-D 1.96 against 1.94, 0.608 against 0.613)."""
    scores = np.asarray(gpqa_data.matrix.scores(), dtype=float)
    truth = scores.mean(axis=1)
    folds = np.array_split(np.random.default_rng(0).permutation(scores.shape[0]), CV_FOLDS)
    measured = {}
    with one_thread():
        fits = [fit_irt(scores[np.setdiff1d(np.arange(scores.shape[0]), held)], dims,
                        np.random.default_rng(k)).standardised()
                for k, held in enumerate(folds)]
        for batch in (1, 10):
            errors, taus = [], []
            for fit, held in zip(fits, folds, strict=True):
                a = fit.discrimination_ if dims > 1 else fit.discrimination_[:, 0]
                _, estimates = run_batches(a, fit.difficulty_, scores[held], 50, batch)
                errors.append(np.abs(estimates[-1] - truth[held]))
                taus.append(kendalltau(estimates[-1], truth[held]).statistic)
            measured[batch] = (np.concatenate(errors).mean(), np.mean(taus))
    (error_1, tau_1), (error_10, tau_10) = measured[1], measured[10]
    assert error_10 <= 1.05 * error_1 and tau_10 >= tau_1 - 0.03, measured


@pytest.mark.parametrize("kind", ["folder", "file"])
def test_start_refuses_a_batch_file_it_would_replace_before_any_work(kind: str,
                                                                      tmp_path: Path):
    state = tmp_path / "s.json"
    batch = tmp_path / "s.samples.json"
    if kind == "folder":
        batch.mkdir()
        pattern = r"s\.samples\.json is a folder; remove that folder, or choose another --out"
    else:
        batch.write_text("keep\n")
        pattern = r"s\.samples\.json already exists; choose another name, or pass --force"
    assert_user_error(mdad_cli("adaptive", "start", "gpqa", "--budget", "4", "--out", state,
                               cwd=tmp_path), r"^mdad: error: --out \(its batch file\) .*"
                      + pattern)
    assert not state.exists()
    assert batch.is_dir() if kind == "folder" else batch.read_text() == "keep\n"


def test_next_refuses_a_folder_for_a_list_of_ids_before_the_state_moves_on(
        tmp_path: Path, gpqa_data):
    """A CSV's items have no lm-eval names: the batch is a list of ids (.items.txt)."""
    matrix = gpqa_data.matrix
    frame = pd.DataFrame(matrix.correctness[:, :60].T.astype(int),
                         columns=[str(m) for m in matrix.model_names])
    frame.insert(0, "item_id", [f"q{j}" for j in range(60)])
    frame.to_csv(tmp_path / "data.csv", index=False)
    state = tmp_path / "state.json"
    assert_ok(mdad_cli("adaptive", "start", tmp_path / "data.csv", "--budget", "4", "--batch",
                       "2", "--out", state, cwd=tmp_path))
    batch = state.with_suffix(".items.txt")
    pending = batch.read_text().split()
    answers = tmp_path / "answers.csv"
    answers.write_text("item_id,correct\n" + "".join(f"{item},1\n" for item in pending))
    saved = state.read_bytes()
    batch.unlink()
    batch.mkdir()
    assert_user_error(mdad_cli("adaptive", "next", state, answers, cwd=tmp_path),
                      r"^mdad: error: the batch file \S+state\.items\.txt is a folder; "
                      r"remove that folder$")
    assert state.read_bytes() == saved
    batch.rmdir()
    assert_ok(mdad_cli("adaptive", "next", state, answers, cwd=tmp_path))
    assert len(batch.read_text().split()) == 2 and batch.read_text().split() != pending


@pytest.mark.parametrize("failing", ["batch", "state"])
def test_next_that_cannot_write_leaves_a_state_the_same_next_goes_on_from(
        failing: str, tmp_path: Path, gpqa_data, monkeypatch):
    """The batch is written before the state: a batch that cannot be written (a file
    made immutable) leaves the state as it was; a state that cannot be saved still
    waits for the answers just applied, so the same `next` again goes on."""
    import errno

    from typer.testing import CliRunner

    from mdad.cli.app import app

    state = tmp_path / "s.json"
    assert_ok(mdad_cli("adaptive", "start", "gpqa", "--budget", "6", "--batch", "2", "--out",
                       state, cwd=tmp_path))
    docs = json.loads(state.with_suffix(".samples.json").read_text())["leaderboard_gpqa_main"]
    answers = tmp_path / "answers.csv"
    answers.write_text("item_id,correct\n" + "".join(f"{d},1\n" for d in docs))
    saved = state.read_bytes()

    def refuse(*args, **kwargs):
        raise OSError(errno.EPERM, "Operation not permitted", str(args[0]))

    if failing == "batch":
        # the batch is written first: its failure comes before the state's save
        monkeypatch.setattr("mdad.safe_io.atomic_write", refuse)
    else:
        monkeypatch.setattr(AdaptiveTest, "save", refuse)
    result = CliRunner().invoke(app, ["adaptive", "next", str(state), str(answers)])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert "Operation not permitted" in flat(result.output)
    assert state.read_bytes() == saved
    monkeypatch.undo()
    proc = mdad_cli("adaptive", "next", state, answers, cwd=tmp_path)
    assert_ok(proc)
    assert json.loads(state.read_text())["round"] == 1


def test_recording_and_asking_refuse_what_is_not_a_score_or_a_count(started_on_gpqa):
    test = AdaptiveTest.from_json(started_on_gpqa.to_json(), "state.json")  # a copy
    item = test.pending[0]
    for correct in ("x", None, 1j):
        with pytest.raises(DataError, match=r"score must be a number in \[0, 1\]") as info:
            test.record(item, correct)  # type: ignore[arg-type]
        assert info.value.parameters == ("correct",)
    for k in (2.7, 0, "3"):
        with pytest.raises(ConfigError, match=r"^k must be an integer >= 1") as info:
            test.next_items(k)  # type: ignore[arg-type]
        assert info.value.parameters == ("k",)
    test.record(item, True)  # a bool is 1
    assert test.answers[item] == 1.0


def test_models_tied_at_a_decile_do_not_empty_a_fold_beyond():
    """The multidimensional test's folds beyond hold the models at or past each
    decile's edge: with every model tied there, no fit is left without models (a
    review found `IRT fit: every response is missing`), and no belt is fitted where
    the models cannot show how the error varies."""
    from mdad.practice.adaptive import _fit_and_cross_validate
    from mdad.selection.threads import one_thread

    rng = np.random.default_rng(0)
    tied = np.zeros((24, 30))
    for row in tied:
        row[rng.choice(30, 15, replace=False)] = 1.0  # every model at 50%
    with one_thread():
        assert _fit_and_cross_validate(tied, "adaptive-md", 10, 1, 0).calibration is None
        tied[0] = 1.0  # one model apart: 23 tied at the bottom decile's edge
        fitted = _fit_and_cross_validate(tied, "adaptive-md", 10, 1, 0)
    assert len(fitted.answered) == len(fitted.error) == len(fitted.calibration) == 11
