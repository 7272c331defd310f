"""The round-trip harness (`mdad.practice.roundtrip`, benchmarks/bench_roundtrip.py) on
a small grid: held-out models, coverage by decile, listed verdicts."""

from __future__ import annotations

import numpy as np
import pytest

from mdad.practice.calibration import Calibration
from mdad.practice.roundtrip import GROUPS, deciles, round_trip


def test_deciles_by_hand():
    assert deciles(np.arange(20.0)).tolist() == [0, 0] + [1] * 16 + [2, 2]


@pytest.mark.parametrize("method", ["anchor-points-predictor", "anchor-points"])
def test_a_confidence_method_is_calibrated_on_the_scores_a_user_gives(method):
    # These methods select by the source models' confidences; a user's results give
    # scores. The interval was calibrated on estimates from the held-out models'
    # confidences, so on data that has them (synthetic:gpqa: |confidence - score| is
    # 0.18 on average) the predictor's covered 17% of held-out models at 25 items.
    from mdad.data import load_dataset

    data = load_dataset("synthetic:gpqa")
    assert np.abs(data.matrix.gold_confidence() - data.matrix.scores()).mean() > 0.1
    trip = round_trip(data, method, [25], seeds=(0,))
    row = trip.summary()[0]
    assert row["coverage"] >= 0.93 and min(row[group] for group in GROUPS) >= 0.90, row
    # each fold's belt inputs give its rows' intervals again: another belt can be
    # tried on them without selecting again
    assert [(b["seed"], b["fold"], b["size"]) for b in trip.belts] == [
        (0, k, 25) for k in range(5)]
    for belt in trip.belts:
        rows = (trip.seed == belt["seed"]) & (trip.fold == belt["fold"])
        assert rows.sum() == 84
        low, high = Calibration.fit(belt["cv_truth"], belt["cv_estimate"],
                                    widen_past=False).interval(trip.estimate[rows])
        np.testing.assert_array_equal(low, trip.low[rows])
        np.testing.assert_array_equal(high, trip.high[rows])


@pytest.mark.slow
def test_a_small_grid_on_gpqa_holds_where_users_look(gpqa_data):
    """Uniform random sampling's exact interval and Anchor Points' calibrated one, at 25
    and 50 items, 2 seeds x 5 folds: every held-out model once per seed, each decile
    covered at least 90% (the table of docs/explanation/intervals.md, from more seeds,
    gives >= 93%), and at
    most 5% of listed verdicts wrong."""
    for method in ("random", "anchor-points"):
        trip = round_trip(gpqa_data, method, [25, 50], seeds=(0, 1))
        assert trip.model.size == 2 * 2 * 420
        assert len(trip.belts) == (0 if method == "random" else 2 * 5 * 2)  # exact: none
        for size in (25, 50):
            at = trip.size == size
            assert sorted(trip.model[at & (trip.seed == 0)]) == list(range(420))
        for row in trip.summary():
            for group in GROUPS:
                assert row[group] >= 0.90, (method, row)
            assert row["listed"] > 0 and row["wrong share"] <= 0.05, (method, row)
        if method == "anchor-points":  # at most 25% over its 20.7 points before the belt
            assert next(r["width"] for r in trip.summary() if r["size"] == 50) <= 0.259
    # estimates a decile beyond the models selected from, covered without the band
    # growing past them (a static micro-benchmark's belt does not)
    for split, group in (("top", 2), ("bottom", 0)):
        beyond = round_trip(gpqa_data, "anchor-points", [50], seeds=(0,), split=split)
        assert set(beyond.group) == {group} and beyond.model.size == np.sum(deciles(
            gpqa_data.matrix.accuracy()) == group)
        assert beyond.summary()[0][GROUPS[group]] >= 0.90, split


@pytest.mark.slow
def test_one_fluke_does_not_make_the_10_item_lists_wrong(gpqa_data):
    """Held-out round trips of uniform random sampling at 10 items, 4 seeds: one model
    at 23.7% answered 8 of 10 and was listed above 48 models, 43 of them wrongly (15%
    of all verdicts listed at that size) before lists weighed the reference models'
    own accuracies (`estimate.wrong_side_chance`)."""
    row = round_trip(gpqa_data, "random", [10], seeds=(0, 1, 2, 3)).summary()[0]
    assert row["listed"] > 0 and row["wrong share"] <= 0.05, row


@pytest.mark.slow
def test_seeds_run_apart_pool_to_the_run_of_them_all(tmp_path):
    """benchmarks/pool_roundtrips.py on two runs of one seed each prints what one run
    of both seeds does (coverage per group, width, notices, listed and wrong verdicts),
    and refuses two files that share a seed."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    bench = Path(__file__).resolve().parent.parent / "benchmarks"

    def run(script: str, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(bench / script), *args], text=True,
                              capture_output=True)

    common = ["synthetic:gpqa", "--methods", "random", "--sizes", "10,25"]
    for seeds in ("0", "1", "0,1"):
        out = run("bench_roundtrip.py", *common, "--seeds", seeds,
                  "--json", str(tmp_path / f"{seeds}.json"))
        assert out.returncode == 0, out.stderr
    out = run("pool_roundtrips.py", str(tmp_path / "0.json"), str(tmp_path / "1.json"),
              "--json", str(tmp_path / "pooled.json"))
    assert out.returncode == 0, out.stderr
    assert "(pooled seeds 0, 1)" in out.stdout
    pooled, whole = (json.loads((tmp_path / f"{name}.json").read_text())
                     for name in ("pooled", "0,1"))
    assert len(pooled) == len(whole) == 2
    for mine, theirs in zip(pooled, whole, strict=True):
        assert mine["seeds"] == theirs["seeds"] == [0, 1]
        assert theirs["listed"] > 0
        for key in ("estimates", "listed", *(f"{g} estimates" for g in GROUPS)):
            assert mine[key] == theirs[key], key
        for key in ("coverage", "width", "notice", "wrong share", *GROUPS):
            assert mine[key] == pytest.approx(theirs[key], abs=1e-12), key
    twice = run("pool_roundtrips.py", str(tmp_path / "0.json"), str(tmp_path / "0,1.json"))
    assert twice.returncode != 0 and "seeds [0] of" in twice.stderr
    assert "count twice" in twice.stderr and "Traceback" not in twice.stderr


def test_pooling_refuses_files_it_cannot_pool_in_one_line(tmp_path):
    """benchmarks/pool_roundtrips.py names the file and row of a row without seeds (a
    file from before they were recorded), of a row that is not one, and of a file that
    is not JSON, and prints no traceback."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parent.parent / "benchmarks" / "pool_roundtrips.py"
    row = {"dataset": "gpqa", "split": "folds", "method": "random", "size": 10,
           "seeds": [0], "seconds": 1.0, "estimates": 4, "coverage": 1.0, "width": 0.5,
           "notice": 0.0, "listed": 0, "wrong share": None}
    for group in GROUPS:
        row[group], row[f"{group} estimates"] = 1.0, 1
    cases = {"old.json": [{k: v for k, v in row.items() if k != "seeds"}],
             "odd.json": [row, ["not", "a", "row"]], "bad.json": None}
    for name, rows in cases.items():
        path = tmp_path / name
        path.write_text("{oops" if rows is None else json.dumps(rows))
        out = subprocess.run([sys.executable, str(script), str(path)], text=True,
                             capture_output=True)
        assert out.returncode != 0 and "Traceback" not in out.stderr, out.stderr
        assert out.stderr.count("\n") == 1 and str(path) in out.stderr, out.stderr
    good = tmp_path / "good.json"
    good.write_text(json.dumps([row]))
    out = subprocess.run([sys.executable, str(script), str(good), "--json",
                          str(tmp_path / "pooled.json")], text=True, capture_output=True)
    assert out.returncode == 0, out.stderr
    assert json.loads((tmp_path / "pooled.json").read_text()) == [row]


def test_belt_mismatch_hand_computed(tmp_path) -> None:
    """benchmarks/belt_mismatch.py: a draw's shift is its held-out models' mean error
    minus that of its belt's pairs within their accuracies (here 3 - 1 = 2 points; the
    pair at 0.9 lies outside and is left out)."""
    from helpers import benchmark_script

    script = benchmark_script("belt_mismatch")
    path = tmp_path / "rows.npz"
    np.savez(path, size=np.array([10, 10, 10]), seed=np.zeros(3, int), fold=np.zeros(3, int),
             group=np.array([2, 2, 0]), truth=np.array([0.6, 0.7, 0.2]),
             estimate=np.array([0.62, 0.74, 0.2]), belt_seed=np.array([0]),
             belt_fold=np.array([0]), belt_size=np.array([10]), belt_offsets=np.array([0, 2]),
             belt_cv_truth=np.array([0.65, 0.9]), belt_cv_estimate=np.array([0.66, 1.0]))
    shifts = script.shifts(str(path))
    assert shifts.keys() == {(2, 10)}  # no pair lies within the bottom row's accuracy
    assert shifts[2, 10] == pytest.approx([2.0])
