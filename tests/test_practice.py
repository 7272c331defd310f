"""plan, select, estimate, compare: the analytic MDAD against exact sums and the simulated
study, the micro-benchmark file, a real round trip, and bad input."""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
from pathlib import Path

import numpy as np
import pytest
from helpers import MMLU_PRO_CSV, assert_ok, assert_user_error, flat, mdad_cli, shared_data
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binomtest

from mdad.data import load_dataset
from mdad.display import given_points
from mdad.errors import ConfigError
from mdad.metrics.pairs import pair_counts
from mdad.practice import (
    ItemScores,
    MicroBenchmarkFile,
    compare_models,
    estimate_score,
    lm_eval_tasks,
    plan,
    read_model_scores,
    select_microbenchmark,
)
from mdad.practice.compare import adjusted_paired_mean, mcnemar_p, paired_difference
from mdad.practice.planner import (
    PairStructure,
    agreement_probability,
    analytic_mdad,
    exact_agreement,
    pair_structure,
)
from mdad.study import StudyConfig, plan_study, run_study
from mdad.study.cells import draw_design

MODEL_SET = "open-llm-leaderboard-v2/model-sets/gpqa_70b_instruct.txt"


def brute_force_agreement(a: int, b: int, n_items: int, size: int) -> float:
    """Enumerate every size-subset of items: a of kind +1, b of kind -1, rest 0."""
    kinds = [1] * a + [-1] * b + [0] * (n_items - a - b)
    sign = np.sign(a - b)
    hits = total = 0
    for subset in itertools.combinations(range(n_items), size):
        total += 1
        hits += sign * sum(kinds[i] for i in subset) > 0
    return hits / total


@pytest.mark.parametrize(("a", "b", "n_items", "size"),
                         [(3, 2, 8, 4), (1, 4, 9, 3), (5, 0, 10, 2), (2, 2, 7, 3), (4, 3, 12, 6)])
def test_exact_agreement_is_the_hypergeometric_sum(a, b, n_items, size):
    assert exact_agreement(a, b, n_items, size) == pytest.approx(
        brute_force_agreement(a, b, n_items, size), abs=1e-12)


@given(st.integers(0, 2**16), st.integers(2, 9), st.integers(1, 30), st.integers(1, 4),
       st.booleans())
def test_pair_structure_counts_each_pair_s_disagreements_by_hand(seed, n_models, n_items,
                                                                  n_subtasks, some_pairs):
    """Against a loop over the pairs: right-only counts per subtask, and the gap."""
    rng = np.random.default_rng(seed)
    correctness = (rng.random((n_models, n_items)) < 0.5).astype(float)
    codes = rng.integers(0, n_subtasks, n_items)
    codes[0] = n_subtasks - 1  # the highest code is used; others may be empty
    first, second = np.triu_indices(n_models, k=1)
    if some_pairs:
        keep = rng.random(first.size) < 0.5
        first, second = first[keep], second[keep]
    structure = pair_structure(correctness, codes, (first, second))
    for k, (i, j) in enumerate(zip(first, second, strict=True)):
        for code in range(n_subtasks):
            columns = codes == code
            a, b = correctness[i, columns], correctness[j, columns]
            assert structure.only_first[k, code] == np.sum((a == 1) & (b == 0))
            assert structure.only_second[k, code] == np.sum((a == 0) & (b == 1))
        assert structure.gap[k] == pytest.approx(
            (correctness[i].sum() - correctness[j].sum()) / n_items)


def test_normal_approximation_error_on_real_pairs(gpqa_data):
    matrix = gpqa_data.matrix
    structure = pair_structure(matrix.correctness, matrix.subtask_codes)
    sample = np.random.default_rng(0).choice(structure.gap.size, 200, replace=False)
    # (size, largest error, mean error) allowed; measured 0.047 / 0.001 at 10 items
    for size, worst, mean in ((10, 0.06, 0.005), (50, 0.005, 0.001), (200, 0.005, 0.001)):
        approx = agreement_probability(structure, size)[sample]
        exact = np.array([exact_agreement(int(structure.only_first[k].sum()),
                                          int(structure.only_second[k].sum()),
                                          matrix.n_items, size) for k in sample])
        error = np.abs(approx - exact)
        assert error.max() < worst and error.mean() < mean, (size, error.max(), error.mean())


def test_analytic_mdad_agrees_with_the_simulated_study(gpqa_data):
    """200 runs of `mdad run gpqa --methods random`; the simulation's interval is a
    bootstrap over runs (pairs within a run share items, so resampling pairs would be
    too narrow); the analytic MDAD uses the same runs' pairs."""
    matrix, runs = gpqa_data.matrix, 200
    study = plan_study(matrix, StudyConfig(methods=("random",), n_runs=runs),
                       default_sizes=gpqa_data.spec.sizes)
    result = run_study(matrix, study)
    parts = []
    for run in range(runs):
        design = draw_design(matrix, study, run)
        first, second = np.triu_indices(design.targets.size, k=1)
        parts.append(pair_structure(matrix.correctness[:, design.seen],
                                    np.zeros(design.seen.size, dtype=np.int64),
                                    (design.targets[first], design.targets[second])))
    pooled = PairStructure(np.concatenate([p.only_first for p in parts]),
                           np.concatenate([p.only_second for p in parts]),
                           parts[0].subtask_sizes, np.concatenate([p.gap for p in parts]))

    def crossing(pairs: np.ndarray, agreeing: np.ndarray) -> float:
        reached = np.flatnonzero((pairs > 0) & (agreeing >= 0.8 * pairs))
        return reached[0] / 200 if reached.size else 0.5

    rng = np.random.default_rng(0)
    for s, size in enumerate(study.sizes):
        counts = pair_counts(result.estimates[0, s, 0], result.seen)
        boots = [crossing(counts.pairs[idx].sum(0), counts.agreeing[idx].sum(0))
                 for idx in rng.integers(0, runs, (1000, runs))]
        low, high = np.quantile(boots, [0.025, 0.975])
        analytic = analytic_mdad(pooled, size).value
        assert analytic is not None
        assert low - 1e-9 <= analytic <= high + 1e-9, (size, analytic, low, high)


def test_plan_gap_gives_the_smallest_size_that_reaches_it(gpqa_data):
    answer = plan(gpqa_data, gap=0.03)
    assert answer.how == "analytic" and answer.mdad <= 0.03
    assert plan(gpqa_data, size=answer.size).mdad <= 0.03
    assert plan(gpqa_data, size=answer.size - 1).mdad > 0.03
    assert plan(gpqa_data, gap=0.0001).size is None  # not even the whole benchmark


def test_plan_share_of_target_comparisons(gpqa_data):
    names = [s.strip() for s in shared_data(MODEL_SET).read_text().splitlines() if s.strip()]
    answer = plan(gpqa_data, size=100, target_models=names)
    accuracy = gpqa_data.matrix.accuracy()[gpqa_data.matrix.model_index(names)]
    gaps = [abs(x - y) for x, y in itertools.combinations(accuracy, 2)]
    assert answer.settled_share == pytest.approx(np.mean(np.array(gaps) >= answer.mdad))
    assert answer.target_pairs == len(gaps) == len(names) * (len(names) - 1) // 2
    with pytest.raises(ConfigError, match="at least 2 models"):  # no comparison to settle
        plan(gpqa_data, size=100, target_models=names[:1])


def test_select_from_a_pool_of_items(gpqa_data, tmp_path: Path):
    pool = tmp_path / "pool.txt"
    pool.write_text("\n".join(str(i) for i in range(0, 448, 4)) + "\n")
    bundle = select_microbenchmark(gpqa_data, "anchor-points", 10, pool=[
        s for s in pool.read_text().split()])
    assert bundle.pool_size == 112 and set(bundle.items) <= set(pool.read_text().split())
    assert bundle.estimator["kind"] == "linear" and len(bundle.estimator["weights"]) == 10
    assert bundle.error_sd is not None and bundle.mdad_how == "random-analytic"
    assert bundle.dataset_items == 448
    assert bundle.scope() == "a pool of 112 of gpqa's 448 items"
    bundle.save(tmp_path / "mb.json")
    assert MicroBenchmarkFile.load(tmp_path / "mb.json").dataset_items == 448


def test_a_pool_s_estimate_says_it_stands_for_the_pool(tmp_path: Path):
    pool = tmp_path / "pool.txt"
    pool.write_text("0\n1\n2\n")
    out = tmp_path / "mb.json"
    proc = mdad_cli("select", "gpqa", "--method", "random", "--size", "3", "--pool", pool,
                    "--out", out, cwd=tmp_path)
    assert_ok(proc)
    assert "against the pool's 3 items" in flat(proc.stdout)
    assert "stand for the pool's 3 items, not gpqa's 448" in flat(proc.stderr)
    answers = tmp_path / "m.csv"
    answers.write_text("item_id,correct\n0,1\n1,0\n2,1\n")
    proc = mdad_cli("estimate", out, answers, cwd=tmp_path)
    assert_ok(proc)
    assert "on a pool of 3 of gpqa's 448 items, from 3 items" in flat(proc.stdout)
    whole = select_microbenchmark(load_dataset("gpqa"), "random", 3)
    assert whole.dataset_items is None and whole.scope() == "gpqa"
    # a study's MDAD is for micro-benchmarks drawn from every item, never a pool's
    proc = mdad_cli("select", "gpqa", "--method", "random", "--size", "3", "--pool", pool,
                    "--run", tmp_path, "--out", tmp_path / "other.json", cwd=tmp_path)
    assert_user_error(proc, "--run's MDAD is for micro-benchmarks drawn from all 448 items "
                       "of gpqa, not from a pool of 3; leave out --run")
    assert not (tmp_path / "other.json").exists()


def test_select_writes_a_usable_file_and_lm_eval_samples(gpqa_data, tmp_path: Path):
    out = tmp_path / "mb.json"
    proc = mdad_cli("select", "gpqa", "--method", "random", "--size", "100", "--seed", "4",
                    "--out", out, "--format", "lm-eval", cwd=tmp_path)
    assert_ok(proc)
    bundle = MicroBenchmarkFile.load(out)
    assert bundle.size == len(bundle.items) == len(set(bundle.items)) == 100
    assert bundle.sha256 == gpqa_data.matrix.sha256 and bundle.pool_size == 448
    assert bundle.mdad == plan(gpqa_data, size=100).mdad and bundle.mdad_how == "analytic"
    # lm-evaluation-harness's --samples: a JSON object {"task_name": [indices], ...}
    samples = json.loads(out.with_suffix(".samples.json").read_text())
    assert list(samples) == ["leaderboard_gpqa_main"]
    docs = samples["leaderboard_gpqa_main"]
    assert all(isinstance(d, int) for d in docs) and docs == sorted(set(docs))
    assert docs == sorted(int(item) for item in bundle.items)


def _true_scores(matrix, model: int, bundle: MicroBenchmarkFile) -> ItemScores:
    column = {str(item): k for k, item in enumerate(matrix.item_ids)}
    scores = np.array([matrix.correctness[model, column[item]] for item in bundle.items],
                      dtype=np.float64)
    return ItemScores(str(matrix.model_names[model]), scores, [], 0)


@pytest.mark.slow
@pytest.mark.parametrize(("method", "n_models", "band"),
                         [("random", 150, (0.90, 0.99)), ("anchor-points", 40, (0.80, 1.0))])
def test_round_trip_interval_coverage(gpqa_data, method, n_models, band):
    """Each held-out model: select 100 items without it, estimate from its real answers,
    compare with its true accuracy on all 448 items. With coverage 95%, the share of
    intervals that cover the truth is binomial: sd 1.8% for 150 models, 3.4% for 40,
    so the bands are about 2.5 sd wide on the low side."""
    matrix = gpqa_data.matrix
    models = np.linspace(0, matrix.n_models - 1, n_models).astype(int)
    covered = []
    for model in models:
        keep = np.setdiff1d(np.arange(matrix.n_models), [model])
        held_out = type(gpqa_data)(gpqa_data.name, matrix.take(models=keep), gpqa_data.path,
                                   gpqa_data.missing, gpqa_data.spec)
        bundle = select_microbenchmark(held_out, method, 100, seed=int(model))
        answer = estimate_score(bundle, _true_scores(matrix, model, bundle))
        truth = float(matrix.accuracy()[model])
        covered.append(answer.low <= truth <= answer.high)
    coverage = float(np.mean(covered))
    assert band[0] <= coverage <= band[1], f"{method}: coverage {coverage:.3f}"


@pytest.mark.slow
def test_estimate_and_compare_from_csv(gpqa_data, tmp_path: Path):
    matrix = gpqa_data.matrix
    out = tmp_path / "mb.json"
    assert_ok(mdad_cli("select", "gpqa", "--method", "random", "--size", "100", "--out", out,
                       cwd=tmp_path))
    bundle = MicroBenchmarkFile.load(out)
    paths = []
    for model in (0, 1):
        scores = _true_scores(matrix, model, bundle).scores
        path = tmp_path / f"{matrix.model_names[model]}.csv"
        lines = ["item_id,correct", *(f"{i},{int(s)}" for i, s in zip(bundle.items, scores,
                                                                         strict=True))]
        path.write_text("\n".join(lines[:-1]) + "\nnot-an-item,1\n")  # one missing, one extra
        paths.append(path)
    # one item missing: refused, then judged from the 99 answered items when allowed
    assert_user_error(mdad_cli("estimate", out, paths[0], cwd=tmp_path),
                      r"1 of the micro-benchmark's 100 items are missing; .*--allow-partial")
    proc = mdad_cli("estimate", out, paths[0], "--json", "--allow-partial", cwd=tmp_path)
    assert_ok(proc)
    answer = json.loads(proc.stdout)
    first = _true_scores(matrix, 0, bundle).scores[:-1]
    assert answer["accuracy"] == pytest.approx(first.mean())
    assert answer["missing"] == [bundle.items[-1]] and answer["extra"] == 1
    assert answer["partial"] and answer["items_used"] == 99
    assert answer["mdad"] == bundle.mdad_curve[98]  # the MDAD of 99 items
    assert answer["mdad_pairs"] == 420 * 419 // 2 and answer["mdad_how"] == "analytic"
    proc = mdad_cli("estimate", out, paths[0], "--allow-partial", cwd=tmp_path)
    assert "lacks 1 of the 100 items" in proc.stderr and "1 items that are not in" in proc.stderr
    assert "PARTIAL: 99 of the 100 items" in flat(proc.stdout)
    assert "at 99 items (analytic, 87,990 model pairs)" in flat(proc.stdout)
    assert "lists (false discovery rate at most 5% for each list)" in flat(proc.stdout)
    assert_user_error(mdad_cli("compare", out, paths[0], paths[1], cwd=tmp_path),
                      r"1 of the micro-benchmark's 100 items are missing")
    proc = mdad_cli("compare", out, paths[0], paths[1], "--json", "--allow-partial",
                    cwd=tmp_path)
    assert_ok(proc)
    answer = json.loads(proc.stdout)
    second = _true_scores(matrix, 1, bundle).scores[:-1]
    only_first = int(np.sum((first == 1) & (second == 0)))
    only_second = int(np.sum((second == 1) & (first == 0)))
    assert (answer["only_first"], answer["only_second"]) == (only_first, only_second)
    assert answer["difference"] == pytest.approx(first.mean() - second.mean())
    if only_first + only_second:
        assert answer["p_value"] == pytest.approx(
            binomtest(only_first, only_first + only_second, 0.5).pvalue)
    # Bonett and Price's interval of a plain mean, finite-population corrected: the
    # variance by (448 - 99) / 447, and the centre's pull from the difference too
    adjusted, half = bonett_price(only_first, only_second, 99, pool=448)
    difference = answer["difference"]
    centre = difference + (adjusted - difference) * (448 - 99) / 447
    assert (answer["low"], answer["high"]) == pytest.approx((centre - half, centre + half))
    mdad = bundle.mdad_curve[98]
    reliable = (abs(answer["difference"]) >= mdad and abs(centre) > half
                and answer["p_value"] < 0.05)
    assert answer["verdict"] == ("reliable" if reliable else "too close to call")
    assert answer["partial"] and answer["confidence"] == 0.95
    assert answer["mdad_pairs"] == 420 * 419 // 2
    proc = mdad_cli("compare", out, paths[0], paths[1], "--allow-partial", cwd=tmp_path)
    assert "analytic, 87,990 model pairs; rule at 95% confidence" in flat(proc.stdout)


def test_estimate_reads_lm_eval_samples(gpqa_data, tmp_path: Path):
    samples = shared_data("lm-eval-samples/EleutherAI__pythia-14m")
    from mdad.data.lm_eval import load_lm_eval_samples

    pythia = load_lm_eval_samples(samples)
    items = [str(i) for i in pythia.item_ids[:20]]
    bundle = MicroBenchmarkFile(
        dataset="pythia", sha256="", mdad_version="test", method="random", size=20, seed=0,
        items=items, lm_eval_items=items, lm_eval_tasks=lm_eval_tasks(items),
        lm_eval_metric="acc",
        estimator={"kind": "linear", "weights": None, "confidence": False}, pool_size=100,
        reference_models=["x"], reference_accuracy=[0.5], reference_answers=["0" * 20],
        mdad=0.1, mdad_reached=True, max_gap=0.3, mdad_pairs=1, mdad_how="analytic",
        mdad_curve_sizes=[20], mdad_curve=[0.1], threshold=0.8, error_sd=None)
    scores = read_model_scores(samples, bundle)
    assert scores.model == str(pythia.model_names[0]) and not scores.missing
    assert np.allclose(scores.scores, pythia.correctness[0, :20])


def test_plan_for_a_gap_no_pair_reaches_says_so(gpqa_data, tmp_path: Path):
    """No two GPQA models are 50 points apart: plan does not claim 50-point pairs are
    ranked, it says the size is the smallest whose MDAD is reached at all."""
    answer = plan(gpqa_data, gap=0.5)
    assert answer.max_gap < 0.5 and answer.size == plan(gpqa_data, gap=answer.max_gap).size
    proc = mdad_cli("plan", "gpqa", "--gap", "0.5", cwd=tmp_path)
    assert_ok(proc)
    text = flat(proc.stdout)
    assert f"no two models are 50.0 points apart (the largest gap is " \
        f"{100 * answer.max_gap:.1f}); {answer.size} items is the smallest size" in text
    assert "rank pairs 50.0" not in text


def test_plan_writes_a_small_gap_as_given(gpqa_data, tmp_path: Path):
    """--gap 0.0001 is 0.01 points: it printed as 'a gap of 0.0 points'."""
    proc = mdad_cli("plan", "gpqa", "--gap", "0.0001", cwd=tmp_path)
    assert_ok(proc)
    assert "reaches a gap of 0.01 points" in flat(proc.stdout)
    assert [given_points(v) for v in (0.05, 0.0001, 0.12345, 0.25, 1e-7)] == [
        "5.0", "0.01", "12.345", "25.0", "0.00001"]


@pytest.mark.slow
def test_bad_input_is_one_line_and_exit_2(gpqa_data, tmp_path: Path):
    out = tmp_path / "mb.json"
    assert_ok(mdad_cli("select", "gpqa", "--method", "random", "--size", "20", "--out", out,
                       cwd=tmp_path))
    for gap in ("0", "1", "-0.1"):
        assert_user_error(mdad_cli("plan", "gpqa", "--gap", gap, cwd=tmp_path),
                          r"--gap must be in \(0, 1\)")
    assert_user_error(mdad_cli("plan", "gpqa", cwd=tmp_path), "exactly one of --gap and --size")
    assert_user_error(mdad_cli("select", "gpqa", "--method", "random", "--size", "449",
                               "--out", tmp_path / "x.json", cwd=tmp_path),
                      r"--size 449 is outside 1..448")
    assert_user_error(mdad_cli("plan", "gpqa", "--method", "anchor-points", "--size", "10",
                               cwd=tmp_path), r"no analytic MDAD; pass --run RUN_DIR")
    wrong = tmp_path / "wrong.csv"
    wrong.write_text("item_id,correct\nmmlu/1,1\nmmlu/2,0\n")
    assert_user_error(mdad_cli("estimate", out, wrong, cwd=tmp_path),
                      r"none of the micro-benchmark's 20 items are in these results")
    duplicated = tmp_path / "dup.csv"
    item = MicroBenchmarkFile.load(out).items[0]
    duplicated.write_text(f"item_id,correct\n{item},1\n{item},0\n")
    assert_user_error(mdad_cli("estimate", out, duplicated, cwd=tmp_path),
                      rf"dup.csv, line 3: item '{item}' appears twice; keep one row per item$")
    assert_user_error(mdad_cli("estimate", wrong, wrong, cwd=tmp_path),
                      r"cannot read the micro-benchmark file \(.*\); pass a micro-benchmark "
                      r"file written by `mdad select`$")
    for absent, reason in ((tmp_path / "nope.json", "no such file or directory"),
                           (tmp_path, "a folder, not a file")):
        assert_user_error(mdad_cli("estimate", absent, wrong, cwd=tmp_path),
                          rf"{re.escape(str(absent))}: {reason}; pass a micro-benchmark file "
                          r"written by `mdad select`$")
    with_bom = tmp_path / "bom.json"  # as some editors save it
    with_bom.write_bytes(b"\xef\xbb\xbf" + out.read_bytes())
    assert MicroBenchmarkFile.load(with_bom).items == MicroBenchmarkFile.load(out).items
    # a file from another version of the data: refused, or a warning when allowed
    bundle = json.loads(out.read_text())
    bundle["sha256"] = "f" * 64
    other = tmp_path / "other.json"
    other.write_text(json.dumps(bundle))
    csv_path = tmp_path / "one.csv"
    csv_path.write_text(f"item_id,correct\n{item},1\n")
    assert_user_error(mdad_cli("estimate", other, csv_path, "--dataset", "gpqa", cwd=tmp_path),
                      r"made from gpqa with sha256 ffffffffffff\.\.\., this data has .*"
                      r"--allow-other-data-version")
    proc = mdad_cli("estimate", other, csv_path, "--dataset", "gpqa", "--allow-partial",
                    "--allow-other-data-version", cwd=tmp_path)
    assert_ok(proc)
    assert "warning:" in proc.stderr
    assert_user_error(mdad_cli("select", "gpqa", "--method", "random", "--size", "5",
                               "--pool", wrong, "--out", tmp_path / "p.json", cwd=tmp_path),
                      r"--pool: 3 item ids are not in the dataset, e.g. 'item_id,correct'")


@pytest.mark.slow
def test_a_study_of_other_data_is_refused_unless_allowed(gpqa_data, tmp_path: Path):
    run_dir = tmp_path / "run"
    assert_ok(mdad_cli("run", "gpqa", "--methods", "anchor-points", "--runs", "2",
                       "--resamples", "10", "--out", run_dir, cwd=tmp_path))
    config = json.loads((run_dir / "config.json").read_text())
    answer = plan(gpqa_data, size=30, method="anchor-points", study_dir=run_dir)
    assert answer.how == "interpolated"
    mdad = {r["size"]: r["mdad"] for r in _seen_rows(run_dir, "anchor-points")}
    expected = np.interp(np.log(30), np.log([25, 50]), [mdad[25], mdad[50]])
    assert answer.mdad == pytest.approx(expected)
    config["dataset"]["sha256"] = "0" * 64
    (run_dir / "config.json").write_text(json.dumps(config))
    proc = mdad_cli("plan", "gpqa", "--method", "anchor-points", "--size", "30",
                    "--run", run_dir, cwd=tmp_path)
    assert_user_error(proc, r"was made on other data .*--allow-other-data-version")
    assert_ok(mdad_cli("plan", "gpqa", "--method", "anchor-points", "--size", "30", "--run",
                       run_dir, "--allow-other-data-version", cwd=tmp_path))


def _seen_rows(run_dir: Path, method: str) -> list[dict]:
    import pandas as pd

    table = pd.read_csv(run_dir / "mdad.csv")
    return table[(table.method == method) & (table.split == "seen")].to_dict("records")


def test_plan_refuses_sizes_the_method_cannot_build():
    shared_data("mmlu-pro-tiger-lab/mmlu_pro_29_models.csv")
    mmlu = load_dataset("mmlu-pro-29")
    with pytest.raises(Exception, match=r"size 9000 is outside 1..\d+, the sizes "
                                        r"subtask-equal can build"):
        plan(mmlu, size=9000, method="subtask-equal")
    answer = plan(mmlu, gap=0.001, method="subtask-equal")
    assert answer.size is None  # no buildable size reaches it


def test_a_gap_above_the_mdad_with_an_interval_across_zero_is_too_close(gpqa_data):
    """20 items, 3 that only A got right: 15 points apart, above the 14.5-point MDAD,
    and the interval (Bonett and Price's, by hand) still holds 0."""
    bundle = select_microbenchmark(gpqa_data, "random", 20, seed=0)
    assert bundle.mdad == pytest.approx(0.145)
    ones = np.ones(20)
    second_scores = ones.copy()
    second_scores[:3] = 0
    answer = compare_models(bundle, ItemScores("a", ones, [], 0),
                            ItemScores("b", second_scores, [], 0))
    assert answer.difference == pytest.approx(0.15)
    adjusted, half = bonett_price(3, 0, 20, pool=448)
    centre = 0.15 + (adjusted - 0.15) * (448 - 20) / 447
    assert (answer.low, answer.high) == pytest.approx((centre - half, centre + half))
    assert answer.low < 0 < answer.high
    assert answer.verdict == "too close to call" and answer.winner is None
    assert answer.reason == "the paired 95% interval includes 0"


def test_select_saves_through_the_method_class_and_reports_progress(gpqa_data,
                                                                      tmp_path: Path):
    steps = []
    bundle = select_microbenchmark(gpqa_data, "tinybenchmarks-pirt", 10, seed=2,
                                   progress=lambda done, total, what: steps.append(
                                       (done, total, what)))
    # p-IRT writes fold 1's micro-benchmark: five fits, no selection from every model
    assert [s[:2] for s in steps] == [(k, 5) for k in range(6)]
    assert steps[0][2].startswith("selecting 10 items") and "writing fold 1's" in steps[0][2]
    assert sorted(s[2] for s in steps[1:]) == [f"cross-validation fold {k} of 5 done"
                                               for k in range(1, 6)]
    assert bundle.notes == ["selected on the 336 of the 420 reference models outside "
                            "cross-validation fold 1 of 5, as each fold's micro-benchmark "
                            "was: the 95% interval is calibrated on micro-benchmarks "
                            "selected as this one was"]
    assert bundle.estimator["kind"] == "irt" and list(bundle.estimator) == [
        "kind", "weights", "gp_weight", "discrimination", "difficulty",
        "others_discrimination", "others_difficulty"]
    path = tmp_path / "mb.json"
    bundle.save(path)
    loaded = MicroBenchmarkFile.load(path)
    matrix = gpqa_data.matrix
    column = {str(item): k for k, item in enumerate(matrix.item_ids)}
    answers = matrix.correctness[:4, [column[i] for i in loaded.items]].astype(float)
    from threadpoolctl import threadpool_limits

    from mdad import streams
    from mdad.practice.bundle import _seen_pool
    from mdad.practice.calibration import cross_validation_folds
    from mdad.selection import get_method

    train = np.setdiff1d(np.arange(420), cross_validation_folds(2, 420)[0])
    assert train.size == 336
    with threadpool_limits(limits=1):  # as fold 1 fits, from seed 2's named streams
        micro = get_method("tinybenchmarks-pirt").select(
            _seen_pool(matrix, streams.stream(2, "cross-validation", "pool", 0), train),
            10, rng=streams.rng(2, "cross-validation", "select", 0))
    assert [str(matrix.item_ids[i]) for i in micro.items] == loaded.items
    np.testing.assert_allclose(loaded.to_microbenchmark().estimate(answers),
                               micro.estimate(matrix.correctness[:4].astype(float)),
                               rtol=0, atol=1e-12)
    # the file is fold 1's micro-benchmark: it reads fold 1's models as the belt's pairs do
    fold = cross_validation_folds(2, 420)[0]
    held = matrix.correctness[np.ix_(fold, [column[i] for i in loaded.items])].astype(float)
    np.testing.assert_allclose(loaded.to_microbenchmark().estimate(held),
                               np.asarray(loaded.cv_estimate)[fold], rtol=0, atol=1e-12)
    # a method that writes the selection from every model: it, then the five folds
    steps.clear()
    assert select_microbenchmark(gpqa_data, "anchor-points", 10, seed=2,
                                 progress=lambda *s: steps.append(s)).notes == []
    assert [s[:2] for s in steps] == [(k, 6) for k in range(7)]
    assert "selected" in [s[2] for s in steps]
    # uniform random sampling: no cross-validation, one step
    steps.clear()
    select_microbenchmark(gpqa_data, "random", 10, progress=lambda *s: steps.append(s))
    assert [s[:2] for s in steps] == [(0, 1), (1, 1)]


def test_a_file_with_an_unknown_estimator_kind_names_it(gpqa_data, tmp_path: Path):
    from mdad.errors import DataError

    bundle = select_microbenchmark(gpqa_data, "random", 5)
    data = json.loads(bundle.to_json())
    data["estimator"] = {"kind": "quantum", "weights": None}
    path = tmp_path / "mb.json"
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match=r"mb.json: unknown estimator kind 'quantum' for "
                                        r"method random \(it saves linear\)"):
        MicroBenchmarkFile.load(path)
    data["estimator"] = {"kind": "linear", "weights": None, "confidence": False}
    data["method"] = "uninstalled-plugin"
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match=r"made by method 'uninstalled-plugin', which no "
                                        r"installed package registers"):
        MicroBenchmarkFile.load(path)


@pytest.mark.parametrize(("method", "edit", "message"), [
    ("anchor-points", lambda e: e["weights"].__setitem__(0, 1e308),
     r"weights are null or `size` numbers in \[0, 1\], not all 0"),
    ("anchor-points", lambda e: e.__setitem__("weights", [0.0] * 5), r"not all 0"),
    ("anchor-points", lambda e: e["weights"].pop(), r"`size` numbers in \[0, 1\]"),
    ("tinybenchmarks-pirt", lambda e: e["difficulty"].__setitem__(0, float("nan")),
     r"an IRT estimator with parameters for every item"),
])
def test_an_edited_estimator_is_refused(gpqa_data, method, edit, message, tmp_path: Path):
    """A file whose weights would make the estimate 1e308 points, or whose item
    parameters are NaN (Python's json reads NaN), is refused, not used; every weight
    `select` writes is in [0, 1] (test_every_method_s_weights_are_fractions)."""
    from mdad.errors import DataError

    data = json.loads(select_microbenchmark(gpqa_data, method, 5).to_json())
    edit(data["estimator"])
    path = tmp_path / "mb.json"
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match=rf"mb.json: .*{message}"):
        MicroBenchmarkFile.load(path)


def test_select_progress_line_shows_only_past_its_delay(capsys):
    from mdad.cli.select_cmd import delayed_progress

    quiet = delayed_progress(after=1e9)
    quiet(0, 6, "selecting 50 items")
    quiet(1, 6, "selected")
    assert capsys.readouterr().err == ""
    late = delayed_progress(after=0.0)
    late(0, 6, "selecting 50 items")
    late(3, 6, "cross-validation fold 2 of 5 done")
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "mdad select: selecting 50 items"
    assert re.fullmatch(r"mdad select: 3 of 6 fits: cross-validation fold 2 of 5 done "
                        r"\(\d+\.\d s\)", lines[1])


def test_a_results_csv_as_spreadsheets_write_it_is_read(tmp_path: Path):
    from mdad.practice.results import read_item_scores

    path = tmp_path / "model.csv"
    path.write_bytes("\ufeffitem_id,correct\r\na,1\r\nb,0.5\r\n\r\n,\r\n".encode())
    scores = read_item_scores(path, ["a", "b", "c"], None, metric="acc", dataset="d")
    assert scores.scores[:2].tolist() == [1.0, 0.5] and scores.missing == ["c"]


@pytest.mark.parametrize("text, message", [
    (b"item_id,correct,note\na,1,x\n", r"the first line must be the header item_id,correct "
                                       r"\(it has 'item_id', 'correct', 'note'; remove"),
    (b"id,score\na,1\n", r"the first line must be the header item_id,correct$"),
    (b"item_id,correct\na,1,extra\n", r"line 2: expected item_id,correct, got 3 cell"),
    (b"item_id,correct\n,1\n", r"line 2, column item_id: the id is empty; fill it in"),
    (b"item_id,correct\na,nan\n", r"line 2, column correct: nan is not in \[0, 1\]"),
    (b"item_id,correct\na,\xff\n", r"byte 18 is not UTF-8; save the file as UTF-8"),
])
def test_a_bad_results_csv_is_refused_naming_the_line(tmp_path: Path, text: bytes,
                                                      message: str):
    from mdad.errors import DataError
    from mdad.practice.results import read_item_scores

    path = tmp_path / "model.csv"
    path.write_bytes(text)
    with pytest.raises(DataError, match=message):
        read_item_scores(path, ["a"], None, metric="acc", dataset="d")


@pytest.mark.parametrize("value", [448.5, 100, "448", -1])
def test_an_edited_dataset_item_count_is_refused(gpqa_data, value, tmp_path: Path):
    from mdad.errors import DataError

    data = json.loads(select_microbenchmark(gpqa_data, "random", 5, pool=[
        str(i) for i in range(100)]).to_json())
    assert data["dataset_items"] == 448
    data["dataset_items"] = value
    path = tmp_path / "mb.json"
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match=r"field 'dataset_items' must be null or a whole "
                                        r"number above `pool_size`"):
        MicroBenchmarkFile.load(path)


@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=0, max_size=40))
def test_mcnemar_p_is_the_exact_binomial_test_of_the_discordant_items(pairs):
    first = np.array([a for a, _ in pairs], dtype=float)
    second = np.array([b for _, b in pairs], dtype=float)
    only_first = int(np.sum((first == 1) & (second == 0)))
    discordant = only_first + int(np.sum((second == 1) & (first == 0)))
    expected = binomtest(only_first, discordant, 0.5).pvalue if discordant else 1.0
    assert float(mcnemar_p(first, second)) == pytest.approx(expected, rel=1e-12)
    both = np.vstack([second, 1 - first])  # rows broadcast against one model
    assert mcnemar_p(first, both)[0] == pytest.approx(expected, rel=1e-12)


def bonett_price(only_first: int, only_second: int, n: int, pool: int | None = None
                 ) -> tuple[float, float]:
    """Centre and half-width of Bonett and Price's (2012) adjusted Wald 95% interval of
    a paired difference of proportions, in their notation; with `pool`, the variance
    is finite-population corrected as mdad's is."""
    p_first, p_second = (only_first + 1) / (n + 2), (only_second + 1) / (n + 2)
    centre = p_first - p_second
    variance = (p_first + p_second - centre**2) / (n + 2)
    fpc = 1.0 if pool is None else (pool - n) / (pool - 1)
    return centre, 1.959963984540054 * np.sqrt(variance * fpc)


def test_adjusted_paired_mean_by_hand():
    """One item that only the first model got right: the items +1, +1 and -1 give a
    centre of 1/3 and a variance of (4/9 * 2 + 16/9) / 3^2 = 8/27, not the plain mean's
    0 that made a one-item interval zero-width."""
    centre, variance = adjusted_paired_mean(np.array([1.0]), np.array([1.0]))
    assert centre == pytest.approx(1 / 3) and variance == pytest.approx(8 / 27)
    # weights: two items of weights 3 and 1 with differences 1 and 0 get pseudo-items
    # of weight 2: centre (3 + 2 - 2) / 8, variance sum(w^2 (z - c)^2) / 8^2
    centre, variance = adjusted_paired_mean(np.array([1.0, 0.0]), np.array([3.0, 1.0]))
    c = 3 / 8
    expected = (9 * (1 - c) ** 2 + c**2 + 4 * (1 - c) ** 2 + 4 * (1 + c) ** 2) / 64
    assert centre == pytest.approx(c) and variance == pytest.approx(expected)


@given(st.lists(st.sampled_from([(1, 0), (0, 1), (1, 1), (0, 0)]), min_size=0, max_size=60),
       st.floats(0.1, 10))
def test_adjusted_paired_mean_is_bonett_and_price_with_equal_weights(pairs, weight):
    first = np.array([a for a, _ in pairs], dtype=float)
    second = np.array([b for _, b in pairs], dtype=float)
    n = len(pairs)
    centre, variance = adjusted_paired_mean(first - second, np.full(n, weight))
    only_first = int(np.sum(first > second))
    expected_centre, expected_half = bonett_price(only_first, int(np.sum(second > first)), n)
    assert centre == pytest.approx(expected_centre, abs=1e-12)
    assert 1.959963984540054 * np.sqrt(variance) == pytest.approx(expected_half, rel=1e-9)
    assert variance > 0


def _coverage(bundle: MicroBenchmarkFile, scores: np.ndarray, draw_items, n: int,
              draws: int = 2000) -> float:
    """The share of `draws` random pairs of models, each on the `n` items
    `draw_items(rng)` gives, whose `paired_difference` interval holds their difference
    over every item of `scores` (models x items)."""
    rng = np.random.default_rng(1)
    observed = np.arange(bundle.size) < n
    covered = 0
    for _ in range(draws):
        i, j = rng.choice(scores.shape[0], 2, replace=False)
        first, second = np.zeros((2, bundle.size))
        items = draw_items(rng)
        first[:n], second[:n] = scores[i, items], scores[j, items]
        paired = paired_difference(bundle, first, second, observed)
        covered += paired.low <= scores[i].mean() - scores[j].mean() <= paired.high
    return covered / draws


def test_paired_interval_covers_gpqa_differences_where_the_plain_one_did_not(gpqa_data):
    """Random pairs of GPQA models on random items: the interval holds their
    difference over all 448 items about 95% of the time or more (the plain Wald
    interval: 1% at 1 item, 89% at 10)."""
    bundle = select_microbenchmark(gpqa_data, "random", 50, seed=0)
    scores = gpqa_data.matrix.correctness.astype(float)
    for n, least in ((1, 0.99), (10, 0.96), (50, 0.945)):
        coverage = _coverage(bundle, scores,
                             lambda rng, n=n: rng.choice(scores.shape[1], n, replace=False), n)
        assert coverage >= least, n


def test_weighted_paired_interval_covers_mmlu_pro_differences(gpqa_data):
    """A stratified design: k random items of each of MMLU-Pro's 14 subjects, weighted
    by the subject's size over k (as subtask-equal weighs them): the weighted interval
    holds the difference over all 10,326 items about 95% of the time."""
    shared_data(MMLU_PRO_CSV)
    mmlu_pro = load_dataset("mmlu-pro-29").matrix
    codes = np.unique(mmlu_pro.subtask_codes, return_inverse=True)[1]
    sizes = np.bincount(codes)
    members = [np.flatnonzero(codes == s) for s in range(sizes.size)]
    scores = mmlu_pro.correctness.astype(float)
    for k in (1, 2):
        n = k * sizes.size
        bundle = dataclasses.replace(
            select_microbenchmark(gpqa_data, "random", n, seed=0), pool_size=scores.shape[1],
            estimator={"kind": "linear", "weights": np.repeat(sizes / k, k).tolist()})
        coverage = _coverage(bundle, scores, lambda rng, k=k: np.concatenate(
            [rng.choice(items, k, replace=False) for items in members]), n)
        assert coverage >= 0.945, k


def test_paired_interval_stays_within_a_hundred_points(gpqa_data):
    """10 of 10 right against 0 of 10: the adjusted interval's upper end (114.6 points
    before clipping) is 100."""
    bundle = select_microbenchmark(gpqa_data, "random", 10, seed=0)
    paired = paired_difference(bundle, np.ones(10), np.zeros(10), np.ones(10, dtype=bool))
    assert paired.difference == 1.0 and paired.high == 1.0 and 0.5 < paired.low < 1.0
    reverse = paired_difference(bundle, np.zeros(10), np.ones(10), np.ones(10, dtype=bool))
    assert (reverse.low, reverse.high) == (-paired.high, -paired.low)


def test_a_few_items_that_only_one_model_got_right_give_no_verdict(gpqa_data,
                                                                    tmp_path: Path):
    """5 of 10 items right against none: the adjusted interval excludes 0, yet the exact
    McNemar test gives p = 0.0625; 6 of 10 give p = 0.031. 3 of 10 (p = 0.25), which
    the plain Wald interval (1.9 to 58.1 points) called, are now within the interval."""
    out = tmp_path / "mb.json"
    assert_ok(mdad_cli("select", "gpqa", "--method", "random", "--size", "10", "--seed", "1",
                       "--out", out, cwd=tmp_path))
    items = MicroBenchmarkFile.load(out).items
    answers = {}
    for name, right in (("none", 0), ("three", 3), ("five", 5), ("six", 6)):
        answers[name] = tmp_path / f"{name}.csv"
        answers[name].write_text("item_id,correct\n" + "".join(
            f"{item},{int(k < right)}\n" for k, item in enumerate(items)))
    for name, p_value, winner in (("three", 0.25, None), ("five", 0.0625, None),
                                  ("six", 0.03125, "six")):
        proc = mdad_cli("compare", out, answers[name], answers["none"], "--json", cwd=tmp_path)
        assert_ok(proc)
        answer = json.loads(proc.stdout)
        assert answer["p_value"] == pytest.approx(p_value) and answer["winner"] == winner
        if name == "three":
            assert answer["low"] < 0 < answer["high"]
            assert answer["reason"] == "the paired 95% interval includes 0"
        else:
            assert answer["low"] > 0  # the interval alone would call it
        if name == "five":
            assert answer["reason"].startswith("the exact McNemar test gives p = 0.062")
    # estimate's verdicts run the same rule: "three" is above none of the models
    proc = mdad_cli("estimate", out, answers["three"], "--json", cwd=tmp_path)
    assert_ok(proc)
    three = json.loads(proc.stdout)
    scores = MicroBenchmarkFile.load(out).reference_scores()
    right = np.array([1.0] * 3 + [0.0] * 7)
    p_values = mcnemar_p(right, scores)
    assert not set(three["above"]) & {
        name for name, p in zip(MicroBenchmarkFile.load(out).reference_models, p_values,
                                strict=True) if p >= 0.05}
