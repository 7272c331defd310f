"""The CSVs `mdad` writes hold no formula a spreadsheet would run (OWASP's rule: a text
cell starting with = + - @ gets a leading '), and `mdad`'s own readers give back the
names exactly; and the `--missing` advice never names a policy that would fail too."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import assert_ok, assert_user_error, flat, mdad_cli

from mdad.data import ResponseMatrix
from mdad.data.missing import resolve_missing
from mdad.errors import DataError
from mdad.practice import MicroBenchmarkFile
from mdad.practice.answers import answers_csv, read_answers_csv
from mdad.study.folder import POOLED, read_study_csv, read_study_folder

SUBTASKS = ['=HYPERLINK("http://x","y")', "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)",
            "'quoted", "NA"]
PER_SUBTASK = 20
MODELS = 24
STUDY_CSVS = ("mdad.csv", "summary.csv", "agreement.csv")


def hostile_ids(n: int) -> list[str]:
    """Item ids that are formulas, negative numbers or start with a quote."""
    forms = ("=q{}", "-{}", "@i{}", "+{}.5", "'x{}", "-2+{}", "\tt{}", "plain{}")
    return [forms[k % len(forms)].format(k) for k in range(n)]


def hostile_csv(path: Path) -> Path:
    """A wide CSV (items as rows) whose subtask names and item ids are formulas."""
    rng = np.random.default_rng(3)
    ability = np.linspace(0.2, 0.9, MODELS)
    n_items = PER_SUBTASK * len(SUBTASKS)
    scores = (rng.random((n_items, MODELS)) < ability).astype(int)
    frame = pd.DataFrame(scores, columns=[f"m{j}" for j in range(MODELS)])
    frame.insert(0, "subtask", np.repeat(SUBTASKS, PER_SUBTASK))
    frame.insert(0, "item_id", hostile_ids(n_items))
    frame.to_csv(path, index=False)
    return path


def assert_no_formula(path: Path) -> list[list[str]]:
    """No cell of `path`, read as raw strings, starts with = + - @ (or a tab or CR)
    unless it is a number; returns the rows."""
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows, path
    for line, row in enumerate(rows, start=1):
        for cell in row:
            if cell[:1] in ("=", "+", "-", "@", "\t", "\r"):
                try:
                    float(cell)
                except ValueError:
                    pytest.fail(f"{path.name}, line {line}: formula cell {cell!r}")
    return rows


# ------------------------------------------------------------------ unit: answers CSV


def test_answers_csv_neutralises_item_ids_and_reads_them_back(tmp_path: Path):
    ids = hostile_ids(16)
    matrix = ResponseMatrix([[k % 2 for k in range(16)]], ["m"], ids)
    path = tmp_path / "a.csv"
    path.write_text(answers_csv(ids, matrix.scores()[0]))
    rows = assert_no_formula(path)
    assert rows[1] == ["'=q0", "0"] and rows[2] == ["'-1", "1"]  # scores stay numbers
    assert rows[5] == ["''x4", "0"]  # a leading quote is doubled, so it survives
    assert list(read_answers_csv(path)) == ids


def test_a_user_s_leading_quote_is_dropped_as_a_spreadsheet_drops_it(tmp_path: Path):
    path = tmp_path / "mine.csv"
    path.write_text("item_id,correct\n'=q1,1\n'plain,0\n-3,1\n'',1\n")
    assert read_answers_csv(path) == {"=q1": 1.0, "plain": 0.0, "-3": 1.0, "'": 1.0}
    path.write_text("item_id,correct\n',1\n")
    with pytest.raises(DataError, match=r"line 2, column item_id: the id is only a \"'\""):
        read_answers_csv(path)


# ------------------------------------------------------------------ the CLI, end to end


@pytest.fixture(scope="module")
def hostile_study(tmp_path_factory) -> tuple[Path, Path]:
    """A quick per-subtask study of the hostile data: (data file, run folder)."""
    root = tmp_path_factory.mktemp("hostile")
    data = hostile_csv(root / "hostile.csv")
    out = root / "run"
    assert_ok(mdad_cli("run", data, "--per-subtask", "--methods", "random,anchor-points",
                       "--fractions", "0.2,0.5", "--runs", "2", "--resamples", "20",
                       "--targets", "6", "--sources", "10,18", "--out", out, cwd=root))
    return data, out


@pytest.mark.slow
def test_a_per_subtask_study_writes_no_formula_and_reads_its_names_back(hostile_study):
    data, out = hostile_study
    for name in STUDY_CSVS:
        rows = assert_no_formula(out / name)
        header = rows[0]
        raw = {row[header.index("subtask")] for row in rows[1:]}
        assert "'=HYPERLINK(\"http://x\",\"y\")" in raw and "''quoted" in raw
        assert "NA" in raw  # no quote where none is needed
        # mdad's reader gives back each name exactly (NA too: no NaN)
        table = read_study_csv(out / name, neutralised=True)
        assert set(table.subtask) == {*SUBTASKS, POOLED}
        assert set(table.method) == {"random", "anchor-points"}
    config = json.loads((out / "config.json").read_text())
    assert config["csv_text_cells"] == "owasp"
    assert set(config["per_subtask"]["sizes"]) == set(SUBTASKS)
    study = read_study_folder(out)  # checks every subtask block against config.json
    assert study.csv_text_neutralised and set(study.mdad.split) == {"seen", "unseen"}
    # the numbers are the study's: mdad.csv's values, un-neutralised, are the run's
    mdad_table = pd.read_csv(out / "mdad.csv")
    assert mdad_table["mdad"].dtype == np.float64 and mdad_table["size"].dtype == np.int64
    # report and plan --run read the folder
    assert_ok(mdad_cli("report", out, cwd=out.parent))
    proc = mdad_cli("plan", data, "--run", out, "--method", "anchor-points", "--gap", "0.3",
                    "--json", cwd=out.parent)
    assert_ok(proc)
    assert json.loads(proc.stdout)["method"] == "anchor-points"


@pytest.mark.slow
def test_a_folder_written_before_the_rule_reads_its_names_as_they_are(hostile_study,
                                                                      tmp_path: Path):
    """A folder of an earlier mdad: raw cells and no csv_text_cells in config.json; a
    name beginning with ' keeps it."""
    _, out = hostile_study
    old = tmp_path / "old"
    old.mkdir()
    for name in ("results.parquet",):
        (old / name).write_bytes((out / name).read_bytes())
    for name in STUDY_CSVS:
        read_study_csv(out / name, neutralised=True).to_csv(old / name, index=False)
    config = json.loads((out / "config.json").read_text())
    del config["csv_text_cells"]
    (old / "config.json").write_text(json.dumps(config))
    assert "\n'quoted," in (old / "mdad.csv").read_text()  # raw, as mdad 0.1 wrote it
    study = read_study_folder(old)
    assert not study.csv_text_neutralised
    assert set(read_study_csv(old / "summary.csv", neutralised=False).subtask) == {
        *SUBTASKS, POOLED}
    assert_ok(mdad_cli("report", old, cwd=tmp_path))
    # a rule mdad does not know is refused, not guessed
    config["csv_text_cells"] = "other"
    (old / "config.json").write_text(json.dumps(config))
    with pytest.raises(DataError, match=r"config\.json: field csv_text_cells is 'other', "
                                        r"not 'owasp'"):
        read_study_folder(old)


@pytest.mark.slow
def test_data_answers_then_estimate_with_formula_item_ids(tmp_path: Path):
    data = hostile_csv(tmp_path / "hostile.csv")
    mb, answers = tmp_path / "mb.json", tmp_path / "m5.csv"
    assert_ok(mdad_cli("select", data, "--method", "random", "--size", "40", "--out", mb,
                       cwd=tmp_path))
    assert_ok(mdad_cli("data", "answers", data, "--model", "m5", "--items", mb, "--out",
                       answers, cwd=tmp_path))
    rows = assert_no_formula(answers)
    bundle = MicroBenchmarkFile.load(mb)
    assert any(item[:1] in "=+-@'\t" for item in bundle.items)
    assert any(row[0].startswith("'") for row in rows[1:])
    read = read_answers_csv(answers)
    assert list(read) == list(bundle.items)  # exactly the micro-benchmark's ids
    frame = pd.read_csv(data, dtype={"item_id": str}, keep_default_na=False)
    frame["item_id"] = frame.item_id.str.strip()  # as the wide CSV reader takes labels
    truth = frame.set_index("item_id").loc[list(bundle.items), "m5"].mean()
    proc = mdad_cli("estimate", mb, answers, cwd=tmp_path)
    assert_ok(proc)
    assert f"estimated accuracy {100 * truth:.1f}" in flat(proc.stdout)


# ------------------------------------------------------------------ --missing advice


def gappy(gaps: list[tuple[int, int]], n_models: int = 4, n_items: int = 5
          ) -> ResponseMatrix:
    scores = np.tile(np.array([1.0, 0.0, 1.0, 1.0, 0.0]), (n_models, 1))[:, :n_items]
    scores[np.arange(n_models), np.arange(n_models) % n_items] = 1 - scores[
        np.arange(n_models), np.arange(n_models) % n_items]  # models differ
    for model, item in gaps:
        scores[model, item] = np.nan
    return ResponseMatrix(scores, [f"m{k}" for k in range(n_models)],
                          [f"q{k}" for k in range(n_items)], source="gappy.csv")


def test_when_neither_policy_works_every_policy_says_so_and_names_no_policy():
    # each model lacks one item, each item lacks a model: no complete row or column;
    # m1 and m3 lack two items (the first is named), q0 two models
    matrix = gappy([(0, 0), (1, 1), (2, 2), (3, 3), (3, 4), (1, 0)])
    for policy in ("drop-items", "drop-models", "error"):
        with pytest.raises(DataError) as info:
            resolve_missing(matrix, policy)
        message = str(info.value)
        assert message == (
            "gappy.csv: 6 of 20 cells lack a result, and neither drop-items nor drop-models "
            "would leave any data: every item lacks some model's result and every model "
            "lacks some item (model 'm1' lacks the most, 2 of 5 items; item 'q0' lacks the "
            "most, 2 of 4 models' results); fill the gaps, or remove the models or items "
            "with the most gaps from the file until one model or item is complete")
        assert "set missing" not in message


def test_only_drop_models_works():
    matrix = gappy([(0, k) for k in range(4)] + [(1, 4)])  # m2, m3 complete; no item is
    with pytest.raises(DataError, match=r"^gappy\.csv: every item lacks a result for some "
                       r"model, so drop-items would leave no item; set missing to "
                       r"drop-models \(it keeps 2 of 4 models\)$"):
        resolve_missing(matrix, "drop-items")
    with pytest.raises(DataError, match=r"lacks 4 items\); set missing to drop-models$"):
        resolve_missing(matrix, "error")
    kept, report = resolve_missing(matrix, "drop-models")
    assert kept.n_models == 2 and report.dropped_models == ("m0", "m1")
    assert report.describe().endswith(
        "; drop-items is no alternative, as every item lacks some model's result")


def test_only_drop_items_works():
    matrix = gappy([(0, 0), (1, 1), (2, 0), (3, 1)])  # every model lacks one; q2..q4 full
    with pytest.raises(DataError, match=r"^gappy\.csv: every model lacks some items, so "
                       r"drop-models would leave no model; set missing to drop-items "
                       r"\(it keeps 3 of 5 items\)$"):
        resolve_missing(matrix, "drop-models")
    with pytest.raises(DataError, match=r"lacks 1 items\); set missing to drop-items$"):
        resolve_missing(matrix, "error")
    kept, report = resolve_missing(matrix, "drop-items")
    assert kept.n_items == 3 and report.dropped_items == ("q0", "q1")
    assert report.describe().endswith(
        "; drop-models is no alternative, as every model lacks some item")


def test_both_policies_work_and_each_offers_the_other():
    matrix = gappy([(0, 0)])
    with pytest.raises(DataError, match=r"set missing to drop-items or drop-models$"):
        resolve_missing(matrix, "error")
    assert resolve_missing(matrix, "drop-items")[1].describe().endswith(
        "set missing to drop-models to keep them and drop those models instead")
    assert resolve_missing(matrix, "drop-models")[1].describe().endswith(
        "set missing to drop-items to keep them and drop the items instead")


def test_the_cli_says_once_that_no_policy_works(tmp_path: Path):
    path = tmp_path / "gappy.csv"  # items as rows; model i lacks item i % 8
    rows = [f"q{k}," + ",".join("" if k == i % 8 else str((i + k) % 2) for i in range(12))
            for k in range(8)]
    path.write_text("item_id," + ",".join(f"m{i}" for i in range(12)) + "\n"
                    + "\n".join(rows) + "\n")
    for policy in ("drop-items", "drop-models"):
        line = assert_user_error(
            mdad_cli("run", path, "--missing", policy, "--methods", "random", "--out",
                     tmp_path / policy, cwd=tmp_path),
            r"gappy\.csv: 12 of 96 cells lack a result, and neither drop-items nor "
            r"drop-models would leave any data: .* fill the gaps")
        assert "set --missing" not in line


def test_data_answers_writes_through_no_planted_link(tmp_path: Path):
    """Links planted at the answers file, at an old fixed temporary name and at a stale
    temporary's name: each is replaced or removed, the files they point to untouched."""
    import os
    import subprocess
    import sys

    data = hostile_csv(tmp_path / "hostile.csv")
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's")
    ended = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                               capture_output=True, text=True).stdout)
    answers = tmp_path / "m5.csv"
    answers.symlink_to(victim)
    for name in (".m5.csv.tmp", f".m5.csv.{ended}.k9x_2abc.mdad-tmp"):
        (tmp_path / name).symlink_to(victim)
    old = os.umask(0o022)
    try:
        assert_ok(mdad_cli("data", "answers", data, "--model", "m5", "--out", answers,
                           "--force", cwd=tmp_path))
    finally:
        os.umask(old)
    assert victim.read_text() == "the user's"
    assert not answers.is_symlink() and answers.stat().st_mode & 0o777 == 0o644
    assert read_answers_csv(answers)
    assert not (tmp_path / f".m5.csv.{ended}.k9x_2abc.mdad-tmp").is_symlink()  # a leftover
    assert (tmp_path / ".m5.csv.tmp").is_symlink()  # not a name mdad writes: left alone
