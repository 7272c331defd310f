"""Studies with every method: worker processes, per-subtask pooling, fallbacks reported,
degenerate data, and the command line's answers to what a method cannot do."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import reference_impl as ref
from helpers import FAST, assert_ok, assert_user_error, flat, gpqa_path, mdad_cli

from mdad.data import ResponseMatrix
from mdad.errors import ConfigError
from mdad.selection import METHODS
from mdad.study import (
    StudyConfig,
    evaluate,
    expand_methods,
    plan_study,
    run_study,
    select_cell,
)
from mdad.study.backends import ProcessBackend
from mdad.study.cells import draw_design
from mdad.study.checkpoint import StudyCheckpoint
from mdad.study.runner import run_studies
from mdad.study.subtasks import (
    POOLED,
    evaluate_per_subtask,
    fraction_sizes,
    plan_per_subtask,
)


def synthetic(n_models: int = 60, subtask_sizes: tuple[int, ...] = (40, 30, 50),
              seed: int = 0) -> ResponseMatrix:
    """A small 1-D IRT-like matrix with subtasks."""
    rng = np.random.default_rng(seed)
    n_items = sum(subtask_sizes)
    ability = rng.normal(size=n_models)
    difficulty = rng.normal(size=n_items)
    p = 1 / (1 + np.exp(-(ability[:, None] - difficulty[None, :])))
    correctness = (rng.random((n_models, n_items)) < p).astype(np.float32)
    subtasks = np.repeat([f"s{k}" for k in range(len(subtask_sizes))], subtask_sizes)
    return ResponseMatrix(correctness, np.array([f"m{i}" for i in range(n_models)]),
                          np.array([f"q{j}" for j in range(n_items)]), subtasks=subtasks,
                          source="synthetic")


def test_all_expands_to_every_method_once_in_registry_order():
    assert expand_methods(("all",)) == tuple(METHODS)
    assert expand_methods(("anchor-points", "all")) == (
        "anchor-points", *[m for m in METHODS if m != "anchor-points"])
    assert expand_methods(("random",)) == ("random",)


@pytest.mark.slow
def test_worker_processes_give_bit_identical_results():
    matrix = synthetic()
    plan = plan_study(matrix, StudyConfig(methods=tuple(METHODS), sizes=(5, 12), n_runs=3,
                                          n_targets=10, sources=(30,)))
    alone = run_study(matrix, plan)
    shared = run_study(matrix, plan, backend=ProcessBackend(2))
    assert np.array_equal(alone.estimates, shared.estimates)
    assert np.array_equal(alone.targets, shared.targets)
    assert alone.notices == shared.notices
    assert (alone.method_seconds > 0).all()


def test_per_subtask_studies_share_model_draws_and_pool_pairs_within_subtasks():
    matrix = synthetic()
    config = StudyConfig(methods=("random", "anchor-points"), n_runs=4, n_targets=8,
                         sources=(30,), n_resamples=50)
    fractions = (0.1, 0.3)
    studies = plan_per_subtask(matrix, config, fractions)
    assert [s.name for s in studies] == ["s0", "s1", "s2"]
    assert [s.plan.sizes for s in studies] == [(2, 6), (2, 4), (2, 8)]
    results = run_studies([(study.matrix, study.plan) for study in studies])
    for result in results[1:]:
        assert np.array_equal(result.targets, results[0].targets)
    tables = evaluate_per_subtask(studies, results, fractions)
    pooled = tables.mdad[tables.mdad.subtask == POOLED]
    assert sorted(pooled["size"].unique()) == [6, 18]  # totals over subtasks
    assert set(tables.mdad.subtask) == {"s0", "s1", "s2", POOLED}
    # The pooled curve is the pairs of every subtask's runs, binned together.
    bins, agree = [], []
    for result in results:
        for run in range(config.n_runs):
            records = ref.agreement_records(result.seen[run], result.unseen[run],
                                            result.estimates[0, 1, 0, run])
            bins += [r.bin_seen for r in records]
            agree += [r.agree_seen for r in records]
    expected, _, _ = ref.first_crossing_mdad(bins, agree, n_resamples=1,
                                             rng=np.random.default_rng(0))
    row = pooled[(pooled.method == "random") & (pooled.split == "seen") & (pooled["size"] == 18)]
    assert row.mdad.item() == pytest.approx(expected)
    summary = tables.summary[tables.summary.subtask == POOLED]
    assert (summary.runs == 3 * config.n_runs).all()


def test_per_subtask_keeps_the_whole_design_and_draws_apart_per_subtask():
    matrix = synthetic(subtask_sizes=(40, 40))  # equal sizes: no accidental coupling
    config = StudyConfig(methods=("random",), n_runs=2, n_targets=8, sources=(30,))
    studies = plan_per_subtask(matrix, config, (0.25,))
    whole = plan_study(matrix, replace(config, sizes=(5,)))
    for run in range(2):
        design = draw_design(matrix, whole, run)
        picks = []
        for code, study in enumerate(studies):
            part = draw_design(study.matrix, study.plan, run)
            in_subtask = matrix.subtask_codes[design.seen] == code
            assert np.array_equal(part.seen, design.seen[in_subtask])
            assert np.array_equal(part.targets, design.targets)
            _, micro = select_cell(study.matrix, study.plan, run=run, method="random",
                                   size=5, n_sources=30)
            picks.append(tuple(micro.items))
        assert picks[0] != picks[1]


def test_fraction_sizes_and_their_errors():
    assert fraction_sizes(224, (0.02, 0.04, 0.4), "gpqa_main") == (4, 9, 90)
    assert fraction_sizes(10, (0.01,), "tiny") == (1,)
    with pytest.raises(ConfigError, match=r"subtask 'tiny' has 10 seen items.*same size"):
        fraction_sizes(10, (0.02, 0.04), "tiny")
    with pytest.raises(ConfigError, match=r"^fractions must list at least one number in "
                                          r"\(0, 1\], each once; got \(0"):
        fraction_sizes(10, (0.0,), "tiny")
    with pytest.raises(ConfigError, match=r"^sizes does not apply with per_subtask; use fractions"):
        plan_per_subtask(synthetic(), StudyConfig(sizes=(5,)), (0.1,))
    with pytest.raises(ConfigError, match=r"subtask 'lonely' has no seen items"):
        fraction_sizes(0, (0.1,), "lonely")


def test_a_fraction_that_rounds_to_no_item_says_it_holds_one():
    matrix = synthetic(subtask_sizes=(40, 40))  # 20 seen items each: 0.01 -> 0.2 items
    config = StudyConfig(methods=("random",), n_runs=2, n_targets=8, sources=(30,))
    for study in plan_per_subtask(matrix, config, (0.01, 0.5)):
        assert study.plan.sizes == (1, 10)
        assert ("fraction 0.01 of its 20 seen items rounds to no item; its micro-benchmarks "
                "at that fraction hold 1 item") in study.plan.notices
    assert not any(s.plan.notices for s in plan_per_subtask(matrix, config, (0.05, 0.5)))


def test_a_fallback_is_reported_with_how_often_it_happened():
    # 22 seen items: the 1% tails leave fewer than 22, so the DPP uses all items.
    matrix = synthetic(subtask_sizes=(44,))
    plan = plan_study(matrix, StudyConfig(methods=("diversity",), sizes=(22,), n_runs=3,
                                          n_targets=10, sources=(30,)))
    result = run_study(matrix, plan)
    assert result.notices == ("diversity at size 22, 3 of 3 cells: the 1% tail filter left "
                              "fewer items than the size; used all items",)


def test_degenerate_matrix_runs_every_method():
    """All-right and all-wrong items, and duplicated models, in one matrix."""
    matrix = synthetic(n_models=40, subtask_sizes=(60,))
    values = matrix.correctness.copy()
    values[:, :6] = 1.0
    values[:, 6:12] = 0.0
    values[20:30] = values[10:20]
    degenerate = ResponseMatrix(values, matrix.model_names, matrix.item_ids,
                                subtasks=matrix.subtasks, source="degenerate")
    plan = plan_study(degenerate, StudyConfig(methods=tuple(METHODS), sizes=(5, 29), n_runs=2,
                                              n_targets=10, sources=(25,), n_resamples=20))
    result = run_study(degenerate, plan)
    assert np.isfinite(result.estimates).all()
    assert np.isfinite(evaluate(result).mdad.mdad).all()


def test_too_few_sources_for_a_method_is_a_config_error():
    matrix = synthetic()
    with pytest.raises(ConfigError, match=r"method tinybenchmarks needs at least 2 source "
                                          r"models; got sources 1"):
        plan_study(matrix, StudyConfig(methods=("tinybenchmarks",), sizes=(5,), sources=(1,)))
    with pytest.raises(ConfigError, match=r"tinybenchmarks-gpirt needs at least 3"):
        plan_study(matrix, StudyConfig(methods=("tinybenchmarks-gpirt",), sizes=(5,),
                                       n_targets=10, sources=(2, 30)))


def test_default_sizes_a_method_cannot_build_are_dropped_for_it_alone(tmp_path: Path):
    """subtask-equal builds at most 45 items here (3 x the smallest subtask's 15):
    default size 50 is dropped for it, with a notice, while random keeps it; its cells
    there are not computed, and the tables hold no row for them."""
    matrix = synthetic(subtask_sizes=(40, 30, 50))  # seen pool 60, smallest subtask 15
    config = StudyConfig(methods=("random", "subtask-equal"), n_runs=2, n_targets=10,
                         sources=(30,), n_resamples=20)
    plan = plan_study(matrix, config, default_sizes=(10, 25, 50))
    assert plan.sizes == (10, 25, 50) and plan.dropped == {"subtask-equal": (50,)}
    assert plan.sizes_of("random") == (10, 25, 50)
    assert plan.sizes_of("subtask-equal") == (10, 25)
    assert plan.notices == ("sizes 50 dropped for method subtask-equal: it can build at most "
                            "45 items from this seen pool (random keeps them)",)
    assert plan.n_cells == 2 * (3 + 2)  # runs x (random's sizes + subtask-equal's)
    counts: list[tuple[int, int]] = []
    checkpoint = StudyCheckpoint(tmp_path / "checkpoint")
    checkpoint.start({"request": "dropped sizes"})
    result = run_study(matrix, plan, checkpoint=checkpoint,
                       progress=lambda done, total: counts.append((done, total)))
    assert counts[-1] == (10, 10)
    resumed = run_study(matrix, plan, checkpoint=checkpoint)  # its saved runs, read back
    np.testing.assert_array_equal(resumed.estimates, result.estimates)
    assert np.isnan(result.estimates[1, 2]).all()  # subtask-equal at 50: no cell
    assert np.isfinite(np.delete(result.estimates.reshape(6, -1), 5, axis=0)).all()
    frame = result.to_frame()
    assert sorted(frame.groupby("method", observed=True)["size"].unique().map(list)
                  .to_dict().items()) == [("random", [10, 25, 50]),
                                          ("subtask-equal", [10, 25])]
    assert frame.estimate.notna().all() and len(frame) == 2 * 10 * 5
    tables = evaluate(result)
    for table in (tables.mdad, tables.summary, tables.agreement):
        keys = set(zip(table.method, table["size"], strict=True))
        assert keys == {("random", 10), ("random", 25), ("random", 50),
                        ("subtask-equal", 10), ("subtask-equal", 25)}
    with pytest.raises(ConfigError, match=r"size must be one of the plan's sizes for method "
                                          r"subtask-equal: 10, 25 \(it cannot build 50 "
                                          r"items from this seen pool\); got 50"):
        select_cell(matrix, plan, run=0, method="subtask-equal", size=50, n_sources=30)
    # a size no method can build is no size of the study
    alone = plan_study(matrix, replace(config, methods=("subtask-equal",)),
                       default_sizes=(10, 25, 50))
    assert alone.sizes == (10, 25) and alone.dropped == {}
    assert alone.notices == ("sizes 50 dropped for method subtask-equal: it can build at "
                             "most 45 items from this seen pool",)
    # an explicit size a method cannot build is an error
    with pytest.raises(ConfigError, match=r"method subtask-equal cannot build 50 items "
                                          r"from this seen pool \(at most 45\)"):
        plan_study(matrix, StudyConfig(methods=("subtask-equal",), sizes=(50,), n_targets=10,
                                       sources=(30,)))


def test_a_resumed_study_whose_methods_now_build_other_sizes_is_refused(tmp_path: Path):
    """The saved runs hold each method's sizes as planned when the study started. After
    an upgrade of mdad or of a plug-in a method may build other sizes: resuming would mix
    runs of two plans (a traceback, or a size with runs missing). It is one line."""
    from mdad.study import StudyInterrupted, StudyRequest, conduct_study, prepare_study
    from mdad.study.backends import choose_backend
    from mdad.study.pipeline import checkpoint_dir

    matrix = synthetic(subtask_sizes=(40, 30, 50))  # subtask-equal: at most 45 of 60
    frame = pd.DataFrame(matrix.correctness.T, columns=matrix.model_names)
    frame.insert(0, "subtask", matrix.subtasks)
    frame.insert(0, "item_id", matrix.item_ids)
    data = tmp_path / "three.csv"
    frame.to_csv(data, index=False)
    request = StudyRequest(str(data), StudyConfig(methods=("random", "subtask-equal"),
                                                  n_runs=3, n_targets=10, sources=(30,),
                                                  n_resamples=20))

    def stop(state) -> None:
        if state.stage == "cells" and state.cells_done == 5:
            raise KeyboardInterrupt

    out = tmp_path / "study"
    with pytest.raises(StudyInterrupted):
        conduct_study(prepare_study(request), out, backend=choose_backend("in-process"),
                      progress=stop)
    saved_path = checkpoint_dir(out) / "request.json"
    original = saved_path.read_text()
    saved = json.loads(original)
    sizes = {"random": [10, 25, 50], "subtask-equal": [10, 25]}
    assert saved["layout"][0] == sizes
    for layout in ([{"random": [10, 25, 50], "subtask-equal": [10, 25, 50]}], None):
        if layout is None:  # a checkpoint written before the layout was kept
            saved.pop("layout")
        else:  # subtask-equal could build size 50 when the study started
            saved["layout"] = layout
        saved_path.write_text(json.dumps(saved))
        with pytest.raises(ConfigError, match=r"^resume .*: the study now plans other "
                                              r"sizes for its methods than when it started"):
            conduct_study(prepare_study(request), out, resume=True)
    saved_path.write_text(original)  # its runs are named by the file's digest
    outcome = conduct_study(prepare_study(request), out, resume=True)
    assert set(zip(outcome.tables.mdad.method, outcome.tables.mdad["size"], strict=True)) == {
        ("random", 10), ("random", 25), ("random", 50), ("subtask-equal", 10),
        ("subtask-equal", 25)}


# ----------------------------------------------------------------------- the CLI


def test_cli_method_limits_are_one_line_errors(tmp_path: Path) -> None:
    gpqa_path()
    proc = mdad_cli("run", "gpqa", "--methods", "tinybenchmarks", "--sources", "1",
                    *FAST, "--out", tmp_path / "a", cwd=tmp_path)
    assert_user_error(proc, r"method tinybenchmarks needs at least 2 source models; "
                            r"got --sources 1")
    proc = mdad_cli("run", "gpqa", "--methods", "anchor-points-predictor", "--sizes", "224",
                    *FAST, "--out", tmp_path / "b", cwd=tmp_path)
    assert_user_error(proc, r"method anchor-points-predictor cannot build 224 items from this "
                            r"seen pool \(at most 223\); lower --sizes or drop the method")
    proc = mdad_cli("run", "gpqa", "--per-subtask", "--sizes", "10", *FAST,
                    "--out", tmp_path / "c", cwd=tmp_path)
    assert_user_error(proc, r"--sizes does not apply with --per-subtask; use --fractions")
    proc = mdad_cli("run", "gpqa", "--per-subtask", "--fractions", "0.1,x", *FAST,
                    "--out", tmp_path / "d", cwd=tmp_path)
    assert_user_error(proc, r"--fractions takes numbers separated by commas; got '0.1,x'")
    proc = mdad_cli("run", "gpqa", "--fractions", "0.1", *FAST, "--out", tmp_path / "e",
                    cwd=tmp_path)
    assert_user_error(proc, r"--fractions applies only with --per-subtask")
    proc = mdad_cli("run", "gpqa", "--workers", "-1", *FAST, "--out", tmp_path / "f",
                    cwd=tmp_path)
    assert_user_error(proc, r"--workers must be 0 \(one per core\) or more; got -1")


def test_cli_methods_lists_every_method(tmp_path: Path) -> None:
    proc = mdad_cli("methods", cwd=tmp_path)
    assert_ok(proc)
    for name in METHODS:
        assert name in proc.stdout


def test_cli_per_subtask_on_gpqa(tmp_path: Path) -> None:
    gpqa_path()
    out = tmp_path / "per"
    proc = mdad_cli("run", "gpqa", "--per-subtask", "--methods", "random,tinybenchmarks-map",
                    "--fractions", "0.04,0.4", *FAST, "--out", out, cwd=tmp_path)
    assert_ok(proc)
    assert "each subtask's MDAD is in mdad.csv" in flat(proc.stdout)
    table = pd.read_csv(out / "mdad.csv")
    assert set(table.subtask) == {"gpqa_main", POOLED}
    assert sorted(table.fraction.unique()) == [0.04, 0.4]
    # One subtask: pooling changes nothing.
    per, pooled = (table[table.subtask == name].drop(columns="subtask").reset_index(drop=True)
                   for name in ("gpqa_main", POOLED))
    assert per.drop(columns=["mdad_low", "mdad_high"]).equals(
        pooled.drop(columns=["mdad_low", "mdad_high"]))
    config = json.loads((out / "config.json").read_text())
    assert config["per_subtask"] == {"fractions": [0.04, 0.4], "sizes": {"gpqa_main": [9, 90]}}
    assert config["study"]["sizes"] is None
    results = pd.read_parquet(out / "results.parquet")
    assert set(results.subtask) == {"gpqa_main"}


@pytest.mark.slow
def test_cli_all_methods_say_which_used_correctness(tmp_path: Path) -> None:
    gpqa_path()
    out = tmp_path / "all"
    proc = mdad_cli("run", "gpqa", "--methods", "all", "--sizes", "10", *FAST,
                    "--out", out, cwd=tmp_path)
    assert_ok(proc)
    config = json.loads((out / "config.json").read_text())
    readers = [name for name, cls in METHODS.items() if cls.reads_confidence]
    assert config["confidence_substituted_by_correctness"] == readers
    assert f"no confidences in this data: {', '.join(readers)} used correctness" in flat(
        proc.stdout)
    assert set(config["timing"]["method_cpu_seconds"]) == set(METHODS)
    assert set(pd.read_csv(out / "mdad.csv").method) == set(METHODS)
