"""lm-eval results whose runs differ in n-shot (issue 35, silent wrong answer 3).

lm-eval writes ``results_<timestamp>.json`` beside each run's
``samples_<task>_<timestamp>.jsonl`` files; its ``n-shot`` (and each config's
``num_fewshot``) is the run's setting. A model whose tasks, or re-runs of one task, ran
with different ``--num_fewshot``, or models that ran with different ones, are refused
unless ``allow_mixed_settings`` / ``--allow-mixed-settings``; ``mdad data info`` shows
the n-shot and metric per task.

The quick tests write their folders with lm-eval's own writer (its `EvaluationTracker`,
as ``lm-eval run --log_samples`` saves: the results file, then one samples file per
task, all named by one timestamp). The slow test runs the real ``lm-eval`` CLI on a
simulated model, once with ``--num_fewshot 0`` and once with ``5``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_user_error, mdad_cli

from mdad.data import load_dataset, read_results
from mdad.data.info import settings_lines
from mdad.data.lm_eval import (
    MIXED_NOTE,
    LmEvalSettings,
    load_lm_eval_samples,
    read_lm_eval_samples,
)
from mdad.errors import ConfigError, DataError

pytest.importorskip("lm_eval")

N_DOCS = 8
MIXED = (r"mixed lm-eval settings: model m ran its tasks with different n-shot: 0 for t_a; "
         r"5 for t_b \(their results_\*\.json\), so the answers are not one measurement; "
         r"re-run lm-eval with one --num_fewshot for them all, or pass {flag} to use them "
         r"as they are")


def lm_eval_run(out: Path, model: str, n_shot: int, tasks: dict[str, float]) -> Path:
    """One ``lm-eval run --log_samples`` of `model` on `tasks` (task -> the share of
    docs answered correctly), saved by lm-eval's own tracker into `out`/`model`."""
    from lm_eval.loggers import EvaluationTracker

    tracker = EvaluationTracker(output_path=str(out))
    tracker.general_config_tracker.model_name = model
    tracker.general_config_tracker.model_name_sanitized = model
    samples = {task: [sample(task, doc, doc < share * N_DOCS) for doc in range(N_DOCS)]
               for task, share in tasks.items()}
    results = {
        "results": {task: {"alias": task, "acc,none": share} for task, share in tasks.items()},
        "group_subtasks": {},
        "configs": {task: {"task": task, "num_fewshot": n_shot, "output_type":
                           "multiple_choice", "metric_list": [
                               {"metric": "acc", "aggregation": "mean",
                                "higher_is_better": True}]} for task in tasks},
        "versions": dict.fromkeys(tasks, 1.0),
        "n-shot": dict.fromkeys(tasks, n_shot),
        "higher_is_better": {task: {"acc": True} for task in tasks},
        "n-samples": {task: {"original": N_DOCS, "effective": N_DOCS} for task in tasks},
        "config": {"model": "sim", "model_args": {"pretrained": model}},
    }
    tracker.save_results_aggregated(results=results, samples=samples)
    for task in tasks:
        tracker.save_results_samples(task_name=task, samples=samples[task])
    folder = out / model
    assert (folder / f"results_{tracker.date_id}.json").is_file()
    return folder


def sample(task: str, doc: int, correct: bool) -> dict:
    """A multiple-choice sample as lm-eval's evaluator hands it to the tracker."""
    lls = [-1.0, -2.0, -3.0]
    if not correct:
        lls = [-2.0, -1.0, -3.0]
    return {"doc_id": doc, "doc": {"q": f"{task} {doc}", "answer": 0}, "target": 0,
            "arguments": [(f"{task} {doc}?", f" option {k}") for k in range(3)],
            "resps": [[(ll, False)] for ll in lls], "filtered_resps": [(ll, False) for ll in lls],
            "filter": "none", "metrics": ["acc"], "doc_hash": "d", "prompt_hash": "p",
            "target_hash": "t", "acc": float(correct)}


def mixed_model(out: Path) -> Path:
    """Model m: task t_a at 0-shot, then t_b at 5-shot, into one output folder."""
    lm_eval_run(out, "m", 0, {"t_a": 0.25})
    return lm_eval_run(out, "m", 5, {"t_b": 0.75})



def test_one_model_s_tasks_at_different_n_shot_are_refused_in_one_line(tmp_path):
    mixed_model(tmp_path)
    with pytest.raises(DataError, match=f"^{re.escape(str(tmp_path))}: "
                       + MIXED.format(flag="allow_mixed_settings") + "$") as error:
        load_lm_eval_samples(tmp_path)
    assert "\n" not in str(error.value)
    assert error.value.parameters == ("allow_mixed_settings",)


def test_allowed_they_are_read_and_the_settings_say_how(tmp_path):
    mixed_model(tmp_path)
    read = read_lm_eval_samples(tmp_path, allow_mixed_settings=True)
    assert read.settings == LmEvalSettings(
        n_shot={"m": {"t_a": (0,), "t_b": (5,)}}, metric={"m": {"t_a": "acc", "t_b": "acc"}})
    assert read.matrix.item_ids.tolist() == [f"t_{t}/{d}" for t in "ab" for d in range(N_DOCS)]
    assert np.nanmean(read.matrix.correctness[0, :N_DOCS]) == 0.25
    assert np.nanmean(read.matrix.correctness[0, N_DOCS:]) == 0.75
    assert read.matrix.notes == (
        MIXED_NOTE + "model m ran its tasks with different n-shot: 0 for t_a; 5 for t_b",)
    matrix = load_lm_eval_samples(tmp_path, allow_mixed_settings=True)
    np.testing.assert_array_equal(matrix.correctness, read.matrix.correctness)
    assert settings_lines(read.settings) == ["n-shot: 0 for t_a; 5 for t_b",
                                             "metric: acc (2 tasks)"]


def test_only_the_tasks_read_are_compared(tmp_path):
    mixed_model(tmp_path)
    read = read_lm_eval_samples(tmp_path, tasks={"t_b"})
    assert read.settings.n_shot == {"m": {"t_b": (5,)}}
    assert read.matrix.notes == ()


def test_a_task_re_run_at_another_n_shot_is_refused(tmp_path):
    lm_eval_run(tmp_path, "m", 0, {"t_a": 0.25})
    lm_eval_run(tmp_path, "m", 5, {"t_a": 0.75})
    with pytest.raises(DataError, match=r"model m ran a task's runs with different n-shot: "
                                        r"0 and 5 for t_a \(their results_\*\.json\)"):
        load_lm_eval_samples(tmp_path)
    read = read_lm_eval_samples(tmp_path, allow_mixed_settings=True)
    assert read.settings.n_shot == {"m": {"t_a": (0, 5)}}
    assert np.nanmean(read.matrix.correctness) == 0.75  # the later run wins, as always


def test_models_at_different_n_shot_are_a_mixed_dataset(tmp_path):
    for model in ("a", "b"):
        lm_eval_run(tmp_path, model, 0, {"t_a": 0.5, "t_b": 0.5})
    lm_eval_run(tmp_path, "c", 5, {"t_a": 0.5, "t_b": 0.5})
    message = (r"its models ran with different n-shot: 0 for a, b; 5 for c \(their "
               r"results_\*\.json\)")
    with pytest.raises(DataError, match=message):
        read_results(tmp_path)
    with pytest.raises(DataError, match=message):
        load_dataset(tmp_path)
    data = load_dataset(tmp_path, allow_mixed_settings=True)
    assert data.matrix.model_names.tolist() == ["a", "b", "c"]
    assert data.matrix.notes == (
        MIXED_NOTE + "its models ran with different n-shot: 0 for a, b; 5 for c",)
    # only models a and b: one setting
    assert read_results(tmp_path / "a").notes == ()
    settings = read_lm_eval_samples(tmp_path, allow_mixed_settings=True).settings
    assert settings_lines(settings)[0] == "n-shot: 0 for a, b; 5 for c"


def test_one_setting_reads_without_a_word(tmp_path):
    for model in ("a", "b"):
        lm_eval_run(tmp_path, model, 5, {"t_a": 0.5})
        lm_eval_run(tmp_path, model, 5, {"t_b": 0.25})
    read = read_lm_eval_samples(tmp_path)
    assert read.matrix.notes == ()
    assert read.settings.mixed() == ""
    assert settings_lines(read.settings) == ["n-shot: 5 (2 tasks, 2 models)",
                                             "metric: acc (2 tasks)"]


def test_samples_without_results_files_read_with_n_shot_unknown(tmp_path):
    folder = mixed_model(tmp_path)
    for results in folder.glob("results_*.json"):
        results.unlink()
    read = read_lm_eval_samples(tmp_path)  # nothing to compare: not refused
    assert read.settings.n_shot == {"m": {"t_a": (None,), "t_b": (None,)}}
    assert read.settings.without_results == ("m",)
    assert read.matrix.notes == ()
    assert settings_lines(read.settings)[0] == "n-shot: unknown (no results_*.json)"


def test_partly_unknown_n_shot_is_said(tmp_path):
    lm_eval_run(tmp_path, "a", 0, {"t_a": 0.5})
    copied = lm_eval_run(tmp_path, "b", 0, {"t_a": 0.5})
    next(copied.glob("results_*.json")).unlink()
    settings = read_lm_eval_samples(tmp_path).settings
    assert settings_lines(settings)[0] == (
        "n-shot: 0 for a; unknown for b (unknown: no results_*.json beside the samples of "
        "1 model(s): b)")


def test_a_task_the_results_file_does_not_name_is_unknown(tmp_path):
    folder = lm_eval_run(tmp_path, "m", 0, {"t_a": 0.5, "t_b": 0.5})
    results = next(folder.glob("results_*.json"))
    data = json.loads(results.read_text(encoding="utf-8"))
    del data["n-shot"]["t_b"], data["configs"]["t_b"]
    data["n-shot"]["t_a"] = "three"  # not a whole number: the config's num_fewshot stands
    results.write_text(json.dumps(data), encoding="utf-8")
    settings = read_lm_eval_samples(tmp_path).settings
    assert settings.n_shot == {"m": {"t_a": (0,), "t_b": (None,)}}
    assert settings_lines(settings)[0] == (
        "n-shot: 0 for t_a; unknown for t_b (unknown: not given by the results_*.json of m)")


@pytest.mark.parametrize("content, message", [
    ("{not json", r"not an lm-eval results file \(.*\); fix it, or remove it to read the "
                  r"samples beside it without their settings \(n-shot unknown\)"),
    ("[1, 2]", "holds no JSON object, as lm-eval's results files do; fix it, or remove it"),
    (None, "not a regular file or folder .*, named like an lm-eval results file; fix it"),
])
def test_an_unreadable_results_file_is_refused_naming_it(tmp_path, content, message):
    folder = lm_eval_run(tmp_path, "m", 0, {"t_a": 0.5})
    results = next(folder.glob("results_*.json"))
    results.unlink()
    if content is None:
        os.mkfifo(results)  # reading it would wait for a writer forever
    else:
        results.write_text(content, encoding="utf-8")
    with pytest.raises(DataError, match=f"^{re.escape(str(results))}: {message}"):
        load_lm_eval_samples(tmp_path)


def test_the_option_is_the_lm_eval_loader_s_only(tmp_path, gpqa_data):
    assert read_results(gpqa_data.path, allow_mixed_settings=None).n_models == 420
    with pytest.raises(ConfigError, match="allow_mixed_settings is not an option of the "
                                          "wide-csv loader"):
        read_results(gpqa_data.path, allow_mixed_settings=True)


def test_data_info_shows_the_settings_and_select_refuses(tmp_path):
    mixed_model(tmp_path)
    info = mdad_cli("data", "info", str(tmp_path))
    assert info.returncode == 0, info.stderr
    lines = info.stdout.splitlines()
    start = lines.index("n-shot: 0 for t_a; 5 for t_b")
    assert lines[start:start + 3] == [
        "n-shot: 0 for t_a; 5 for t_b", "metric: acc (2 tasks)",
        "mixed settings: model m ran its tasks with different n-shot: 0 for t_a; 5 for t_b; "
        "run, select, estimate, compare and adaptive refuse them unless "
        "--allow-mixed-settings"]
    assert "note: mixed" not in info.stdout  # said once, as a setting
    select = mdad_cli("select", str(tmp_path), "--method", "random", "--size", "4",
                      "--out", str(tmp_path / "mb.json"))
    assert_user_error(select, f"^mdad: error: {re.escape(str(tmp_path))}: "
                      + MIXED.format(flag="--allow-mixed-settings") + "$")


def test_estimate_refuses_a_new_model_s_mixed_answers(tmp_path):
    """The issue's case: the reference models ran at 0-shot; the new model's answers
    merge a 0-shot and a 5-shot task."""
    reference = tmp_path / "reference"
    for k in range(8):
        lm_eval_run(reference, f"r{k}", 0, {"t_a": (k + 1) / 9, "t_b": (8 - k) / 9})
    micro = tmp_path / "mb.json"
    select = mdad_cli("select", str(reference), "--method", "random", "--size", "6",
                      "--seed", "1", "--format", "lm-eval", "--out", str(micro))
    assert select.returncode == 0, select.stderr
    new = mixed_model(tmp_path / "new")
    estimate = mdad_cli("estimate", str(micro), str(new))
    assert_user_error(estimate, r"mixed lm-eval settings: model m ran its tasks with "
                                r"different n-shot: 0 for t_a; 5 for t_b")
    allowed = mdad_cli("estimate", str(micro), str(new), "--allow-mixed-settings")
    assert allowed.returncode == 0, allowed.stderr
    assert "mixed lm-eval settings, read as they are (allowed)" in allowed.stderr


def test_data_info_says_unknown_without_results_files(tmp_path):
    folder = lm_eval_run(tmp_path, "m", 0, {"t_a": 0.5})
    next(folder.glob("results_*.json")).unlink()
    info = mdad_cli("data", "info", str(tmp_path))
    assert info.returncode == 0, info.stderr
    assert "n-shot: unknown (no results_*.json)\nmetric: acc (1 task)\n" in info.stdout


@pytest.mark.slow
def test_the_real_lm_eval_cli_at_0_and_5_shots(tmp_path):
    """``lm-eval run --num_fewshot 0`` on one task and ``--num_fewshot 5`` on another,
    into one output folder: refused, read when allowed, shown by data info."""
    from test_lm_eval_loop import lm_eval, require_lm_eval, write_benchmark

    require_lm_eval()
    write_benchmark(tmp_path / "tasks")
    out = tmp_path / "out"
    # once with lm-eval's whole task index, as users run it
    lm_eval(tmp_path, "m", 0.6, 1, ["mdadloop_alpha"], out, "--num_fewshot", "0",
            builtin_tasks=True)
    lm_eval(tmp_path, "m", 0.6, 1, ["mdadloop_beta"], out, "--num_fewshot", "5")
    assert len(list((out / "m").glob("results_*.json"))) == 2
    with pytest.raises(DataError, match=r"model m ran its tasks with different n-shot: 0 for "
                                        r"mdadloop_alpha; 5 for mdadloop_beta"):
        load_lm_eval_samples(out)
    read = read_lm_eval_samples(out, allow_mixed_settings=True)
    assert read.settings.n_shot == {"m": {"mdadloop_alpha": (0,), "mdadloop_beta": (5,)}}
    assert read.matrix.n_items == 48 + 60
    assert read_lm_eval_samples(out, tasks={"mdadloop_beta"}).settings.mixed() == ""
    info = mdad_cli("data", "info", str(out))
    assert info.returncode == 0, info.stderr
    assert "n-shot: 0 for mdadloop_alpha; 5 for mdadloop_beta\n" in info.stdout
