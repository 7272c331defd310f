"""Issue 35, silent wrong answer 2: a study of another benchmark is not another version
of the same benchmark's data. `plan mmlu-pro-29 --run <a GPQA study>` was refused with a
message suggesting --allow-other-data-version, and with that flag printed "MDAD 7.0
points" with no word that the study was of GPQA."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import (
    GPQA_CSV,
    MMLU_PRO_CSV,
    assert_ok,
    assert_user_error,
    flat,
    mdad_cli,
    shared_data,
)

from mdad.errors import ConfigError
from mdad.practice.sizing import other_benchmark, study_curve

METHOD = "anchor-points-fast"
PLAN = ("--method", METHOD, "--size", "30")


def error_line(proc: subprocess.CompletedProcess[str], pattern: str) -> str:
    """Exit 2, no traceback, one `mdad: error:` line matching `pattern`, the last one
    (loading the data may note what it dropped before it)."""
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = proc.stderr.removesuffix("\n").split("\n")
    errors = [line for line in lines if line.startswith("mdad: error: ")]
    assert errors == lines[-1:], proc.stderr
    assert re.search(pattern, errors[0]), f"{pattern!r} not in {errors[0]!r}"
    return errors[0]


@pytest.fixture(scope="module")
def gpqa_study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    shared_data(GPQA_CSV)
    root = tmp_path_factory.mktemp("gpqa_study")
    assert_ok(mdad_cli("run", "gpqa", "--methods", METHOD, "--runs", "2", "--resamples", "10",
                       "--sizes", "10,25,50", "--out", "run", cwd=root))
    return root / "run"


def test_a_study_of_another_benchmark_is_refused_whatever_the_flag(gpqa_study: Path,
                                                                   tmp_path: Path) -> None:
    shared_data(MMLU_PRO_CSV)
    for flag in ((), ("--allow-other-data-version",)):
        line = error_line(
            mdad_cli("plan", "mmlu-pro-29", *PLAN, "--run", gpqa_study, *flag, cwd=tmp_path),
            rf"--run {re.escape(str(gpqa_study))} is a study of gpqa, another benchmark than "
            r"mmlu-pro-29 \(not another version of its data\); run a study of mmlu-pro-29 "
            r"\(mdad run mmlu-pro-29\) and pass its folder$")
        assert "allow-other-data-version" not in line


def test_select_from_a_study_of_another_benchmark_is_refused(gpqa_study: Path,
                                                             tmp_path: Path) -> None:
    shared_data(MMLU_PRO_CSV)
    for flag in ((), ("--allow-other-data-version",)):
        error_line(
            mdad_cli("select", "mmlu-pro-29", "--method", METHOD, "--size", "30", "--run",
                     gpqa_study, *flag, "--out", tmp_path / "mb.json", cwd=tmp_path),
            r"is a study of gpqa, another benchmark than mmlu-pro-29")


def test_another_version_of_the_same_benchmark_is_allowed_and_said(gpqa_study: Path,
                                                                   tmp_path: Path) -> None:
    other = tmp_path / "other"
    shutil.copytree(gpqa_study, other)
    config = json.loads((other / "config.json").read_text())
    config["dataset"]["sha256"] = "0" * 64
    (other / "config.json").write_text(json.dumps(config))
    assert_user_error(mdad_cli("plan", "gpqa", *PLAN, "--run", other, cwd=tmp_path),
                      r"was made on other data \(gpqa, sha256 000000000000\.\.\.; this dataset "
                      r"gpqa, \S+\.\.\.\); rerun the study, or pass --allow-other-data-version$")
    proc = mdad_cli("plan", "gpqa", *PLAN, "--run", other, "--allow-other-data-version",
                    cwd=tmp_path)
    assert_ok(proc)
    assert re.search(r"^warning: --run \S+ was made on other data .*: interpolated from it as "
                     r"another version of the same benchmark$", flat(proc.stderr))
    assert f"interpolated from the seen split of the study of gpqa in {other}" in flat(
        proc.stdout)
    answer = json.loads(mdad_cli("plan", "gpqa", *PLAN, "--run", other,
                                 "--allow-other-data-version", "--json", cwd=tmp_path).stdout)
    assert answer["study_dataset"] == "gpqa" and "other data" in answer["study_data_note"]


def test_a_file_whose_name_cannot_tell_gets_the_flag_only_conditionally(
        gpqa_study: Path, tmp_path: Path) -> None:
    """A CSV's name is its file's: it may hold GPQA's data in another version, or not."""
    (tmp_path / "mine.csv").write_bytes(shared_data(GPQA_CSV).read_bytes()[:200_000]
                                        .rsplit(b"\n", 1)[0] + b"\n")
    error_line(
        mdad_cli("plan", "mine.csv", *PLAN, "--run", gpqa_study, cwd=tmp_path),
        r"was made on other data \(gpqa, .*; this dataset mine, .*\); rerun the study on this "
        r"data, or, only if it is another version of gpqa's data, pass "
        r"--allow-other-data-version$")


def test_study_curve_checks_the_benchmark_when_named(gpqa_study: Path) -> None:
    with pytest.raises(ConfigError, match=r"is a study of gpqa, another benchmark than "
                                          r"mmlu-pro-29"):
        study_curve(gpqa_study, METHOD, 0.8, None, dataset="mmlu-pro-29")
    # unnamed (the old call): as before, the sha256 alone
    assert [p.size for p in study_curve(gpqa_study, METHOD, 0.8, None)] == [10, 25, 50]
    assert other_benchmark("synthetic:gpqa", "synthetic:mmlu-pro")
    assert other_benchmark("synthetic:gpqa", "gpqa")
    assert not other_benchmark("gpqa", "gpqa") and not other_benchmark("gpqa", "mine")
    assert not other_benchmark("gpqa", None)
