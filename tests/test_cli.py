"""End-to-end tests of the `mdad` command line, run as a user runs it: real exit codes,
real stderr, real data (GPQA, MMLU-Pro, lm-eval samples). Most run the command in the
test's process (`helpers.mdad_cli`); the GPQA run and the bad inputs run the installed
console script as a new process, as a user's shell does.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import (
    FAST,
    MMLU_PRO_CSV,
    assert_no_out,
    assert_ok,
    assert_user_error,
    flat,
    gpqa_path,
    mdad_cli,
    shared_data,
)

import mdad
from mdad.study import StudyConfig

RUN_FILES = {"results.parquet", "mdad.csv", "agreement.csv", "summary.csv", "config.json"}
MDAD_COLUMNS = ["method", "size", "sources", "split", "mdad", "mdad_low", "mdad_high",
                "threshold", "reached", "max_gap", "pairs", "crossing_pairs", "tied_pairs",
                "mdad_smooth", "mdad_smooth_low", "mdad_smooth_high", "smooth_reached"]
RESULT_COLUMNS = ["run", "method", "size", "n_sources", "model", "estimate", "seen_accuracy",
                  "unseen_accuracy", "full_accuracy"]
DEFAULT_METHODS = ["random", "subtask-equal", "diversity", "confidence-strata", "anchor-points",
                   "tinybenchmarks"]
GPQA_SIZES = [10, 25, 50, 100, 200]
MODEL_SET = "open-llm-leaderboard-v2/model-sets/gpqa_70b_instruct.txt"
PYTHIA_WINOGRANDE = ("lm-eval-samples/EleutherAI__pythia-14m/"
                     "samples_metabench_winogrande_secondary_2024-11-26T10-50-23.349203.jsonl")


# --------------------------------------------------------------------------- helpers


@cache
def gpqa_text() -> str:
    return gpqa_path().read_text(encoding="utf-8")


def gpqa_lines() -> list[str]:
    return gpqa_text().splitlines(keepends=True)


def gpqa_frame() -> pd.DataFrame:
    """The real GPQA CSV, every cell as the text it has in the file."""
    return pd.read_csv(gpqa_path(), dtype=str, keep_default_na=False)


def model_set() -> list[str]:
    lines = shared_data(MODEL_SET).read_text(encoding="utf-8").splitlines()
    return [s for line in lines if (s := line.strip())]


def esc(path: Path | str) -> str:
    return re.escape(str(path))


# ----------------------------------------------------------- 1. end to end on GPQA


@pytest.fixture(scope="module")
def gpqa_run(tmp_path_factory: pytest.TempPathFactory):
    gpqa_path()
    root = tmp_path_factory.mktemp("gpqa")
    out = root / "run"
    proc = mdad_cli("run", "gpqa", "--runs", "3", "--resamples", "50", "--out", out, cwd=root,
                    process=True)
    return proc, out


def test_gpqa_run_writes_a_complete_run_folder(gpqa_run) -> None:
    proc, out = gpqa_run
    assert_ok(proc)
    assert {p.name for p in out.iterdir()} == RUN_FILES
    assert "dropped" not in proc.stderr  # GPQA's grid fits its seen pool
    # every note is a method's reported fallback, with how often it happened, or the
    # warning that 3 runs leave few pairs behind some values
    for line in proc.stderr.splitlines():
        if line.startswith("note:"):
            assert re.match(r"note: (\S+ at size \d+, \d+ of 3 cells: |MDAD rests on few "
                            r"pairs in \d+ of 60 rows)", line), line
    assert "MDAD rests on few pairs" in proc.stderr
    # each note whole on one line, as the terminal would wrap it: none cut at 80 columns
    few = next(line for line in proc.stderr.splitlines() if "few pairs" in line)
    assert few.startswith("note: ") and few.endswith("compare with the smooth estimate")
    assert f"wrote {out}" in flat(proc.stdout)
    assert re.search(r"gpqa: 420 models x 448 items, 3 runs, 50 targets", flat(proc.stdout))


def test_gpqa_mdad_csv(gpqa_run) -> None:
    _, out = gpqa_run
    table = pd.read_csv(out / "mdad.csv")
    assert list(table.columns) == MDAD_COLUMNS
    assert (out / "mdad.csv").read_text().splitlines()[0] == ",".join(MDAD_COLUMNS)
    assert list(table.method.unique()) == DEFAULT_METHODS
    assert sorted(table["size"].unique()) == GPQA_SIZES
    assert set(table.sources) == {300}
    assert set(table.split) == {"seen", "unseen"}
    assert len(table) == len(DEFAULT_METHODS) * len(GPQA_SIZES) * 2
    assert not table.duplicated(["method", "size", "sources", "split"]).any()
    assert (table.threshold == 0.8).all()
    # a value is a number exactly when it was reached; censored ones are empty
    assert (table.reached == table.mdad.notna()).all()
    assert (table.smooth_reached == table.mdad_smooth.notna()).all()
    reached = table[table.reached]
    assert (reached.mdad_low <= reached.mdad).all()
    assert ((reached.mdad <= reached.mdad_high) | reached.mdad_high.isna()).all()
    assert ((reached.mdad <= reached.max_gap) & (reached.crossing_pairs > 0)).all()
    assert (table.pairs == 3 * 50 * 49 // 2).all() and (table.tied_pairs < table.pairs).all()
    # the binned curve behind every value: it recomputes the first crossing
    curves = pd.read_csv(out / "agreement.csv")
    assert list(curves.columns) == ["method", "size", "sources", "split", "gap", "pairs",
                                    "agreeing"]
    keys = ["method", "size", "sources", "split"]
    for key, curve in curves.groupby(keys, sort=False):
        row = table.set_index(keys).loc[key]
        assert curve.pairs.sum() == row.pairs
        hit = curve[curve.agreeing / curve.pairs >= 0.8]
        assert (hit.gap.iloc[0] == row.mdad) if len(hit) else np.isnan(row.mdad)
        if len(hit):
            assert hit.pairs.iloc[0] == row.crossing_pairs


def test_gpqa_results_parquet(gpqa_run) -> None:
    _, out = gpqa_run
    results = pd.read_parquet(out / "results.parquet")
    assert list(results.columns) == RESULT_COLUMNS
    assert len(results) == 3 * len(DEFAULT_METHODS) * 5 * 1 * 50
    assert sorted(results.run.unique()) == [0, 1, 2]
    assert set(results.method.astype(str)) == set(DEFAULT_METHODS)
    assert sorted(results["size"].unique()) == GPQA_SIZES
    assert set(results.n_sources) == {300}
    # one row per run x method x size x source count x target
    cells = results.groupby(["run", "method", "size", "n_sources"], observed=True)
    assert (cells.size() == 50).all() and cells.ngroups == 3 * len(DEFAULT_METHODS) * 5
    assert (cells.model.nunique() == 50).all()
    # a paired design: every cell of a run judges the same 50 targets
    for _, run in results.groupby("run"):
        targets = run.groupby(["method", "size"], observed=True).model.apply(frozenset)
        assert targets.nunique() == 1
    scores = results[["estimate", "seen_accuracy", "unseen_accuracy", "full_accuracy"]]
    assert scores.notna().all().all()
    assert ((scores >= 0) & (scores <= 1)).all().all()
    # the reference accuracies depend on the run and the model only
    per_target = results.groupby(["run", "model"])
    assert (per_target[["seen_accuracy", "unseen_accuracy", "full_accuracy"]].nunique() == 1
            ).all().all()


def test_gpqa_summary_csv(gpqa_run) -> None:
    _, out = gpqa_run
    summary = pd.read_csv(out / "summary.csv")
    assert list(summary.columns[:3]) == ["method", "size", "sources"]
    stats = {f"{metric}_{split}{se}" for metric in ("mae", "kendall_tau")
             for split in ("seen", "unseen") for se in ("", "_se")}
    assert stats <= set(summary.columns)
    assert len(summary) == len(DEFAULT_METHODS) * 5
    assert not summary.duplicated(["method", "size", "sources"]).any()
    assert set(summary.method) == set(DEFAULT_METHODS)
    assert sorted(summary["size"].unique()) == GPQA_SIZES
    assert summary[sorted(stats)].notna().all().all()
    for split in ("seen", "unseen"):
        assert summary[f"mae_{split}"].between(0, 1).all()
        assert summary[f"kendall_tau_{split}"].between(-1, 1).all()
        assert (summary[f"mae_{split}_se"] >= 0).all()
        assert (summary[f"kendall_tau_{split}_se"] >= 0).all()


def test_gpqa_config_json(gpqa_run) -> None:
    _, out = gpqa_run
    config = json.loads((out / "config.json").read_text())
    assert config["mdad_version"] == mdad.__version__
    assert config["dataset"]["sha256"] == hashlib.sha256(gpqa_path().read_bytes()).hexdigest()
    assert config["dataset"]["n_models"] == 420 and config["dataset"]["n_items"] == 448
    study = config["study"]
    assert {f.name for f in dataclasses.fields(StudyConfig)} <= set(study)
    assert study["sizes"] == GPQA_SIZES
    assert study["seed"] == 0
    assert study["methods"] == DEFAULT_METHODS
    assert study["n_runs"] == 3 and study["n_resamples"] == 50
    assert study["n_targets"] == 50 and study["sources"] == [300]
    assert study["target_models"] is None
    assert study["threshold"] == 0.8
    # what a rerun on another machine may differ by: BLAS's kernels among it
    environment = config["environment"]
    assert environment["numpy"] == np.__version__ and environment["machine"]
    assert environment["blas"] and all(len(kernel.split()) == 3
                                       for kernel in environment["blas"])


@pytest.mark.slow
def test_gpqa_rerun_is_byte_identical(gpqa_run, tmp_path: Path) -> None:
    _, first = gpqa_run
    again = tmp_path / "again"
    assert_ok(mdad_cli("run", "gpqa", "--runs", "3", "--resamples", "50", "--out", again,
                       cwd=tmp_path))
    for name in ("mdad.csv", "summary.csv"):
        assert (again / name).read_bytes() == (first / name).read_bytes(), name
    pd.testing.assert_frame_equal(pd.read_parquet(again / "results.parquet"),
                                  pd.read_parquet(first / "results.parquet"))


def test_run_folder_has_ordinary_permissions(gpqa_run) -> None:
    """The run folder is made like any folder (mode 0777 minus the umask), not private."""
    _, out = gpqa_run
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o777 & ~umask


def test_table_shows_both_estimators_and_the_pairs(gpqa_run) -> None:
    proc, _ = gpqa_run
    text = flat(proc.stdout)
    assert "each MDAD from 3,675 target pairs" in text
    assert "smooth seen" in text and "smooth unseen" in text


def test_several_source_counts(tmp_path: Path) -> None:
    gpqa_path()
    out = tmp_path / "sources"
    assert_ok(mdad_cli("run", "gpqa", *FAST, "--methods", "random,anchor-points", "--sources",
                       "10,50", "--out", out, cwd=tmp_path))
    table = pd.read_csv(out / "mdad.csv")
    assert sorted(table.sources.unique()) == [10, 50]
    n_methods = 2
    assert len(table) == n_methods * 5 * 2 * 2
    summary = pd.read_csv(out / "summary.csv")
    assert sorted(summary.sources.unique()) == [10, 50] and len(summary) == n_methods * 5 * 2
    results = pd.read_parquet(out / "results.parquet")
    assert sorted(results.n_sources.unique()) == [10, 50]
    assert len(results) == 2 * n_methods * 5 * 2 * 50
    # both source counts judge the same targets in a run
    for _, run in results.groupby("run"):
        assert run.groupby("n_sources").model.apply(frozenset).nunique() == 1
    assert json.loads((out / "config.json").read_text())["study"]["sources"] == [10, 50]


def test_fast_runs_each_methods_documented_approximation(tmp_path: Path) -> None:
    out = tmp_path / "fast"
    proc = mdad_cli("run", "gpqa", *FAST, "--fast", "--methods",
                    "random,diversity,anchor-points,tinybenchmarks-map", "--out", out,
                    cwd=tmp_path)
    assert_ok(proc)
    study = json.loads((out / "config.json").read_text())["study"]
    # methods without a fast variant stay as they are
    assert study["methods"] == ["random", "diversity-fast", "anchor-points-fast",
                                "tinybenchmarks-map"]
    again = mdad_cli("run", "--resume", out, "--fast", cwd=tmp_path)
    assert again.returncode == 2 and "drop --fast" in flat(again.stderr + again.stdout)


def test_fixed_target_models(tmp_path: Path) -> None:
    names = model_set()
    assert len(names) == 12
    out = tmp_path / "fixed"
    proc = mdad_cli("run", "gpqa", *FAST, "--methods", "random,anchor-points",
                    "--target-models", shared_data(MODEL_SET), "--out", out, cwd=tmp_path)
    assert_ok(proc)
    assert "2 runs, 12 targets" in flat(proc.stdout)
    results = pd.read_parquet(out / "results.parquet")
    assert sorted(results.run.unique()) == [0, 1]
    for _, run in results.groupby("run"):
        assert set(run.model) == set(names)
        assert (run.groupby(["method", "size"], observed=True).model.nunique() == 12).all()
    study = json.loads((out / "config.json").read_text())["study"]
    assert study["n_targets"] == 12 and study["target_models"] == names


# ------------------------------------------------- 2. default sizes above the seen pool


@pytest.fixture
def small_gpqa(tmp_path: Path) -> Path:
    """The first 100 items of GPQA (a 50-item seen pool), written with pandas, without
    the text column `subtask_range` (which would be reported as metadata)."""
    path = tmp_path / "gpqa_100.csv"
    pd.read_csv(gpqa_path()).head(100).drop(columns="subtask_range").to_csv(path, index=False)
    return path


def test_default_sizes_above_the_seen_pool_are_dropped_with_a_notice(
        small_gpqa: Path, tmp_path: Path) -> None:
    out = tmp_path / "small"
    proc = mdad_cli("run", small_gpqa, *FAST, "--sources", "50",
                    "--orientation", "items-as-rows", "--out", out, cwd=tmp_path)
    assert_ok(proc)
    assert re.search(r"note: sizes 100, 250, 500, 1000 dropped: the seen pool holds 50 items",
                     flat(proc.stderr))
    assert sorted(pd.read_csv(out / "mdad.csv")["size"].unique()) == [10, 25, 50]
    config = json.loads((out / "config.json").read_text())
    assert config["study"]["sizes"] == [10, 25, 50]
    assert any("100, 250, 500, 1000" in notice for notice in config["notices"])


def test_auto_orientation_reads_a_small_items_as_rows_file(
        small_gpqa: Path, tmp_path: Path) -> None:
    """100 items x 420 models with a `subset` column: still one row per item."""
    out = tmp_path / "auto"
    proc = mdad_cli("run", small_gpqa, *FAST, "--methods", "random", "--sources", "50",
                    "--out", out, cwd=tmp_path)
    assert_ok(proc)
    assert re.search(r"sizes 100, 250, 500, 1000 dropped", flat(proc.stderr))


def test_explicit_size_above_the_seen_pool_is_an_error(
        small_gpqa: Path, tmp_path: Path) -> None:
    out = tmp_path / "small"
    proc = mdad_cli("run", small_gpqa, *FAST, "--sources", "50", "--orientation",
                    "items-as-rows", "--sizes", "60", "--out", out, cwd=tmp_path)
    assert_user_error(proc, r"--sizes 60 is larger than the seen pool of 50 items .*"
                            r"use --sizes up to 50")
    assert_no_out(out)


# ------------------------------------------------------ 3. data info, missing cells


def test_data_info_gpqa(tmp_path: Path) -> None:
    gpqa_path()
    proc = mdad_cli("data", "info", "gpqa", cwd=tmp_path)
    assert_ok(proc)
    text = flat(proc.stdout)
    assert re.search(r"models\W+420\b", text)
    assert re.search(r"items\W+448\b", text)
    assert re.search(r"missing cells\W+0\b", text)


def test_data_info_prints_the_whole_sha256(tmp_path: Path) -> None:
    """A digest cut to '0869b2…' cannot be compared with config.json's."""
    proc = mdad_cli("data", "info", "gpqa", cwd=tmp_path)
    assert_ok(proc)
    assert hashlib.sha256(gpqa_path().read_bytes()).hexdigest() in proc.stdout


def test_data_info_mmlu_pro_counts_missing_cells(tmp_path: Path) -> None:
    shared_data(MMLU_PRO_CSV)
    proc = mdad_cli("data", "info", "mmlu-pro-29", cwd=tmp_path)
    assert_ok(proc)
    text = flat(proc.stdout)
    assert re.search(r"models\W+29\b", text)
    assert re.search(r"items\W+12032\b", text)
    assert re.search(r"missing cells\W+1713 \(3 models, 1706 items\)", text)


@pytest.mark.slow
def test_mmlu_pro_run_drops_items_and_says_so(tmp_path: Path) -> None:
    shared_data(MMLU_PRO_CSV)
    out = tmp_path / "mmlu"
    proc = mdad_cli("run", "mmlu-pro-29", *FAST, "--sizes", "10,25", "--out", out,
                    cwd=tmp_path)
    assert_ok(proc)
    assert re.search(r"note: dropped 1706 items that lack a result for at least one model "
                     r"\(1713 cells without a result: DeepSeek-Coder-V2_5shots \(1681\), "
                     r".*set --missing to drop-models", flat(proc.stderr))
    config = json.loads((out / "config.json").read_text())
    assert config["dataset"]["dropped_items"] == 1706
    assert config["dataset"]["n_items"] == 12032 - 1706
    assert config["dataset"]["n_models"] == 29
    assert config["study"]["n_targets"] == 10 and config["study"]["sources"] == [19]
    results = pd.read_parquet(out / "results.parquet")
    assert set(results.n_sources) == {19}
    assert (results.groupby(["run", "method", "size"], observed=True).model.nunique() == 10
            ).all()


def test_mmlu_pro_drop_models_leaves_too_few_models(tmp_path: Path) -> None:
    shared_data(MMLU_PRO_CSV)
    out = tmp_path / "mmlu"
    proc = mdad_cli("run", "mmlu-pro-29", *FAST, "--sizes", "10,25", "--missing",
                    "drop-models", "--out", out, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert re.search(r"note: dropped 3 models that lack results \(1713 cells without a result",
                     flat(proc.stderr))
    last = proc.stderr.removesuffix("\n").split("\n")[-1]
    assert re.fullmatch(r"mdad: error: .*mmlu_pro_29_models\.csv has 26 models, fewer than "
                        r"10 targets \+ 19 sources; use --sources 16 or less with 10 targets, "
                        r"or --targets 7 or less with 19 sources", last), proc.stderr
    assert_no_out(out)


def test_mmlu_pro_missing_error_policy_fails(tmp_path: Path) -> None:
    shared_data(MMLU_PRO_CSV)
    out = tmp_path / "mmlu"
    proc = mdad_cli("run", "mmlu-pro-29", *FAST, "--sizes", "10,25", "--missing", "error",
                    "--out", out, cwd=tmp_path)
    assert_user_error(proc, r"mmlu_pro_29_models\.csv: 1713 cells lack a result \(model "
                            r"DeepSeek-Coder-V2_5shots lacks 1681 items\); set --missing to "
                            r"drop-items or drop-models")
    assert_no_out(out)


def test_an_empty_cell_is_missing_not_an_error(tmp_path: Path) -> None:
    frame = gpqa_frame()
    frame.iat[2, 3] = ""
    path = tmp_path / "one_gap.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "gap"
    proc = mdad_cli("run", path, *FAST, "--methods", "random", "--sizes", "10", "--out", out,
                    cwd=tmp_path)
    assert_ok(proc)
    assert re.search(rf"dropped 1 items? that lacks? a result for at least one model \(1 "
                     rf"cells? without a result: {re.escape(frame.columns[3])} \(1\)\)",
                     flat(proc.stderr))
    assert json.loads((out / "config.json").read_text())["dataset"]["n_items"] == 447


# ---------------------------------------------------------------- 4. bad input

BadInput = Callable[[Path], tuple[list[object], str]]
BAD_INPUTS: dict[str, BadInput] = {}


def bad_input(name: str) -> Callable[[BadInput], BadInput]:
    """Register a case: a builder taking tmp_path, returning `mdad run` arguments and
    the pattern the one-line error must match."""
    def register(build: BadInput) -> BadInput:
        BAD_INPUTS[name] = build
        return build
    return register


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(lines), encoding="utf-8")
    return path


@bad_input("missing file")
def _missing_file(tmp: Path):
    path = tmp / "nothing.csv"
    return [path], rf"'{esc(path)}' is neither a known dataset .* nor an existing file"


@bad_input("empty directory")
def _empty_directory(tmp: Path):
    path = tmp / "empty"
    path.mkdir()
    return [path], rf"{esc(path)}: no samples_\*\.jsonl files"


@bad_input("empty file")
def _empty_file(tmp: Path):
    path = tmp / "empty.csv"
    path.write_text("")
    return [path], rf"{esc(path)}: the file is empty"


@bad_input("not utf-8")
def _latin1(tmp: Path):
    path = tmp / "latin1.csv"
    path.write_bytes(gpqa_lines()[0].encode() + b"\xe9\xff" + gpqa_lines()[1][1:].encode())
    return [path], rf"{esc(path)}: not a UTF-8 text file"


@bad_input("row with too many fields")
def _too_many_fields(tmp: Path):
    lines = gpqa_lines()
    lines[4] = lines[4].rstrip("\n") + ",1\n"
    path = write_lines(tmp / "long_row.csv", lines)
    return [path], rf"{esc(path)}: line 5 has more fields than the header \(423\D+422\)"


@bad_input("row with too few fields (last one cut)")
def _too_few_fields_end(tmp: Path):
    lines = gpqa_lines()
    lines[6] = lines[6].rstrip("\n").rsplit(",", 1)[0] + "\n"
    path = write_lines(tmp / "short_row.csv", lines)
    return [path], rf"{esc(path)}: line 7 has fewer fields than the header \(421\D+422\)"


@bad_input("row with too few fields (first one cut)")
def _too_few_fields_start(tmp: Path):
    lines = gpqa_lines()
    lines[6] = lines[6].split(",", 1)[1]
    path = write_lines(tmp / "short_row.csv", lines)
    return [path], rf"{esc(path)}: line 7 has fewer fields than the header \(421\D+422\)"


def _bad_cell(tmp: Path, value: str):
    frame = gpqa_frame()
    frame.iat[2, 3] = value
    path = tmp / "bad_cell.csv"
    frame.to_csv(path, index=False)
    return [path], (rf"{esc(path)}: line 4, column {re.escape(repr(frame.columns[3]))}: "
                    rf"'{re.escape(value)}' is not a score in \[0, 1\]")


bad_input("cell 'abc'")(lambda tmp: _bad_cell(tmp, "abc"))
bad_input("cell 1.5")(lambda tmp: _bad_cell(tmp, "1.5"))


@bad_input("model column without data")
def _empty_model(tmp: Path):
    frame = gpqa_frame()
    frame.iloc[:, 3] = ""
    path = tmp / "empty_model.csv"
    frame.to_csv(path, index=False)
    return [path], rf"{esc(path)}: model {re.escape(frame.columns[3])} has no data"


@bad_input("item row without data")
def _empty_item(tmp: Path):
    frame = gpqa_frame()
    models = [c for c in frame.columns if c not in ("subset", "subtask_range")]
    frame.loc[5, models] = ""
    path = tmp / "empty_item.csv"
    frame.to_csv(path, index=False)
    return [path], rf"{esc(path)}: item \S+ has no data for any model"


@bad_input("duplicate model name")
def _duplicate_model(tmp: Path):
    lines = gpqa_lines()
    fields = lines[0].split(",")
    fields[5] = fields[4]
    lines[0] = ",".join(fields)
    path = write_lines(tmp / "dup_model.csv", lines)
    return [path], (rf"{esc(path)}: columns 5 and 6 are both named '{re.escape(fields[4])}'; "
                    "give each column its own name")


@bad_input("duplicate item id")
def _duplicate_item(tmp: Path):
    frame = gpqa_frame()
    frame.insert(0, "item_id", [f"q{i}" for i in range(len(frame))])
    frame.loc[7, "item_id"] = "q3"
    path = tmp / "dup_item.csv"
    frame.to_csv(path, index=False)
    return [path], (rf"{esc(path)}: lines 5 and 9 both have item_id 'q3' \(read without "
                    r"surrounding spaces\); give each item its own id")


@bad_input("item ids that differ only by spaces")
def _spaced_item(tmp: Path):
    frame = gpqa_frame()
    frame.insert(0, "item_id", [f"q{i}" for i in range(len(frame))])
    frame.loc[1, "item_id"] = "q0 "  # kept apart, it made answers `estimate` refuses
    path = tmp / "spaced_item.csv"
    frame.to_csv(path, index=False)
    return [path], rf"{esc(path)}: lines 2 and 3 both have item_id 'q0'"


@bad_input("malformed lm-eval jsonl line")
def _bad_jsonl(tmp: Path):
    real = shared_data(PYTHIA_WINOGRANDE)
    folder = tmp / "samples" / "model_a"
    folder.mkdir(parents=True)
    text = real.read_text(encoding="utf-8")
    text += "" if text.endswith("\n") else "\n"
    broken = len(text.splitlines()) + 1
    path = folder / real.name
    path.write_text(text + '{"doc_id": 999, "acc": \n', encoding="utf-8")
    return [tmp / "samples"], rf"{esc(path)}: line {broken}: not valid JSON"


@bad_input("too many targets and sources")
def _too_many_models(tmp: Path):
    gpqa_path()
    return (["gpqa", "--targets", "400", "--sources", "300"],
            r"gpqa_main\.csv has 420 models, fewer than 400 targets \+ 300 sources; use "
            r"--sources 20 or less with 400 targets, or --targets 120 or less with 300 sources")


@bad_input("too many sources")
def _too_many_sources(tmp: Path):
    gpqa_path()
    return (["gpqa", "--sources", "400"],
            r"gpqa_main\.csv has 420 models, fewer than 50 targets \+ 400 sources; use "
            r"--sources 370 or less with 50 targets, or --targets 20 or less with 400 sources")


@bad_input("size above the seen pool")
def _size_too_big(tmp: Path):
    gpqa_path()
    return (["gpqa", "--sizes", "300"],
            r"--sizes 300 is larger than the seen pool of 224 items\b.*up to 224")


@bad_input("unknown method")
def _unknown_method(tmp: Path):
    gpqa_path()
    return (["gpqa", "--methods", "random,bogus"],
            r"unknown method 'bogus'; choose from: .*\brandom\b.*\bsubtask-equal\b.*"
            r"\bsubtask-proportional\b")


@bad_input("unknown dataset")
def _unknown_dataset(tmp: Path):
    return (["nope"], r"'nope' is neither a known dataset \(.*\bgpqa\b.*\bmmlu-pro-29\b.*\) "
                      r"nor an existing file or folder")


@bad_input("threshold 1.5")
def _threshold(tmp: Path):
    gpqa_path()
    return ["gpqa", "--threshold", "1.5"], r"--threshold must be in \(0, 1\); got 1\.5"


@bad_input("zero runs")
def _zero_runs(tmp: Path):
    gpqa_path()
    return ["gpqa", "--runs", "0"], r"--runs must be an integer >= 1; got 0"


@bad_input("sizes not numbers")
def _sizes_text(tmp: Path):
    gpqa_path()
    return (["gpqa", "--sizes", "10,abc"],
            r"--sizes takes whole numbers separated by commas; got '10,abc'")


@bad_input("an empty entry in sizes")
def _sizes_gap(tmp: Path):
    gpqa_path()
    return (["gpqa", "--sizes", "5,,10"],
            r"--sizes '5,,10': entry 2 is empty; separate the values by single commas, "
            r"with none at the ends")


@bad_input("an empty sizes")
def _sizes_empty(tmp: Path):  # once ran the study with the default sizes
    gpqa_path()
    return (["gpqa", "--sizes", ""],
            r"--sizes is empty; give one value or more, separated by commas")


@bad_input("an empty targets")
def _targets_empty(tmp: Path):
    gpqa_path()
    return ["gpqa", "--targets", " "], r"--targets takes a whole number or 'all'; got ' '"


@bad_input("a trailing comma in methods")
def _methods_gap(tmp: Path):
    gpqa_path()
    return (["gpqa", "--methods", "random,"],
            r"--methods 'random,': entry 2 is empty; separate the values by single commas")


@bad_input("unknown target model")
def _unknown_target(tmp: Path):
    gpqa_path()
    path = tmp / "targets.txt"
    path.write_text("\n".join([*model_set()[:11], "not-a-model"]) + "\n")
    return (["gpqa", "--target-models", path],
            r"--target-models: model 'not-a-model' is not in .*gpqa_main\.csv "
            r"\(1 of 12 names unknown\)")


@bad_input("target models file missing")
def _target_file_missing(tmp: Path):
    gpqa_path()
    path = tmp / "no_targets.txt"
    return ["gpqa", "--target-models", path], rf"--target-models {esc(path)}: no such file"


@bad_input("out folder not empty")
def _out_not_empty(tmp: Path):
    gpqa_path()
    (tmp / "out").mkdir()
    (tmp / "out" / "keep.txt").write_text("earlier results\n")
    return ["gpqa"], rf"--out {esc(tmp / 'out')} already exists and is not empty"


@pytest.mark.parametrize("case", list(BAD_INPUTS), ids=list(BAD_INPUTS))
def test_bad_input_is_one_line_and_exit_2(case: str, tmp_path: Path) -> None:
    args, pattern = BAD_INPUTS[case](tmp_path)
    out = tmp_path / "out"
    before = {p.name for p in out.iterdir()} if out.exists() else None
    proc = mdad_cli("run", *FAST, *args, "--out", out, cwd=tmp_path, process=True)
    assert_user_error(proc, pattern)
    assert_no_out(out, before)
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("option, value", [
    ("--missing", "bogus"),
    ("--orientation", "sideways"),
    ("--runs", "x"),
    ("--threshold", "abc"),
])
def test_bad_option_values_are_usage_errors(option: str, value: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = mdad_cli("run", "gpqa", *FAST, option, value, "--out", out, cwd=tmp_path)
    assert_user_error(proc, rf"^mdad: error: Invalid value for '{option}': .*; see 'mdad run "
                            rf"--help'$")
    assert_no_out(out)


@pytest.mark.parametrize("args, pattern", [
    (("plan",), r"Missing argument 'dataset'; see 'mdad plan --help'$"),
    (("run", "gpqa", "--nope"), r"No such option: --nope; see 'mdad run --help'$"),
    (("data", "nope"), r"No such command 'nope'; see 'mdad data --help'$"),
    (("frob",), r"No such command 'frob'; see 'mdad --help'$"),
])
def test_click_s_usage_errors_are_one_line_too(args: tuple[str, ...], pattern: str,
                                               tmp_path: Path) -> None:
    assert_user_error(mdad_cli(*args, cwd=tmp_path), pattern)


def test_a_command_group_alone_shows_its_help(tmp_path: Path) -> None:
    proc = mdad_cli("adaptive", cwd=tmp_path)
    assert proc.returncode == 2 and "Commands:" in proc.stdout + proc.stderr
    assert "mdad: error" not in proc.stderr


def test_data_info_unknown_dataset_is_one_line(tmp_path: Path) -> None:
    assert_user_error(mdad_cli("data", "info", "nope", cwd=tmp_path),
                      r"'nope' is neither a known dataset")


# ----------------------------------------------------------------- help and version


@pytest.mark.parametrize("command", [[], ["run"], ["plan"], ["select"], ["estimate"],
                                     ["compare"], ["report"], ["methods"], ["data", "info"]])
def test_help_shows_flags_as_flags_and_whole_defaults(command: list[str],
                                                      tmp_path: Path) -> None:
    proc = mdad_cli(*command, "--help", cwd=tmp_path, columns=100)
    assert_ok(proc)
    assert "<bool>" not in proc.stdout and "…" not in proc.stdout


def test_version(tmp_path: Path) -> None:
    proc = mdad_cli("--version", cwd=tmp_path)
    assert_ok(proc)
    assert proc.stdout.strip() == f"mdad {mdad.__version__}"


def test_data_info_takes_the_synthetic_options_of_run(tmp_path: Path) -> None:
    proc = mdad_cli("data", "info", "synthetic:gpqa", "--models", "30", "--data-seed", "2",
                    cwd=tmp_path)
    assert_ok(proc)
    assert "synthetic:gpqa (30 models, seed 2)" in proc.stdout
    assert re.search(r"models\s+│ 30 ", proc.stdout)
    assert_user_error(mdad_cli("data", "info", "synthetic:gpqa", "--models", "1",
                               cwd=tmp_path), r"--models must be between 2 and 5000; got 1")


def test_the_study_table_splits_by_split_on_a_narrow_terminal(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from mdad.cli.render import study_tables

    out = tmp_path / "run"
    assert_ok(mdad_cli("run", "gpqa", *FAST, "--methods", "random,subtask-proportional",
                       "--sizes", "10,25", "--out", out, cwd=tmp_path))
    mdad, summary = pd.read_csv(out / "mdad.csv"), pd.read_csv(out / "summary.csv")
    wide = Console(width=200, file=io.StringIO())
    assert len(study_tables(wide, mdad, summary, "gpqa")) == 1
    text = io.StringIO()
    narrow = Console(width=80, file=text)
    tables = study_tables(narrow, mdad, summary, "gpqa")
    assert [str(t.title).split("; ")[1] for t in tables] == ["seen split", "unseen split"]
    for table in tables:
        narrow.print(table)
    # the last caption explains the marks the tables show, and only those
    cells = " ".join(str(cell) for table in tables for column in table.columns
                     for cell in column.cells)
    assert tables[0].caption is None
    for mark, legend in (("†", "† few pairs"), ("‡", "‡ the first-crossing"),
                         ("> ", "> x: not reached")):
        assert (mark in cells) == (legend in str(tables[-1].caption or "")), mark
    lines = text.getvalue().splitlines()
    assert max(map(len, lines)) <= 80 and "…" not in text.getvalue()  # nothing cut
    for split in ("seen", "unseen"):
        rows = [line.split() for line in text.getvalue().split(f"{split} split")[1]
                .splitlines() if line.strip().startswith(("random ", "subtask-proportional "))]
        assert [r[:2] for r in rows[:4]] == [["random", "10"], ["random", "25"],
                                             ["subtask-proportional", "10"],
                                             ["subtask-proportional", "25"]]
        for row, line in zip(summary.itertuples(), rows, strict=False):
            assert line[-1] == f"{getattr(row, f'kendall_tau_{split}'):.2f}"
            assert line[-2] == f"{100 * getattr(row, f'mae_{split}'):.1f}"


@pytest.mark.parametrize(("given", "expected"), [(None, "False"), ("1", "True")])
def test_the_cli_turns_numpy_s_huge_page_advice_off_unless_the_user_set_it(given, expected):
    """numpy's huge-page advice made the kernel compact memory on first touch here, twice
    Anchor Points' time (benchmarks/bench_hugepages.py): `mdad` sets
    NUMPY_MADVISE_HUGEPAGE=0 before numpy loads, in it and so in its workers."""
    env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    if given is not None:
        env["NUMPY_MADVISE_HUGEPAGE"] = given
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print(__import__('numpy')._core.multiarray"
            "._get_madvise_hugepage()))\n"
            "sys.argv = ['mdad', 'methods']\n"
            "from mdad.cli.app import main\n"
            "main()\n")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == expected
