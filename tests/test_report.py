"""The report: every figure rendered from a small real run, the sentences' numbers
checked against mdad.csv, the agreement curves against an independent computation,
and the page opened in headless Chromium."""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import reference_impl as ref
from helpers import GPQA_CSV, assert_ok, assert_user_error, mdad_cli, shared_data
from matplotlib.image import imread

from mdad.errors import DataError
from mdad.report import write_report
from mdad.report.curves import agreement_curves
from mdad.report.sentences import findings
from mdad.report.style import display_name
from mdad.study.folder import read_study_folder

MODEL_SET = "open-llm-leaderboard-v2/model-sets/gpqa_7b_instruct.txt"
METHODS = "random,subtask-equal,anchor-points,tinybenchmarks-map"
EXPECTED_FIGURES = {
    *(f"{kind}_{split}" for kind in ("mdad_vs_size", "agreement", "error_tau",
                                     "mdad_vs_sources") for split in ("seen", "unseen")),
    "target_comparisons", "seen_vs_unseen",
}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small real GPQA run with two source counts and fixed targets, made by the CLI
    with --report, so every figure applies."""
    shared_data(GPQA_CSV)
    root = tmp_path_factory.mktemp("report")
    out = root / "run"
    proc = mdad_cli("run", "gpqa", "--methods", METHODS, "--runs", "4", "--resamples", "50",
                    "--sources", "50,300", "--target-models", shared_data(MODEL_SET),
                    "--report", "--out", out, cwd=root)
    assert_ok(proc)
    assert f"wrote {out / 'report.html'}" in " ".join(proc.stdout.split())
    return out


def test_every_figure_is_written_as_png_and_svg(run_dir: Path) -> None:
    names = {p.stem for p in (run_dir / "figures").iterdir()}
    assert names == EXPECTED_FIGURES
    for name in EXPECTED_FIGURES:
        image = imread(run_dir / "figures" / f"{name}.png")
        assert image.shape[0] > 300 and image.shape[1] > 800
        assert image[..., :3].std() > 0.05, f"{name}.png looks blank"
        svg = (run_dir / "figures" / f"{name}.svg").read_text(encoding="utf-8")
        assert svg.lstrip().startswith("<?xml") and "<svg" in svg


def test_page_is_self_contained(run_dir: Path) -> None:
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page), "page loads from network"
    images = re.findall(r'<img class="figure" alt="([^"]+)" src="data:image/png;base64,', page)
    assert set(images) == EXPECTED_FIGURES
    config = read_study_folder(run_dir).config
    assert config["dataset"]["sha256"] in page
    for method in METHODS.split(","):
        assert display_name(method) in page
    # the table names each method as readers and as the CLI do
    assert "<td data-value=\"Anchor Points (anchor-points)\">" in page


def test_legends_name_the_method_and_its_cli_name(run_dir: Path) -> None:
    svg = next(run_dir.rglob("mdad_vs_size_seen.svg")).read_text(encoding="utf-8")
    for label in ("Random (uniform) (random)", "Random (subtask, equal) (subtask-equal)",
                  "Anchor Points (anchor-points)",
                  "tinyBenchmarks, MAP fit (tinybenchmarks-map)"):
        assert label in svg


def test_style_reads_the_method_class() -> None:
    from mdad.report.style import label, style

    assert style("anchor-points") == {"color": "#0072B2", "linestyle": "-",
                                      "label": "Anchor Points (anchor-points)"}
    # a method a run folder names but nothing registers: grey, dotted, its own name
    assert style("gone-plugin") == {"color": "#555555", "linestyle": ":",
                                    "label": "gone-plugin"}
    assert label("gone-plugin") == "gone-plugin"


def test_sentences_match_mdad_csv(run_dir: Path) -> None:
    mdad = pd.read_csv(run_dir / "mdad.csv")
    seen = mdad[(mdad.split == "seen") & (mdad.sources == 300)]
    sizes = sorted(seen["size"].unique())
    texts = [f.text for f in findings(read_study_folder(run_dir))]
    smallest = seen[seen["size"] == sizes[0]].sort_values("mdad", kind="stable")
    best = smallest.iloc[0]
    assert texts[0].startswith(f"With {sizes[0]} items, {display_name(best.method)} ranks a pair")
    assert (f"at least {100 * best.mdad:.1f} accuracy points (interval "
            f"{100 * best.mdad_low:.1f} to {100 * best.mdad_high:.1f}; from "
            f"{best.pairs:,} target pairs)") in texts[0]
    uniform = smallest[smallest.method == "random"].iloc[0]
    if best.method != "random":
        assert f"needs a gap of {100 * uniform.mdad:.1f} points" in texts[0]
    largest = seen[seen["size"] == sizes[-1]]
    assert f"from {100 * largest.mdad.min():.1f} points" in texts[1]
    assert f"to {100 * largest.mdad.max():.1f} points" in texts[1]
    # catch-up: the first size from which random stays within one 0.005 bin of the best
    gaps = [seen[(seen["size"] == s) & (seen.method == "random")].mdad.item()
            - seen[seen["size"] == s].mdad.min() for s in sizes]
    within = [g <= 0.005 + 1e-12 for g in gaps]
    tail = [s for k, s in enumerate(sizes) if all(within[k:])]
    if tail:
        assert texts[2].startswith(f"From {tail[0]} items on, uniform random sampling")
    else:
        assert texts[2].startswith("At none of the sizes run")
    # fixed targets: share of their full-accuracy gaps below the smallest size's MDAD
    results = pd.read_parquet(run_dir / "results.parquet")
    accuracy = results.groupby("model", observed=True).full_accuracy.first().to_numpy()
    names = [line.strip() for line in shared_data(MODEL_SET).read_text().splitlines()
             if line.strip()]
    assert accuracy.size == len(names)
    pair_gaps = [abs(a - b) for k, a in enumerate(accuracy) for b in accuracy[k + 1:]]
    share = np.mean(np.array(pair_gaps) < best.mdad)
    assert texts[3].startswith(f"Among the {len(names)} fixed target models, {share:.0%} of")


def test_agreement_curves_match_an_independent_computation(run_dir: Path) -> None:
    run = read_study_folder(run_dir)
    curves = agreement_curves(run, 300)
    results = run.results[run.results.n_sources == 300]
    mdad = pd.read_csv(run_dir / "mdad.csv")
    for method in ("random", "anchor-points"):
        for size in (10, 100):
            group = results[(results.method == method) & (results["size"] == size)]
            by_bin: dict[float, list[int]] = {}
            for _, one in group.groupby("run"):
                # the reference's records, except that a pair of equal models (reference
                # gap exactly 0) never agrees
                seen = one.seen_accuracy.tolist()
                for record, (a, b) in zip(
                        ref.agreement_records(seen, one.unseen_accuracy.tolist(),
                                              one.estimate.tolist()),
                        itertools.combinations(seen, 2), strict=True):
                    by_bin.setdefault(record.bin_seen, []).append(record.agree_seen * (a != b))
            curve = curves[(method, size, "seen")]
            assert np.allclose(curve.gap, sorted(by_bin))
            assert np.allclose(curve.agreement, [np.mean(by_bin[b]) for b in sorted(by_bin)])
            # the figure's first crossing of the threshold is the table's MDAD
            crossing = curve.gap[np.argmax(curve.agreement >= run.threshold)]
            table = mdad[(mdad.method == method) & (mdad["size"] == size)
                         & (mdad.sources == 300) & (mdad.split == "seen")]
            assert crossing == pytest.approx(table.mdad.item())


def _chromium() -> str | None:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        message = "headless Chromium not found (Debian package: chromium)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


def _headless(chromium: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                           "--hide-scrollbars", *args], capture_output=True, text=True,
                          timeout=120, check=False)


@pytest.mark.slow  # two browser launches, 25 s; the page's HTML is checked in the quick tier
def test_page_renders_in_headless_chromium(run_dir: Path) -> None:
    chromium = _chromium()
    url = (run_dir / "report.html").resolve().as_uri()
    dom = _headless(chromium, "--virtual-time-budget=10000", "--dump-dom", url)
    status = re.search(r'data-status="([^"]*)"', dom.stdout)
    assert status is not None, f"the page's script never finished:\n{dom.stderr[-2000:]}"
    assert status.group(1) == f"ok {len(EXPECTED_FIGURES)} figures"
    shot = run_dir / "report.png"
    proc = _headless(chromium, "--window-size=1280,2400", f"--screenshot={shot}", url)
    assert shot.exists(), proc.stderr[-2000:]
    image = imread(shot)
    assert image.shape[:2] == (2400, 1280)
    assert image[..., :3].std() > 0.05


def test_report_of_a_per_subtask_run(tmp_path: Path) -> None:
    shared_data(GPQA_CSV)
    out = tmp_path / "per"
    assert_ok(mdad_cli("run", "gpqa", "--per-subtask", "--methods", "random,anchor-points",
                       "--fractions", "0.04,0.4", "--runs", "2", "--resamples", "20",
                       "--out", out, cwd=tmp_path))
    page = write_report(out)
    assert "Per-subtask study" in page.read_text(encoding="utf-8")
    curves = agreement_curves(read_study_folder(out), 300)
    assert set(curves) == {(m, s, split) for m in ("random", "anchor-points")
                           for s in (9, 90) for split in ("seen", "unseen")}
    # a subtask's block is checked as the pooled one is
    lines = (out / "summary.csv").read_text().splitlines(keepends=True)
    subtask_row = next(k for k, line in enumerate(lines) if line.startswith("gpqa_main,"))
    for damaged, message in (
            (lines[:subtask_row] + lines[subtask_row + 1:],
             r"summary\.csv: no row for \S+ at \d+ items and 300 sources \(subtask gpqa_main\)"),
            ([*lines, lines[subtask_row]],
             r"summary\.csv: 2 rows for \S+ at \d+ items and 300 sources \(subtask "
             r"gpqa_main\)")):
        (out / "summary.csv").write_text("".join(damaged))
        with pytest.raises(DataError, match=message):
            read_study_folder(out)
    (out / "summary.csv").write_text("".join(lines))
    # the report sums config.json's per-subtask sizes (a missing one was a KeyError there)
    config = json.loads((out / "config.json").read_text())
    for edit, message in (
            ({"fractions": [0.04, 2]}, r"field per_subtask\.fractions is \[0\.04, 2\], not a list "
                                       r"of fractions in \(0, 1\]"),
            ({"sizes": {"gpqa_main": [9]}}, r"field per_subtask\.sizes is not, for each subtask, a "
                                            r"list of 2 whole sizes \(one per fraction\)"),
            ({"sizes": {"other": [9, 90]}}, r"per_subtask\.sizes has no size 9 for subtask "
                                            r"gpqa_main, which row 2 of mdad\.csv has")):
        damaged_config = {**config, "per_subtask": {**config["per_subtask"], **edit}}
        (out / "config.json").write_text(json.dumps(damaged_config))
        with pytest.raises(DataError, match=r"config\.json: " + message):
            read_study_folder(out)


def test_sentences_flag_a_thin_study(tmp_path: Path) -> None:
    """3 targets, 1 run: the notices say no MDAD can be measured; the opening sentence
    once gave '3.5 accuracy points (interval 1.5 to 3.5)' as if it could, and then the
    same with a warning: now no sentence, table cell or figure gives a value."""
    shared_data(GPQA_CSV)
    out = tmp_path / "t1"
    assert_ok(mdad_cli("run", "gpqa", "--methods", "random", "--runs", "1", "--targets",
                       "3", "--sources", "10", "--sizes", "10,50", "--out", out,
                       cwd=tmp_path))
    texts = [finding.text for finding in findings(read_study_folder(out))]
    assert texts == ["No MDAD can be measured in this run: in every row, too few target "
                     "pairs differ for any MDAD to be measured (see the notices below); run "
                     "the study with more targets or runs."]
    # the table marks what `mdad run`'s does: no value in a row none can be measured for
    from mdad.study.trust import flat_mask, thin_mask

    study = read_study_folder(out)
    page = write_report(out).read_text(encoding="utf-8")
    flat_rows = int(flat_mask(study.mdad).sum())
    assert flat_rows == len(study.mdad) and not thin_mask(study.mdad).any()
    assert page.count(">not measurable</td>") == flat_rows
    assert " \u2020</td>" not in page and not re.search(r"<td[^>]*>&gt; ", page)
    assert f"{flat_rows // 2} of {flat_rows // 2} rows are not drawn" in page


def test_report_of_a_folder_that_is_not_a_run(tmp_path: Path) -> None:
    (tmp_path / "mdad.csv").write_text("x\n")
    proc = mdad_cli("report", tmp_path, cwd=tmp_path)
    assert_user_error(proc, rf"{re.escape(str(tmp_path))}: no config.json, summary.csv, "
                            r"results.parquet; pass a folder written by `mdad run`")
    proc = mdad_cli("report", tmp_path / "nowhere", cwd=tmp_path)
    assert_user_error(proc, r"nowhere: not a folder; pass the folder `mdad run` wrote")


@pytest.mark.slow
def test_python_api_writes_the_same_figures(run_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    shutil.rmtree(copy / "figures")
    page = write_report(copy)
    assert page == copy / "report.html"
    assert {p.name for p in (copy / "figures").iterdir()} == {
        p.name for p in (run_dir / "figures").iterdir()}


@pytest.mark.parametrize("split", ["seen", "unseen"])
def test_agreement_panels_do_not_overlap_and_name_their_split(run_dir: Path, split: str
                                                               ) -> None:
    """Issue 38, defect 6: each panel's x label ran into its neighbour's, and nothing
    said which split the figure shows."""
    from mdad.report.figures import agreement_by_gap

    study = read_study_folder(run_dir)
    figure = agreement_by_gap(study, split, agreement_curves(study, study.main_sources)).figure
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure).draw()
    renderer = figure.canvas.get_renderer()
    axes = [axis for axis in figure.axes if axis.get_visible() and axis.get_title()]
    assert len(axes) == len(study.sizes) > 1
    boxes = [axis.get_tightbbox(renderer) for axis in axes]
    for first, second in itertools.combinations(boxes, 2):
        overlap_x = min(first.x1, second.x1) - max(first.x0, second.x0)
        overlap_y = min(first.y1, second.y1) - max(first.y0, second.y0)
        assert overlap_x <= 0 or overlap_y <= 0, (first, second)
    assert figure.get_suptitle() == f"Agreement by gap, {split} split"
    assert all(not axis.get_xlabel() for axis in axes)  # one label for the figure
