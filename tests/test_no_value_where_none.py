"""Issue 35, silent wrong answer 5: no value is printed where a note says none can be
measured. `mdad run` on 40 models with `--targets 2 --sources 38` (what its own message
suggests) notes "no MDAD can be measured ... of ... rows", and its table once printed
"5.0 [5.0, 5.0] †" all the same; the report, its sentences and figures, and `plan --run`
did likewise."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from helpers import GPQA_CSV, assert_ok, benchmark_script, flat, mdad_cli, shared_data

from mdad.practice.sizing import StudyPoint, interpolate, study_mdad_curve
from mdad.report.sentences import findings
from mdad.study.folder import read_study_folder
from mdad.study.trust import VALUE_COLUMNS, as_shown

METHODS = ("random", "subtask-equal")
ROWS = len(METHODS) * 3 * 2  # methods x sizes 10, 25, 50 x splits


@pytest.fixture(scope="module")
def forty(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A 40-model folder (GPQA's first 40 models on 150 items), its study with the
    suggested --targets 2 --sources 38, and that run's stdout and stderr."""
    root = tmp_path_factory.mktemp("forty")
    frame = pd.read_csv(shared_data(GPQA_CSV))
    frame.iloc[:150, :40].to_csv(root / "g40.csv", index=False)
    proc = mdad_cli("run", "g40.csv", "--methods", ",".join(METHODS), "--runs", "2",
                    "--resamples", "20", "--targets", "2", "--sources", "38",
                    "--orientation", "items-as-rows", "--out", "run", cwd=root)
    assert_ok(proc)
    return root, proc.stdout, proc.stderr


def test_run_table_says_not_measurable_where_the_note_says_so(forty) -> None:
    root, stdout, stderr = forty
    assert f"no MDAD can be measured where fewer than 30 target pairs differ on the " \
        f"reference pool; {ROWS} of {ROWS} rows" in flat(stderr)
    rows = [line for line in stdout.splitlines() if line.strip().startswith(METHODS)]
    assert len(rows) == ROWS // 2
    for line in rows:  # once "13.0 [13.0, 13.0] †  12.0  5.0 [5.0, 5.0] †  4.2"
        assert line.count("not measurable") == 2, line
        assert not re.search(r"\d \[|>|†|‡", line), line
    assert "not measurable: too few target pairs differ for any MDAD" in flat(stdout)
    # the study's own numbers are kept as they were: only what is shown changes
    table = pd.read_csv(root / "run" / "mdad.csv")
    assert table.mdad.notna().any() and (table.pairs == 2).all()


def test_report_gives_no_value_where_none_can_be_measured(forty) -> None:
    root, _, _ = forty
    assert_ok(mdad_cli("report", "run", cwd=root))
    page = (root / "run" / "report.html").read_text(encoding="utf-8")
    rows = [re.findall(r"<td[^>]*>([^<]*)</td>", row)
            for row in re.findall(r"<tr>(<td.*?)</tr>", page)]
    assert len(rows) == ROWS // 2
    for cells in rows:  # MDAD, interval, smooth of each split: once "5.0 †", "5.0 to 5.0"
        assert cells[3:9] == ["not measurable", "—", "—"] * 2, cells
    texts = [f.text for f in findings(read_study_folder(root / "run"))]
    assert texts == ["No MDAD can be measured in this run: in every row, too few target "
                     "pairs differ for any MDAD to be measured (see the notices below); run "
                     "the study with more targets or runs."]
    assert page.count(f"{ROWS // 2} of {ROWS // 2} rows are not drawn") == 2  # both splits


def test_plan_from_such_a_study_gives_no_number(forty) -> None:
    root, _, _ = forty
    base = ("plan", "g40.csv", "--method", "subtask-equal", "--run", "run")
    proc = mdad_cli(*base, "--size", "30", cwd=root)
    assert_ok(proc)
    assert "subtask-equal, 30 items: no MDAD can be measured, from 2 model pairs." in flat(
        proc.stdout)
    assert "points" not in proc.stdout.split("(")[0]
    assert "no MDAD can be measured at the rows this answer is interpolated from" in flat(
        proc.stderr)
    answer = json.loads(mdad_cli(*base, "--size", "25", "--json", cwd=root).stdout)
    assert answer["mdad"] is None and answer["max_gap"] is None
    assert answer["reached"] is False and answer["measurable"] is False
    proc = mdad_cli(*base, "--gap", "0.05", cwd=root)
    assert_ok(proc)
    assert "no MDAD can be measured at the largest" in flat(proc.stdout)
    assert not re.search(r"\d+\.\d points\)|largest gap is", proc.stdout)
    names = pd.read_csv(root / "g40.csv", nrows=0).columns[:5]
    (root / "targets.txt").write_text("\n".join(names) + "\n")
    proc = mdad_cli(*base, "--size", "30", "--target-models", "targets.txt", cwd=root)
    assert_ok(proc)
    assert "Which of the 10 pairwise comparisons of the target models it settles cannot " \
        "be said: no MDAD can be measured." in flat(proc.stdout)
    answer = json.loads(mdad_cli(*base, "--size", "30", "--target-models", "targets.txt",
                                 "--json", cwd=root).stdout)
    assert answer["settled_share"] is None and answer["target_pairs"] == 10


def test_interpolation_never_passes_through_an_unmeasurable_size() -> None:
    curve = [StudyPoint(10, 0.10, 0.3, 500), StudyPoint(25, None, None, 500, True, False),
             StudyPoint(50, 0.05, 0.3, 500)]
    for size in (11, 25, 30, 49):
        point = interpolate(curve, gap=None, size=size)[1]
        assert point.value is None and point.max_gap is None and not point.measurable
    assert interpolate(curve, gap=None, size=50)[1].value == 0.05
    # the first size reaching 6 points is 50 itself: no line through the 25-item row
    found, point = interpolate(curve, gap=0.06, size=None)
    assert found == 50 and point.measurable
    values = study_mdad_curve(curve, 50)
    assert values[10] == 0.10 and all(values[n] is None for n in range(11, 50))


def test_a_partly_measurable_study_names_only_what_can_be_measured(tmp_path: Path) -> None:
    """random has no measurable MDAD at 10 and 25 items: the sentences say so and give
    subtask-equal's values; the table and figures show none for those rows."""
    out = tmp_path / "mix"
    assert_ok(mdad_cli("run", "synthetic:gpqa", "--models", "40", "--methods",
                       ",".join(METHODS), "--runs", "2", "--resamples", "20", "--targets",
                       "10", "--sources", "30", "--sizes", "10,25,50", "--out", out,
                       cwd=tmp_path))
    table = pd.read_csv(out / "mdad.csv")
    flat_rows = (table.method == "random") & (table["size"] < 50)
    # the study found almost all of these pairs tied: the notice's case, made here
    table.loc[flat_rows, "tied_pairs"] = table.loc[flat_rows, "pairs"] - 5
    table.to_csv(out / "mdad.csv", index=False)
    study = read_study_folder(out)
    shown = as_shown(study.mdad)
    assert (~shown.measurable).sum() == 4 and shown[~shown.measurable][
        list(VALUE_COLUMNS)].isna().all().all()
    assert study.mdad[flat_rows.to_numpy()].mdad.notna().any()  # the study's own, unchanged
    texts = [f.text for f in findings(study)]
    assert texts[0].endswith("Uniform random sampling has no measurable MDAD: too few target "
                             "pairs differ.")
    assert "(it has no measurable MDAD at 10, 25 items)" in texts[2]
    assert_ok(mdad_cli("report", out, cwd=tmp_path))
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.count(">not measurable</td>") == 4
    assert "2 of 6 rows are not drawn" in page


def test_shapes_benchmark_marks_thin_censored_and_unmeasurable_values(tmp_path) -> None:
    """benchmarks/bench_adaptive_shapes.py prints a value on few pairs with a dagger, an
    unreached one as a bound, none where none can be measured, the pairs behind them,
    and lets no unmeasurable adaptive row win (hand-made mdad.csv, one size)."""
    script = benchmark_script("bench_adaptive_shapes")
    rows = [  # method, split, mdad, reached, max_gap, pairs, crossing_pairs, tied_pairs
        ("random", "seen", 0.12, True, 0.3, 2000, 12, 10),  # 12 < 30 in its bin: thin
        ("random", "unseen", None, False, 0.2, 2000, 0, 10),  # not reached within 20 points
        ("adaptive", "seen", 0.05, True, 0.3, 2000, 400, 10),
        ("adaptive", "unseen", 0.06, True, 0.3, 2000, 400, 10),
        ("adaptive-md", "seen", 0.01, True, 0.3, 2000, 400, 1990),  # 10 pairs differ
        ("adaptive-md", "unseen", 0.01, True, 0.3, 2000, 400, 1990),
    ]
    frame = pd.DataFrame(rows, columns=["method", "split", "mdad", "reached", "max_gap",
                                        "pairs", "crossing_pairs", "tied_pairs"])
    frame.assign(size=10).to_csv(tmp_path / "mdad.csv", index=False)
    pd.DataFrame({"method": ["random", "adaptive", "adaptive-md"], "size": 10,
                  "distinct_items": [10.0, 30.0, 35.0], "top_item_share": 1.0}).to_csv(
        tmp_path / "summary.csv", index=False)
    lines = script.table("gpqa", [tmp_path])
    cells = {line.split()[0]: line.split()[2:4] for line in lines
             if line.split() and line.split()[0] in ("random", "adaptive", "adaptive-md")}
    assert cells == {"random": ["12.0†", ">20.0"], "adaptive": ["5.0", "6.0"],
                     "adaptive-md": ["none", "none"]}
    assert "each MDAD from 2,000 target pairs" in lines[1]
    assert lines[-1].startswith("best adaptive seen MDAD <= every static one: 10: yes")
    # alone, the unmeasurable adaptive row does not beat the static one
    frame[frame.method != "adaptive"].assign(size=10).to_csv(tmp_path / "mdad.csv", index=False)
    assert "10: no" in script.table("gpqa", [tmp_path])[-1]
