"""A command meant to be copied is printed on one line at any width (issue 38, defect
1: the `--tasks` list was wrapped mid-name, and the copy ran broken task names)."""

from __future__ import annotations

import json
import re

import pytest
from helpers import assert_ok, mdad_cli

TASKS = [f"mmlu_like_{name}" for name in ("econometrics", "high_school_macroeconomics",
                                          "professional_accounting", "world_religions",
                                          "electrical_engineering", "college_physics")]


def _wide_csv(path, gpqa_data) -> None:
    matrix = gpqa_data.matrix
    ids = [f"{TASKS[j % len(TASKS)]}/{j // len(TASKS)}" for j in range(60)]
    rows = ["item_id," + ",".join(str(m) for m in matrix.model_names)]
    rows += [f"{item}," + ",".join(str(int(v)) for v in matrix.correctness[:, j])
             for j, item in enumerate(ids)]
    path.write_text("\n".join(rows) + "\n")


def _line_with(text: str, needle: str) -> str:
    return next(line for line in text.splitlines() if needle in line)


def test_task_lists_are_never_wrapped(tmp_path, gpqa_data):
    data = tmp_path / "tasks.csv"
    _wide_csv(data, gpqa_data)
    for columns in (40, 100):
        out = tmp_path / f"mb{columns}.json"
        proc = mdad_cli("select", data, "--method", "random", "--size", "30", "--format",
                        "lm-eval", "--out", out, cwd=tmp_path, columns=columns)
        assert_ok(proc)
        tasks = json.loads(out.read_text())["lm_eval_tasks"]
        assert len(tasks) == len(TASKS)
        assert f"--tasks {','.join(tasks)}" in _line_with(proc.stdout, "--tasks")
        state = tmp_path / f"state{columns}.json"
        proc = mdad_cli("adaptive", "start", data, "--budget", "12", "--batch", "6", "--out",
                        state, cwd=tmp_path, columns=columns)
        assert_ok(proc)
        run_it = _line_with(proc.stdout, "run it: lm-eval run")
        assert run_it.endswith("--log_samples --output_path RESULTS")
        listed = run_it.split("--tasks ", 1)[1].split(" ", 1)[0].split(",")
        assert listed and set(listed) <= set(TASKS)
        assert f"then: mdad adaptive next {state} RESULTS" in proc.stdout


@pytest.mark.slow
def test_a_method_without_its_own_mdad_says_how_to_get_it(tmp_path):
    """Issue 38, defect 10: without --run, `select` and `estimate` judge a method with no
    analytic MDAD against uniform random sampling's. Both say so with the two commands
    that give its own, each on one line; run as printed, they do."""
    import shlex

    from helpers import shared_data

    shared_data()
    file = tmp_path / "mb.json"
    selected = mdad_cli("select", "gpqa", "--method", "confidence-strata", "--size", "10",
                        "--out", file, cwd=tmp_path, columns=60)
    assert_ok(selected)
    model = json.loads(file.read_text())["reference_models"][0]
    answers = tmp_path / "answers.csv"
    assert_ok(mdad_cli("data", "answers", "gpqa", "--model", model, "--items", file,
                       "--out", answers, cwd=tmp_path))
    estimated = mdad_cli("estimate", file, answers, cwd=tmp_path, columns=60)
    assert_ok(estimated)
    for proc in (selected, estimated):
        line = _line_with(proc.stderr, "has no analytic MDAD")
        assert "uniform random sampling's at 10 items" in line
        run, select = re.search(r"(mdad run .*) --out RUN_DIR, then (mdad select .*)$",
                                line).groups()
    run_dir = tmp_path / "run"
    assert_ok(mdad_cli(*shlex.split(run)[1:], "--out", run_dir, cwd=tmp_path))
    again = shlex.split(select.replace("RUN_DIR", str(run_dir)).replace(
        "FILE", str(tmp_path / "own.json")))
    assert_ok(mdad_cli(*again[1:], cwd=tmp_path))
    assert json.loads((tmp_path / "own.json").read_text())["mdad_how"] != "random-analytic"
