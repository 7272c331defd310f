"""The study protocol on the real GPQA data: design, seeds, validation, and agreement
with the independent slow reference (tests/reference_impl.py)."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
import reference_impl as ref

from mdad.data import ResponseMatrix
from mdad.errors import ConfigError, DataError
from mdad.study import (
    StudyConfig,
    evaluate,
    plan_study,
    run_cell,
    run_study,
    select_cell,
    split_seen_unseen,
)
from mdad.study.cells import draw_design

GPQA_SIZES = (10, 25, 50, 100, 200)
# The paper's six with tinyBenchmarks on the MAP fit: the protocol is the same, the
# variational fit's seconds are not needed here (tests/test_paper_*.py run it).
STUDY_METHODS = ("random", "subtask-equal", "diversity", "confidence-strata", "anchor-points",
                 "tinybenchmarks-map")


@pytest.fixture(scope="module")
def small_study(gpqa):
    plan = plan_study(gpqa, StudyConfig(methods=STUDY_METHODS, n_runs=4, n_resamples=50,
                                        sources=(20, 300)), default_sizes=GPQA_SIZES)
    return plan, run_study(gpqa, plan)


def test_split_halves_every_subtask():
    codes = np.repeat([0, 1, 2], [7, 10, 1])
    seen, unseen = split_seen_unseen(codes, rng=np.random.default_rng(0))
    assert np.bincount(codes[seen], minlength=3).tolist() == [3, 5, 0]
    assert sorted(np.concatenate([seen, unseen]).tolist()) == list(range(18))
    assert np.all(np.diff(codes[seen]) >= 0)  # grouped by subtask, like the reference


def test_design_is_shared_by_methods_and_sizes(gpqa, small_study):
    plan, _ = small_study
    designs = [select_cell(gpqa, plan, run=2, method=m, size=s, n_sources=20)[0]
               for m in plan.config.methods for s in (10, 200)]
    for design in designs[1:]:
        assert np.array_equal(design.targets, designs[0].targets)
        assert np.array_equal(design.seen, designs[0].seen)
    d = designs[0]
    assert np.intersect1d(d.targets, d.sources(300)).size == 0
    assert np.array_equal(d.sources(20), d.sources(300)[:20])  # nested source sets


def test_any_cell_recomputes_alone(gpqa, small_study):
    plan, result = small_study
    for m, method in enumerate(plan.config.methods):
        for s, c, run in ((0, 0, 3), (4, 1, 1), (2, 1, 0)):
            alone = run_cell(gpqa, plan, run=run, method=method, size=plan.sizes[s],
                             n_sources=plan.config.sources[c])
            assert np.array_equal(alone, result.estimates[m, s, c, run])


def test_same_seed_same_tables_other_seed_other_draws(gpqa, small_study):
    plan, result = small_study
    again = run_study(gpqa, plan)
    assert np.array_equal(again.estimates, result.estimates)
    assert evaluate(again).mdad.equals(evaluate(result).mdad)
    other = plan_study(gpqa, StudyConfig(methods=STUDY_METHODS, n_runs=4, seed=1,
                                         sources=(20, 300)), default_sizes=GPQA_SIZES)
    assert not np.array_equal(run_study(gpqa, other).targets, result.targets)


def test_selection_never_reads_target_models(gpqa, small_study):
    plan, _ = small_study
    for method in plan.config.methods:
        design, micro = select_cell(gpqa, plan, run=1, method=method, size=25, n_sources=300)
        flipped = gpqa.correctness.copy()
        flipped[design.targets] = 1 - flipped[design.targets]
        altered = type(gpqa)(flipped, gpqa.model_names, gpqa.item_ids, gpqa.subtasks)
        _, micro_altered = select_cell(altered, plan, run=1, method=method, size=25,
                                       n_sources=300)
        assert np.array_equal(micro.items, micro_altered.items)


def test_accuracies_and_estimates_by_hand(gpqa, small_study):
    plan, result = small_study
    design, micro = select_cell(gpqa, plan, run=0, method="random", size=10, n_sources=300)
    target_rows = gpqa.correctness[design.targets].astype(np.float64)
    assert result.seen[0] == pytest.approx(target_rows[:, design.seen].mean(axis=1))
    assert result.unseen[0] == pytest.approx(target_rows[:, design.unseen].mean(axis=1))
    assert result.full[0] == pytest.approx(target_rows.mean(axis=1))
    expected = target_rows[:, design.seen][:, micro.items].sum(axis=1) / 10
    assert np.array_equal(result.estimates[0, 0, 1, 0], expected)


def test_tables_match_the_reference_loops(small_study):
    """Same estimates in, same MDAD point, error and tau out as the slow reference."""
    plan, result = small_study
    tables = evaluate(result)
    for m, method in enumerate(plan.config.methods):
        for s, size in enumerate(plan.sizes):
            est = result.estimates[m, s, 1]
            records = [r for run in range(4)
                       for r in ref.agreement_records(result.seen[run], result.unseen[run],
                                                      est[run])]
            row = tables.mdad.set_index(["method", "size", "sources", "split"])
            for split in ("seen", "unseen"):
                bins = [getattr(r, f"bin_{split}") for r in records]
                agrees = [getattr(r, f"agree_{split}") for r in records]
                expected = ref.first_crossing_point(bins, agrees)
                assert row.loc[(method, size, 300, split), "mdad"] == expected
            per_run = [ref.mae_and_tau(est[r], result.seen[r], result.unseen[r])
                       for r in range(4)]
            summary = tables.summary.set_index(["method", "size", "sources"])
            got = summary.loc[(method, size, 300)]
            assert got.mae_seen == pytest.approx(np.mean([p["mae_seen"] for p in per_run]))
            assert got.kendall_tau_unseen == pytest.approx(
                np.nanmean([p["tau_unseen"] for p in per_run]))
    t = tables.mdad
    reached = t[t.reached]
    assert len(reached) > 100 and (reached.mdad_low <= reached.mdad).all()
    assert ((reached.mdad <= reached.mdad_high) | reached.mdad_high.isna()).all()  # unbounded
    assert (reached.crossing_pairs > 0).all() and (t.pairs == 4 * 50 * 49 // 2).all()
    censored = t[~t.reached]
    assert censored.mdad.isna().all() and censored.mdad_high.isna().all()
    assert (censored.crossing_pairs == 0).all() and (censored.max_gap > 0).all()
    # a censored smooth estimate may have a finite lower end: its interval is [low, inf)
    assert ((t.mdad_smooth_low <= t.mdad_smooth) | t.mdad_smooth_low.isna()
            | (t.mdad_smooth.isna() & ~t.smooth_reached)).all()


@pytest.mark.parametrize(
    ("config", "error", "message", "cli_message"),
    [
        (StudyConfig(n_targets=400, sources=(300,)), ConfigError,
         r"420 models, fewer than 400 targets \+ 300 sources; use sources 20 or less "
         r"with 400 targets, or n_targets 120 or less with 300 sources",
         r"use --sources 20 or less with 400 targets, or --targets 120 or less with 300 "
         r"sources"),
        (StudyConfig(sizes=(300,)), ConfigError,
         r"^sizes 300 is larger than the seen pool of 224 items", r"^--sizes 300 is larger"),
        (StudyConfig(sizes=(10, 10)), ConfigError, r"^sizes lists a size twice",
         r"^--sizes lists"),
        (StudyConfig(methods=("random", "nope")), ConfigError,
         r"^methods: unknown method 'nope'; choose from", r"^--methods: unknown method 'nope'"),
        (StudyConfig(threshold=1.0), ConfigError, r"^threshold must be in \(0, 1\); got 1.0",
         r"^--threshold must be"),
        (StudyConfig(n_runs=0), ConfigError, r"^n_runs must be an integer >= 1; got 0",
         r"^--runs must be an integer >= 1; got 0"),
        (StudyConfig(n_runs=2.5), ConfigError, r"^n_runs must be an integer >= 1; got 2.5",
         r"^--runs must"),
        (StudyConfig(n_targets=1), ConfigError, r"^n_targets must be at least 2",
         r"^--targets must be at least 2"),
        (StudyConfig(n_targets="all", sources=(419,)), ConfigError,
         r"^n_targets must be at least 2 to form pairs; got 1 \(420 models - 419 sources\)",
         r"^--targets must be at least 2"),
        (StudyConfig(target_models=("no-such-model",)), DataError,
         r"^target_models: model 'no-such-model' is not", r"^--target-models: model"),
    ],
)
def test_invalid_configs_are_one_line_errors(gpqa, config, error, message, cli_message):
    """The library names its parameters; the CLI names them as its options."""
    from mdad.cli.errors import as_options

    with pytest.raises(error, match=message) as info:
        plan_study(gpqa, config, default_sizes=GPQA_SIZES)
    assert "\n" not in str(info.value)
    assert re.search(cli_message, as_options(str(info.value), info.value.parameters))


def test_default_sizes_above_the_seen_pool_are_dropped_with_a_notice(gpqa):
    plan = plan_study(gpqa, StudyConfig())
    assert plan.sizes == (10, 25, 50, 100)
    assert plan.notices == ("sizes 250, 500, 1000 dropped: the seen pool holds 224 items "
                            "(half of each subtask)",)


def test_subtask_equal_size_limit_is_checked_before_running(mmlu_pro):
    from mdad.data import resolve_missing

    complete, _ = resolve_missing(mmlu_pro)
    smallest = int((np.bincount(complete.subtask_codes) // 2).min())
    limit = 14 * smallest
    with pytest.raises(ConfigError, match=rf"subtask-equal cannot build {limit + 1} items"):
        plan_study(complete, StudyConfig(sizes=(limit + 1,), sources=(19,), n_targets=10))


def test_targets_accept_numpy_integers(gpqa):
    from mdad.cli.run_cmd import _parse_targets

    assert plan_study(gpqa, StudyConfig(n_targets=np.int64(30)),
                      default_sizes=GPQA_SIZES).n_targets == 30
    assert _parse_targets("50") == 50 and _parse_targets(" ALL ") == "all"
    with pytest.raises(ConfigError, match="--targets takes a whole number or 'all'"):
        _parse_targets("most")


def test_all_targets_are_every_model_not_a_source(gpqa):
    plan = plan_study(gpqa, StudyConfig(n_targets="all", sources=(20, 300), n_runs=3,
                                        methods=("random",), sizes=(10,)),
                      default_sizes=GPQA_SIZES)
    assert plan.n_targets == 420 - 300
    result = run_study(gpqa, plan)
    for run in range(3):
        design = draw_design(gpqa, plan, run)
        everyone = np.concatenate([design.targets, design.sources(300)])
        assert np.array_equal(np.sort(everyone), np.arange(420))
        assert np.array_equal(result.targets[run], design.targets)


def test_summary_reports_the_items_a_static_micro_benchmark_used(gpqa, small_study):
    """Every target answers every item of a static micro-benchmark: its distinct items
    are its size, and the most-used item was seen by all targets."""
    _, result = small_study
    tables = evaluate(result)
    assert (tables.summary.distinct_items == tables.summary["size"]).all()
    assert (tables.summary.top_item_share == 1.0).all()
    assert result.exposure.shape == (*result.estimates.shape[:4], 2)


@pytest.mark.parametrize(("message", "parameters", "expected"), [
    ("n_runs must be >= 1; got 0", ("n_runs",), "--runs must be >= 1; got 0"),
    ("use sources 20 with 300 sources", ("sources",), "use --sources 20 with 300 sources"),
    # the user's own words, quoted or a path, stay as they are
    ("model 'my model' is not one of the 2 models of /x/model/w.csv; model",
     ("model",), "--model 'my model' is not one of the 2 models of /x/model/w.csv; --model"),
    ('model "model" is unknown', ("model",), '--model "model" is unknown'),
    # an apostrophe after a letter opens no quote
    ("study_dir's MDAD is for gpqa's items (e.g. 'study_dir'); leave out study_dir",
     ("study_dir",), "--run's MDAD is for gpqa's items (e.g. 'study_dir'); leave out --run"),
])
def test_parameters_become_options_outside_the_user_s_own_words(message, parameters,
                                                                 expected):
    from mdad.cli.errors import as_options

    assert as_options(message, parameters) == expected


def test_a_target_models_list_is_blamed_for_its_own_faults_and_an_empty_pool_is_said():
    from mdad.cli.errors import as_options

    rng = np.random.default_rng(0)
    names = [f"m{i}" for i in range(10)]
    matrix = ResponseMatrix((rng.random((10, 40)) < 0.5).astype(float), names,
                            [f"q{k}" for k in range(40)])
    one = StudyConfig(methods=("random",), sizes=(5,), sources=(5,), target_models=("m0",))
    with pytest.raises(ConfigError, match=r"^target_models lists 1 model; pairs need at "
                       r"least 2$") as info:
        plan_study(matrix, one)
    assert as_options(str(info.value), info.value.parameters).startswith("--target-models")
    seven = replace(one, target_models=tuple(names[:7]))
    with pytest.raises(ConfigError, match=r"fewer than 7 targets \+ 5 sources; use sources 3 "
                       r"or less with 7 targets, or target_models of 5 or fewer with 5 "
                       r"sources$"):
        plan_study(matrix, seven)
    single_item = ResponseMatrix(matrix.correctness[:, :1], names, ["q0"])
    with pytest.raises(ConfigError, match=r"has no subtask of 2 items or more, so its seen "
                       r"pool .* is empty"):
        plan_study(single_item, StudyConfig(methods=("random",), sizes=(1,), sources=(5,),
                                            n_targets=4))
