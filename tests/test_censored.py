"""Trust at the edges: a value that was not reached is censored everywhere (mdad.csv,
the table, the figures' data, the sentences), thin and degenerate data say so."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import GPQA_CSV, assert_ok, flat, mdad_cli, shared_data

from mdad.report.figures import not_preserved_share
from mdad.report.sentences import findings
from mdad.study.folder import read_study_folder
from mdad.study.trust import thin_data_notices

MODEL_SET_7B = "open-llm-leaderboard-v2/model-sets/gpqa_7b_instruct.txt"


def write_wide_csv(path: Path, correctness: np.ndarray) -> Path:
    """Items as rows, one column per model."""
    frame = pd.DataFrame(correctness.T, columns=[f"m{k}" for k in range(correctness.shape[0])])
    frame.insert(0, "item_id", [f"q{i}" for i in range(correctness.shape[1])])
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("kind", ["identical", "all-correct", "all-wrong"])
def test_degenerate_data_is_censored_and_says_so(kind: str, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    row = (rng.random(40) < 0.5).astype(int)
    correctness = {"identical": np.tile(row, (12, 1)), "all-correct": np.ones((12, 40), int),
                   "all-wrong": np.zeros((12, 40), int)}[kind]
    data = write_wide_csv(tmp_path / "flat.csv", correctness)
    out = tmp_path / "run"
    report = ("--report",) if kind == "identical" else ()  # the page once: it is slow
    proc = mdad_cli("run", data, "--methods", "random", "--runs", "3", "--targets", "6",
                    "--sources", "5", "--sizes", "5,10", "--resamples", "20", *report,
                    "--out", out, cwd=tmp_path)
    assert_ok(proc)
    assert "no MDAD can be measured where fewer than 30 target pairs differ" in flat(proc.stderr)
    assert "0 of 45 pairs differ" in flat(proc.stderr)
    assert "check that the models are not identical" in flat(proc.stderr)
    assert "Warning" not in proc.stderr  # nor matplotlib's, from the report's figures
    table = pd.read_csv(out / "mdad.csv")
    assert not table.reached.any() and not table.smooth_reached.any()
    assert table[["mdad", "mdad_low", "mdad_high", "mdad_smooth"]].isna().all().all()
    assert (table.tied_pairs == table.pairs).all() and (table.max_gap == 0).all()
    # the empty cells are empty in the file, not "nan" or 0.5
    header, first = (out / "mdad.csv").read_text().splitlines()[:2]
    assert dict(zip(header.split(","), first.split(","), strict=True))["mdad"] == ""
    # the notice says no MDAD can be measured: no value, and no "> 0.0" bound either
    assert "not measurable" in proc.stdout
    assert "> 0.0" not in proc.stdout and "50.0" not in proc.stdout
    if report:
        page = (out / "report.html").read_text()
        assert "No MDAD can be measured in this run" in page and "&gt; 0.0" not in page
    # the agreement curve behind it: every pair tied, none agrees
    curves = pd.read_csv(out / "agreement.csv")
    assert (curves.gap == 0).all() and (curves.agreeing == 0).all()


@pytest.mark.slow
def test_unreached_values_on_gpqa_with_the_7b_targets(tmp_path: Path) -> None:
    """The issue's example: the 7B instruct models are close, so on the unseen split
    most MDADs are never reached. They are censored, not 50 points."""
    out = tmp_path / "run"
    shared_data(GPQA_CSV)
    proc = mdad_cli("run", "gpqa", "--methods", "random", "--runs", "10", "--resamples", "50",
                    "--target-models", shared_data(MODEL_SET_7B), "--out", out, cwd=tmp_path)
    assert_ok(proc)
    table = pd.read_csv(out / "mdad.csv")
    unseen = table[table.split == "unseen"]
    censored = unseen[~unseen.reached]
    assert len(censored) >= 2
    assert censored.mdad.isna().all() and (censored.max_gap.between(0.05, 0.3)).all()
    for row in censored.itertuples():
        assert f"> {100 * row.max_gap:.1f}" in proc.stdout
    assert (table.mdad.dropna() < 0.5).all()
    run = read_study_folder(out)
    shares = not_preserved_share(run)
    assert shares.share.between(0, 1).all()
    texts = " ".join(f.text for f in findings(run))
    assert "50.0" not in texts


def test_thin_data_notice_names_rows_and_suggests_more_runs() -> None:
    rows = pd.DataFrame({
        "method": ["random", "random", "anchor-points"], "size": [10, 25, 10],
        "sources": [300] * 3, "split": ["seen"] * 3, "mdad": [0.0, 0.1, np.nan],
        "reached": [True, True, False], "pairs": [225, 5000, 5000],
        "crossing_pairs": [3, 400, 0], "tied_pairs": [0, 10, 4990]})
    notices = thin_data_notices(rows)
    assert len(notices) == 2
    flat_notice, thin = notices
    assert "1 of 3 rows" in flat_notice and "anchor-points at 10 items" in flat_notice
    assert "10 of 5000 pairs differ" in flat_notice
    assert "check that the models are not identical" in flat_notice  # most pairs tie
    assert "too few pairs at all" not in flat_notice
    assert "1 of 3 rows" in thin and "random at 10 items, 300 sources, seen (225 pairs, " \
        "3 in the crossing bin)" in thin and "more runs or targets" in thin
    assert thin_data_notices(rows.iloc[[1]]) == ()


def test_too_few_targets_is_not_blamed_on_identical_models() -> None:
    """Three targets in two runs make 6 pairs, all different: the fix is more targets,
    not a look for identical models."""
    rows = pd.DataFrame({
        "method": ["random"], "size": [10], "sources": [5], "split": ["seen"],
        "mdad": [0.05], "reached": [True], "pairs": [6], "crossing_pairs": [2],
        "tied_pairs": [0]})
    (notice,) = thin_data_notices(rows)
    assert "6 of 6 pairs differ" in notice and "use more targets or runs" in notice
    assert "identical" not in notice


@pytest.mark.slow
def test_mmlu_pro_five_runs_flags_the_zero(tmp_path: Path) -> None:
    """The issue's example: 5 runs of 10 targets give random 0.0 at 10 items from a bin
    of 3 pairs. The value stays (it is the paper's rule), but it is flagged, and the
    smooth estimate stands beside it."""
    out = tmp_path / "run"
    shared_data("mmlu-pro-tiger-lab/mmlu_pro_29_models.csv")
    proc = mdad_cli("run", "mmlu-pro-29", "--methods", "random", "--runs", "5",
                    "--sizes", "10", "--out", out, cwd=tmp_path)
    assert_ok(proc)
    table = pd.read_csv(out / "mdad.csv")
    assert (table.pairs == 5 * 45).all()
    assert "MDAD rests on few pairs in 2 of 2 rows" in flat(proc.stderr)
    assert "†" in proc.stdout
    seen = table[table.split == "seen"].iloc[0]
    assert seen.mdad_smooth > seen.mdad + 0.05  # the smooth fit is not fooled by 3 pairs
