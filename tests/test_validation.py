"""Public functions refuse bad input in the library's terms: an MdadError that names
the parameter, never a raw TypeError, IndexError or NaN (issue 37's audit)."""

from __future__ import annotations

import numpy as np
import pytest

from mdad.errors import ConfigError, DataError, MdadError


@pytest.fixture(scope="module")
def random_10(gpqa_data):
    from mdad.practice.bundle import select_microbenchmark

    return select_microbenchmark(gpqa_data, "random", 10, seed=0)


def _scores(values) -> object:
    from mdad.practice.results import ItemScores

    return ItemScores("m", np.asarray(values, dtype=float), [], 0)


def _refused(call, error: type[MdadError], message: str, parameter: str | None) -> None:
    with pytest.raises(error, match=message) as info:
        call()
    if parameter is not None:
        assert parameter in info.value.parameters, info.value.parameters


def test_selecting(gpqa_data):
    from mdad.practice.bundle import select_microbenchmark
    from mdad.selection import method_class

    select = select_microbenchmark
    for threshold in (1.5, 0.0, float("nan")):
        _refused(lambda t=threshold: select(gpqa_data, "random", 5, threshold=t), ConfigError,
                 r"^threshold must be in \(0, 1\)", "threshold")
    _refused(lambda: method_class("nope"), ConfigError, "^unknown method 'nope'", "method")
    _refused(lambda: select(gpqa_data, "random", 5, pool=[]), ConfigError,
             "^pool must be a non-empty list", "pool")
    _refused(lambda: select(gpqa_data, "random", 5, pool="333"), ConfigError,
             "^pool must be a non-empty list", "pool")
    _refused(lambda: select(gpqa_data, "random", 5, models=[True, False]), ConfigError,
             "^models must be a list of model names or indices", "models")
    _refused(lambda: select("gpqa", "random", 5), ConfigError,  # type: ignore[arg-type]
             r"^dataset must be a Dataset \(mdad.load_dataset\(name\)\); got str", "dataset")
    _refused(lambda: select(gpqa_data, "random", 5, progress=5), ConfigError,  # type: ignore
             "^progress must be a function", "progress")


def test_planning(gpqa_data):
    from mdad.practice.sizing import plan

    _refused(lambda: plan(gpqa_data, size=10.7), ConfigError,
             "^size must be a whole number; got 10.7", "size")
    _refused(lambda: plan(gpqa_data, gap="0.05"), ConfigError, r"^gap must be in \(0, 1\)",
             "gap")
    _refused(lambda: plan(None, size=10), ConfigError, "^dataset must be a Dataset", "dataset")


def test_estimating_and_comparing(random_10):
    from mdad.practice.compare import compare_models
    from mdad.practice.estimate import estimate_score

    good = _scores(np.ones(10))
    _refused(lambda: estimate_score("mb.json", good), ConfigError,  # type: ignore[arg-type]
             r"^bundle must be a MicroBenchmarkFile \(MicroBenchmarkFile.load\(path\)\)",
             "bundle")
    _refused(lambda: estimate_score(random_10, _scores([2.0] * 10)), DataError,
             r"^results: scores must lie in \[0, 1\]", "results")
    _refused(lambda: estimate_score(random_10, _scores([np.inf] * 10)), DataError,
             r"^results: scores must lie in \[0, 1\]", "results")
    _refused(lambda: estimate_score(random_10, _scores(np.ones(30))), DataError,
             "^results: scores must be 10 floats", "results")
    _refused(lambda: compare_models(random_10, good, _scores(np.ones(5))), DataError,
             "^second: scores must be 10 floats", "second")
    # what is valid still passes: 0/1 as bool or int, NaN for an item not answered
    from mdad.practice.results import ItemScores

    for scores in (np.ones(10, bool), np.ones(10, int), np.r_[np.ones(9), np.nan]):
        estimate = estimate_score(random_10, ItemScores("m", scores, [], 0), allow_partial=True)
        assert 0 <= estimate.accuracy <= 1
    _refused(lambda: compare_models(random_10, good, "b.csv"), ConfigError,  # type: ignore
             "^second must be ItemScores", "second")


def test_studies_and_data():
    from mdad.data import load_dataset
    from mdad.study import StudyConfig
    from mdad.study.config import check_config

    _refused(lambda: check_config(StudyConfig(sizes=5)), ConfigError,  # type: ignore[arg-type]
             r"^sizes must be a tuple or list of sizes, e\.g\. \(10, 25\); got 5", "sizes")
    _refused(lambda: check_config(StudyConfig(sources=300)), ConfigError,  # type: ignore
             "^sources must be a tuple or list of source-model counts", "sources")
    _refused(lambda: check_config(StudyConfig(methods="random")), ConfigError,  # type: ignore
             "^methods must be a tuple or list of method names", "methods")
    _refused(lambda: load_dataset("synthetic:gpqa", n_models=2.5), ConfigError,
             "^n_models must be between 2 and 5000; got 2.5", "n_models")
    _refused(lambda: load_dataset("synthetic:gpqa", data_seed=1.5), ConfigError,
             "^data_seed must be an integer >= 0; got 1.5", "data_seed")
    _refused(lambda: load_dataset("synthetic:zzz"), ConfigError,
             "^unknown synthetic dataset synthetic:zzz", "name_or_path")


def test_mdad_functions():
    from mdad.metrics import first_crossing_mdad, smooth_mdad

    rng = np.random.default_rng(0)
    empty = np.zeros(0, dtype=int)
    _refused(lambda: first_crossing_mdad(empty, empty, rng=rng), DataError,
             "^pairs must have 1 to 201 gap bins", "pairs")
    many = np.ones(300, dtype=int)
    _refused(lambda: first_crossing_mdad(many, many, rng=rng), DataError,
             r"^pairs must have 1 to 201 gap bins \(`gap_bins`\); got 300", "pairs")
    pairs = np.array([5, 5, 5])
    for gap in (-1, 1.5, "x"):
        _refused(lambda g=gap: first_crossing_mdad(pairs, pairs, rng=rng, max_gap=g),
                 ConfigError, r"^max_gap must be a gap in \[0, 1\], NaN \(no pair\) or None",
                 "max_gap")
    assert np.isnan(first_crossing_mdad(pairs, pairs, rng=rng, max_gap=float("nan")).max_gap)
    _refused(lambda: smooth_mdad(np.zeros((0, 3), int), np.zeros((0, 3), int), rng=rng),
             DataError, "^pairs must have 1 to 201 gap bins", "pairs")


def test_round_trips(gpqa_data):
    from mdad.practice.roundtrip import round_trip

    _refused(lambda: round_trip(gpqa_data, "random", [10], folds=2.5), ConfigError,
             "^folds must be an integer >= 2", "folds")
    _refused(lambda: round_trip(gpqa_data, "random", [10], seeds=[]), ConfigError,
             "^seeds must be a non-empty list", "seeds")
    _refused(lambda: round_trip(gpqa_data, "random", [10], seeds=[-1]), ConfigError,
             "^seeds must be an integer >= 0", "seeds")


def test_registering_and_pools():
    from mdad.selection.base import SeenPool
    from mdad.selection.registry import METHODS, register

    for name in (5, "", "a b", "all"):
        _refused(lambda n=name: register(n), ConfigError,  # type: ignore[arg-type]
                 "^a method's name must be letters, digits", "name")
    _refused(lambda: METHODS.add("random", METHODS["random"]), ConfigError,
             "^selection method 'random' is registered twice", "name")
    ones = np.ones((3, 4))
    _refused(lambda: SeenPool(ones, np.ones((12, 4)), np.zeros(4, int)), DataError,
             "^SeenPool: correctness and confidence must be one", "confidence")
    _refused(lambda: SeenPool(ones, ones, np.zeros(5, int)), DataError,
             "^subtask_codes must be 4 codes >= 0, one per item", "subtask_codes")


def test_paths(random_10):
    from mdad.data import read_results
    from mdad.practice.adaptive import AdaptiveTest
    from mdad.practice.bundle import MicroBenchmarkFile
    from mdad.practice.results import read_model_scores
    from mdad.study import read_study_folder

    for call in (lambda: read_results(None), lambda: read_study_folder(None),
                 lambda: MicroBenchmarkFile.load(None), lambda: AdaptiveTest.load(None),
                 lambda: read_model_scores(None, random_10)):
        _refused(call, ConfigError, r"^path must be a path \(str or pathlib.Path\); got "
                                    "NoneType", "path")


def test_a_plan_runs_only_on_a_matrix_it_fits(gpqa_data):
    from mdad.study import StudyConfig, plan_study, run_study

    matrix = gpqa_data.matrix
    plan = plan_study(matrix, StudyConfig(methods=("random",), n_runs=1, sizes=(10,),
                                          sources=(30,), n_targets=20))
    small = matrix.take(models=np.arange(40))
    _refused(lambda: run_study(small, plan), DataError,
             r"^the plan needs 50 models \(20 targets and 30 sources\); the matrix has 40",
             "plan")


def test_study_requests():
    from mdad.study import StudyConfig, StudyRequest, expand_methods

    _refused(lambda: StudyRequest(5), ConfigError,  # type: ignore[arg-type]
             "^dataset must be a dataset name or a results path; got int", "dataset")
    _refused(lambda: StudyRequest("gpqa", {"n_runs": 2}), ConfigError,  # type: ignore
             "^config must be a StudyConfig; got dict", "config")
    _refused(lambda: StudyRequest("gpqa", StudyConfig(), [1]), ConfigError,  # type: ignore
             "^load_options must be a dict", "load_options")
    for fractions in ((2.0,), (float("nan"),), (), "0.5", (0.5, 0.5), (True,)):
        _refused(lambda f=fractions: StudyRequest("gpqa", per_subtask=True, fractions=f),
                 ConfigError,
                 r"^fractions must list at least one number in \(0, 1\], each once",
                 "fractions")
    _refused(lambda: expand_methods("all"), ConfigError,  # type: ignore[arg-type]
             r"^methods must be a tuple of method names, e\.g\. \('all',\)", "methods")


def test_a_methods_select_refuses_what_it_cannot_build():
    # every method's, through MethodDefaults: a plugin's too
    from mdad.selection import get_method
    from mdad.selection.base import SeenPool

    ones = np.ones((6, 8))
    pool = SeenPool(ones, ones, np.repeat([0, 1], 4))
    rng = np.random.default_rng(0)
    for name in ("random", "subtask-equal", "anchor-points", "adaptive"):
        method = get_method(name)
        limit = method.max_size(pool)
        for size in (0, -2, limit + 1, 3.5, True):
            _refused(lambda m=method, s=size: m.select(pool, s, rng=rng), ConfigError,
                     rf"^size must be a whole number in 1\.\.{limit}, what {name} can build",
                     "size")
        _refused(lambda m=method: m.select(pool, 2, rng=0), ConfigError,  # type: ignore
                 "^rng must be a numpy.random.Generator; got int", "rng")
        _refused(lambda m=method: m.select(ones, 2, rng=rng), ConfigError,  # type: ignore
                 "^pool must be a SeenPool; got ndarray", "pool")


def test_smaller_pieces():
    from mdad.practice.calibration import Calibration
    from mdad.selection import largest_size

    truth = np.linspace(0.2, 0.6, 40)
    for confidence in (1.5, 0.0, -1):
        _refused(lambda c=confidence: Calibration.fit(truth, truth, c, widen_past=False),
                 ConfigError, r"^confidence must be in \(0, 1\)", "confidence")
    _refused(lambda: Calibration.fit(truth, truth[:30], widen_past=False), DataError,
             "^truth and estimate must be two 1-D arrays of one length", "estimate")
    for sizes in ([-5, 2], [2.7], "abc"):
        _refused(lambda s=sizes: largest_size("random", s), ConfigError,
                 "^subtask_sizes must be a 1-D array of item counts", "subtask_sizes")


def test_matrices_designs_and_bins(gpqa_data):
    from mdad.metrics.pairs import bin_edges, gap_bins, pair_counts
    from mdad.study.design import draw_run, seen_pool_size, split_seen_unseen

    matrix = gpqa_data.matrix
    _refused(lambda: matrix.take(models=[5000]), DataError,
             r"^models must be indices in -420\.\.419 \(or a mask of 420\); got int64 of "
             r"shape \(1,\)", "models")
    _refused(lambda: matrix.scores([0], [448]), DataError,
             r"^items must be indices in -448\.\.447", "items")
    _refused(lambda: matrix.take(items=np.ones(3, bool)), DataError,
             "^items: a mask must have 448 entries", "items")
    for codes in ([-1, 0], [0.5, 1.0], [[0, 1]]):
        _refused(lambda c=codes: seen_pool_size(c), DataError,
                 "^subtask_codes must be codes >= 0, one per item", "subtask_codes")
        _refused(lambda c=codes: split_seen_unseen(c, rng=np.random.default_rng(0)),
                 DataError, "^subtask_codes must be codes >= 0, one per item", "subtask_codes")
    codes = np.zeros(10, int)
    _refused(lambda: draw_run(5, codes, seed=0, run=0, n_targets=6), ConfigError,
             r"^n_targets must be an integer in 0\.\.5; got 6", "n_targets")
    _refused(lambda: draw_run(5, codes, seed=0, run=0, n_targets=2, fixed_targets=[1, 1]),
             ConfigError, "^fixed_targets must be distinct model indices", "fixed_targets")
    _refused(lambda: gap_bins(np.array([np.nan])), DataError, "^gap must be a difference",
             "gap")
    _refused(lambda: bin_edges(-1), DataError, r"^bins must be whole bin indices", "bins")
    _refused(lambda: pair_counts(np.zeros((2, 3)), np.zeros((2, 4))), DataError,
             "^estimates and reference must be one", "reference")
    _refused(lambda: pair_counts(np.zeros((1, 3)), np.array([[0.1, np.nan, 0.2]])), DataError,
             "^reference accuracies must be fractions in \\[0, 1\\]", "reference")


def test_irt_curves_crossings_and_tasks():
    from mdad.irt import item_curve, map_ability
    from mdad.metrics.mdad import monotone_crossings
    from mdad.practice.bundle import lm_eval_tasks

    a, b = np.ones((4, 2)), np.zeros(4)
    _refused(lambda: item_curve(np.zeros((3, 2)), a, np.zeros(5)), DataError,
             r"^difficulty must be finite, of shape \(4,\)", "difficulty")
    _refused(lambda: item_curve(np.zeros((3, 3)), a, b), DataError,
             r"^ability must be finite, of shape \(n_models, 2\)", "ability")
    _refused(lambda: map_ability(np.ones((2, 4)), np.ones(4), b), DataError,
             r"^discrimination must be finite, of shape \(n_items, D\)", "discrimination")
    _refused(lambda: map_ability(np.ones((2, 4)), np.full((4, 2), np.nan), b), DataError,
             "^discrimination must be finite", "discrimination")
    pairs = np.array([[4, 4]])
    _refused(lambda: monotone_crossings(pairs, pairs, 2.0), ConfigError,
             r"^threshold must be in \(0, 1\)", "threshold")
    _refused(lambda: monotone_crossings(pairs, pairs + 1, 0.8), DataError,
             r"^agreeing must lie in 0\.\.pairs", "agreeing")
    _refused(lambda: monotone_crossings(pairs[0], pairs[0], 0.8), DataError,
             r"^pairs and agreeing must be one \(n_curves, n_bins\) shape", "pairs")
    for items in ("abc", [1, 2], ["no-slash"]):
        _refused(lambda i=items: lm_eval_tasks(i), ConfigError,
                 "^lm_eval_items must be a list of 'task/doc_id' names", "lm_eval_items")


def test_pair_structure_and_matrices():
    from mdad.data.matrix import ResponseMatrix
    from mdad.practice.planner import pair_structure

    ones = np.ones((3, 4))
    codes = np.zeros(4, int)
    _refused(lambda: pair_structure(np.full((3, 4), np.nan), codes), DataError,
             r"^correctness must be a non-empty 2-D \(models, items\) array of scores",
             "correctness")
    _refused(lambda: pair_structure(ones * 5, codes), DataError,
             "^correctness must be a non-empty 2-D", "correctness")
    _refused(lambda: pair_structure(ones, [0, 0]), DataError,
             "^subtask_codes must be 4 codes >= 0", "subtask_codes")
    _refused(lambda: pair_structure(ones, codes, (np.array([0]), np.array([7]))), DataError,
             r"^pairs must be two arrays of one shape of model indices in 0\.\.2", "pairs")
    _refused(lambda: ResponseMatrix(np.full((2, 2), "x"), ["a", "b"], ["i", "j"]),
             DataError, "correctness must hold numbers, not <U1", "correctness")


def test_an_irt_fit_of_nothing_is_refused():
    from mdad.irt import MultidimensionalIrt

    _refused(lambda: MultidimensionalIrt(2).fit(np.full((3, 4), np.nan)), DataError,
             r"^IRT fit: every response is missing \(NaN\)", "responses")



def test_a_cell_is_one_of_the_plans(gpqa_data):
    from mdad.study import StudyConfig, plan_study, run_cell

    plan = plan_study(gpqa_data.matrix, StudyConfig(methods=("random",), n_runs=2,
                                                    sizes=(10,), sources=(30,), n_targets=20))
    cell = {"run": 0, "method": "random", "size": 10, "n_sources": 30}
    for name, bad, message in (("run", 2, r"^run must be an integer in 0\.\.1; got 2"),
                               ("method", "diversity", "^method must be one of the plan's"),
                               ("size", 0, "^size must be one of the plan's: 10; got 0"),
                               ("n_sources", 1000, "^n_sources must be one of the plan's")):
        _refused(lambda n=name, b=bad: run_cell(gpqa_data.matrix, plan, **{**cell, n: b}),
                 ConfigError, message, name)
    assert run_cell(gpqa_data.matrix, plan, **cell).shape == (20,)


def test_meta_columns_name_columns_of_the_file(tmp_path):
    from mdad.data import read_results

    csv = tmp_path / "wide.csv"
    csv.write_text("item_id,m1,m2\nq1,1,0\nq2,0,1\n")
    _refused(lambda: read_results(csv, meta_columns=("zz",)), DataError,
             "meta_columns must name columns of the file; 'zz' is not one of", "meta_columns")
    _refused(lambda: read_results(csv, meta_columns="m1"), ConfigError,
             r"^meta_columns must be a list of column names, e\.g\. \['m1'\]", "meta_columns")


def test_an_unfitted_or_misfed_irt_model_says_so():
    from mdad.irt import MultidimensionalIrt

    model = MultidimensionalIrt(1)
    _refused(lambda: model.probability(np.zeros((1, 1))), ConfigError,
             "^this MultidimensionalIrt is not fitted; call fit", None)
    rng = np.random.default_rng(0)
    model.fit((rng.random((8, 6)) < 0.5).astype(float))
    _refused(lambda: model.estimate_ability(np.ones((1, 2)), np.array([0, 9])), DataError,
             r"^items must be indices of the fitted items, 0\.\.5", "items")
    _refused(lambda: model.log_likelihood(np.ones((3, 6))), DataError,
             r"^IRT log-likelihood: responses must be the training shape \(8, 6\)", "responses")


def test_tied_pairs_are_among_the_pairs():
    from mdad.metrics import first_crossing_mdad

    pairs = np.array([5, 5, 5])
    _refused(lambda: first_crossing_mdad(pairs, pairs, rng=np.random.default_rng(0),
                                         tied_pairs=16), DataError,
             r"^tied_pairs \(16\) must not exceed the pairs counted \(15\)", "tied_pairs")


def test_what_takes_a_matrix_or_a_file_refuses_anything_else(random_10):
    from mdad.data.info import describe
    from mdad.data.missing import resolve_missing
    from mdad.practice.bundle import with_reference

    for call in (lambda: describe(np.ones((2, 2))), lambda: resolve_missing(np.ones((2, 2)))):
        _refused(call, ConfigError, "^matrix must be a ResponseMatrix", "matrix")
    _refused(lambda: with_reference(random_10, None), ConfigError,  # type: ignore[arg-type]
             "^dataset must be a Dataset", "dataset")


def test_a_folder_given_as_a_csv_is_called_a_folder(tmp_path):
    from mdad.data.wide_csv import load_wide_csv

    _refused(lambda: load_wide_csv(tmp_path), DataError, "a folder, not a file; pass a CSV file",
             None)


def test_a_metric_other_than_the_datas_is_refused(gpqa_data):
    from mdad.practice.adaptive import start_adaptive_test
    from mdad.practice.bundle import select_microbenchmark

    assert gpqa_data.metric is not None
    for call in (lambda: select_microbenchmark(gpqa_data, "random", 5, metric="bogus"),
                 lambda: start_adaptive_test(gpqa_data, budget=5, metric="bogus")):
        _refused(call, ConfigError, f"^metric: gpqa was read with {gpqa_data.metric}, not "
                                    "'bogus'", "metric")
    same = select_microbenchmark(gpqa_data, "random", 5, metric=gpqa_data.metric)
    assert same.lm_eval_metric == gpqa_data.metric


def test_a_near_miss_name_gets_a_suggestion():
    from mdad.data import load_dataset
    from mdad.selection import method_class

    _refused(lambda: method_class("randon"), ConfigError,
             r"^unknown method 'randon' \(did you mean 'random'\?\); choose from: random",
             "method")
    _refused(lambda: load_dataset("gpq"), DataError,
             r"^'gpq' is neither a known dataset \(gpqa, .*\) nor an existing file or folder "
             r"\(did you mean 'gpqa'\?\)$", None)
    with pytest.raises(ConfigError) as info:  # nothing close: no guess
        method_class("bogus")
    assert "did you mean" not in str(info.value)


def test_the_cli_suggests_too(tmp_path):
    from helpers import mdad_cli

    for args, message in ((("run", "gpqa", "--methods", "randon"),
                           "unknown method 'randon' (did you mean 'random'?)"),
                          (("run", "gpq"), "(did you mean 'gpqa'?)")):
        proc = mdad_cli(*args, cwd=tmp_path)
        assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


def test_valid_inputs_still_pass(gpqa_data):
    # what the checks must let through (a review found the first versions refused some)
    from mdad.data.matrix import ResponseMatrix
    from mdad.practice.bundle import select_microbenchmark
    from mdad.selection import MethodDefaults, MicroBenchmark
    from mdad.selection.base import SeenPool

    matrix = ResponseMatrix(np.array([[1, None, 0], [0, 1, 1]], dtype=object),
                            ["a", "b"], ["i", "j", "k"])
    assert np.isnan(matrix.correctness[0, 1])
    big = gpqa_data.matrix
    assert big.scores(None, []).shape == (420, 0)
    assert big.take(models=[-1]).model_names[0] == big.model_names[-1]
    assert big.take(models=np.arange(420) < 3).n_models == 3
    ids = [str(i) for i in big.item_ids[:40]]
    import pandas as pd

    for pool in (pd.Series(ids), set(ids)):
        assert select_microbenchmark(gpqa_data, "random", np.int64(5), pool=pool).size == 5

    class Mine(MethodDefaults):  # a plugin's select is checked as a built-in's is
        def select(self, pool, size, *, rng):
            return MicroBenchmark(np.arange(size))

    ones = np.ones((3, 6))
    pool = SeenPool(ones.tolist(), ones, [0, 0, 0, 1, 1, 1])  # lists become arrays
    assert isinstance(pool.correctness, np.ndarray)
    assert Mine().select(pool, np.int64(4), rng=np.random.default_rng(0)).items.size == 4
    _refused(lambda: Mine().select(pool, 7, rng=np.random.default_rng(0)), ConfigError,
             r"^size must be a whole number in 1\.\.6", "size")



def test_the_analytic_planner_and_default_sizes(gpqa_data):
    from mdad.practice.planner import analytic_mdad, pair_structure, size_for_gap
    from mdad.study import StudyConfig, plan_study

    matrix = gpqa_data.matrix
    structure = pair_structure(matrix.correctness[:30], matrix.subtask_codes)
    for size in (0, -5, 2.5, 10**6):
        _refused(lambda n=size: analytic_mdad(structure, n), ConfigError, "^size must be an "
                 "integer", "size")
    for threshold in (2, 0, float("nan")):
        _refused(lambda t=threshold: analytic_mdad(structure, 10, threshold=t), ConfigError,
                 r"^threshold must be in \(0, 1\)", "threshold")
    _refused(lambda: size_for_gap(structure, 0.05, max_size=-1), ConfigError,
             "^max_size must be an integer", "max_size")
    assert analytic_mdad(structure, 100).pairs > 0  # and a valid call still answers
    _refused(lambda: plan_study(matrix, StudyConfig(methods=("random",)), default_sizes=(0, 5)),
             ConfigError, "^default_sizes must be an integer >= 1; got 0", "default_sizes")


def test_load_choices_and_gap_pairs_name_their_parameter():
    from mdad.data.choices import MissingPolicy, Orientation
    from mdad.metrics.pairs import agreement

    assert MissingPolicy("drop-items") is MissingPolicy.DROP_ITEMS
    assert Orientation("auto") is Orientation.AUTO
    _refused(lambda: MissingPolicy("drop-item"), ConfigError,
             r"^missing must be one of drop-items, drop-models, error; got 'drop-item' "
             r"\(did you mean 'drop-items'\?\)$", "missing")
    _refused(lambda: Orientation(3), ConfigError,
             r"^orientation must be one of auto, items-as-rows, models-as-rows; got 3$",
             "orientation")
    # broadcasting a (3,) against a (3, 1) would pair every gap with every other
    _refused(lambda: agreement(np.zeros(3), np.zeros((3, 1))), DataError,
             r"^estimated_gap and reference_gap must have one shape.*\(3,\) and \(3, 1\)",
             "reference_gap")
    assert agreement(np.array([0.1, -0.2, 0.0]), np.array([0.3, 0.1, 0.2])).tolist() == [
        True, False, False]
    # no estimate, no agreement (a review found NaN and None counted as agreeing)
    assert agreement(np.array([np.nan, 0.1]), np.array([0.1, np.nan])).tolist() == [False,
                                                                                  False]
    assert not agreement(None, None)


def test_the_subpackages_exports_name_their_parameter(gpqa_data):
    """Probes of the names in the subpackages' `__all__` (an audit's findings)."""
    from mdad import streams
    from mdad.irt import MultidimensionalIrt, item_curve, map_ability
    from mdad.metrics import MdadEstimator, gap_bins, pair_counts
    from mdad.practice import Calibration, analytic_mdad, pair_structure, round_trip
    from mdad.practice.planner import mdad_curve
    from mdad.selection import MicroBenchmark, SeenPool, fast_methods, method_class

    y = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    a, b = np.ones((3, 1)), np.zeros(3)
    for state in (-1, 1.5, "x"):
        _refused(lambda s=state: MultidimensionalIrt(1, random_state=s).fit(y), ConfigError,
                 "^random_state must be", "random_state")
    for max_iter in (0, 2.5, None):
        _refused(lambda m=max_iter: map_ability(y, a, b, max_iter=m), ConfigError,
                 "^max_iter must be", "max_iter")
    _refused(lambda: map_ability(np.full((2, 3), "x"), a, b), DataError,
             "^responses must be numbers; got ndarray", "responses")
    _refused(lambda: item_curve("x", a, b), DataError, "^ability must be numbers", "ability")
    _refused(lambda: gap_bins("x"), DataError, "^gap must be numbers", "gap")
    _refused(lambda: pair_counts(np.zeros((1, 3)), np.array([[0.0, 5.0, 10.0]])), DataError,
             r"^reference accuracies must be fractions in \[0, 1\]", "reference")
    _refused(lambda: MdadEstimator("first_crossing"), ConfigError,
             "^estimator must be one of first-crossing, smooth; got 'first_crossing' "
             r"\(did you mean 'first-crossing'\?\)", "estimator")

    truth = np.linspace(0.2, 0.6, 40)
    _refused(lambda: Calibration.fit(np.r_[truth[:39], np.inf], truth, widen_past=False),
             DataError, r"^truth must be accuracies in \[0, 1\]", "truth")
    _refused(lambda: Calibration.fit(truth, np.r_[truth[:39], np.inf], widen_past=False),
             DataError, "^estimate must be finite", "estimate")
    _refused(lambda: Calibration.fit(truth[:5], truth[:5], widen_past=False), DataError,
             "^5 held-out models cannot calibrate", "truth")
    belt = Calibration.fit(truth, truth + 0.01 * np.sin(40 * truth), widen_past=False)
    _refused(lambda: belt.interval(np.nan), DataError, "^estimate must be finite", "estimate")
    for scale in (0, -1, float("nan"), True):
        _refused(lambda s=scale: belt.interval(0.4, scale=s), ConfigError,
                 "^scale must be a finite number > 0", "scale")
    _refused(lambda: Calibration.from_list([1, 2], widen_past=False), DataError,
             "^values must be the 19 numbers", "values")

    matrix = gpqa_data.matrix
    structure = pair_structure(matrix.scores()[:30], matrix.subtask_codes)
    _refused(lambda: analytic_mdad(matrix, 5), ConfigError,  # type: ignore[arg-type]
             "^structure must be a PairStructure", "structure")
    _refused(lambda: analytic_mdad(structure, 5, stratified="no"),  # type: ignore[arg-type]
             ConfigError, "^stratified must be True or False", "stratified")
    _refused(lambda: mdad_curve(structure, [2.7]), ConfigError, "^size must be", "size")
    for pairs in (5, (np.array([0.5]), np.array([1])), (np.array([0]),)):
        _refused(lambda p=pairs: pair_structure(matrix.scores()[:5], matrix.subtask_codes, p),
                 DataError, "^pairs must be", "pairs")
    _refused(lambda: pair_structure(np.ones((3, 0)), np.zeros(0, int)), DataError,
             "^correctness must be a non-empty", "correctness")

    _refused(lambda: round_trip("gpqa", "random", [10]), ConfigError,  # type: ignore
             "^dataset must be a Dataset", "dataset")
    _refused(lambda: round_trip(gpqa_data, "random", []), ConfigError,
             "^sizes must be a non-empty list", "sizes")
    _refused(lambda: round_trip(gpqa_data, "random", [10], seeds=None),  # type: ignore
             ConfigError, "^seeds must be a non-empty list", "seeds")
    _refused(lambda: round_trip(gpqa_data, "random", [10], seeds=np.array(3)), ConfigError,
             "^seeds must be a non-empty list of whole numbers", "seeds")
    pairs = np.array([[0, 1], [2, 3]])  # (2, n_pairs), as np.triu_indices stacks
    assert np.array_equal(pair_structure(matrix.scores()[:5], matrix.subtask_codes, pairs).gap,
                          pair_structure(matrix.scores()[:5], matrix.subtask_codes,
                                         tuple(pairs)).gap)
    _refused(lambda: round_trip(gpqa_data, "random", [10], progress=5),  # type: ignore
             ConfigError, "^progress must be a function", "progress")

    for items in (np.array([9, 9]), np.array([0.5]), np.array([], dtype=int), "abc",
                  np.array([-1])):
        _refused(lambda i=items: MicroBenchmark(i), DataError, "^items must be a non-empty",
                 "items")
    _refused(lambda: MicroBenchmark.plain_mean([0.5]), DataError, "^items must be", "items")
    _refused(lambda: MicroBenchmark(np.array([0, 1]), np.ones(3)), DataError,
             "^weights must be 2 finite numbers", "weights")
    _refused(lambda: MicroBenchmark(np.array([0, 3])).estimate(np.ones((3, 3))), DataError,
             "^scores must be a 2-D .* at least 4 items", "scores")
    codes = np.zeros(4, dtype=int)
    _refused(lambda: SeenPool(np.full((2, 4), "x"), np.zeros((2, 4)), codes), DataError,
             "^SeenPool: correctness must be scores", "correctness")
    _refused(lambda: SeenPool(np.ones((0, 4)), np.ones((0, 4)), codes), DataError,
             "^SeenPool: correctness must hold at least one source", "correctness")
    _refused(lambda: SeenPool(np.ones((2, 4)), np.ones((2, 4)), codes, seed="5"),  # type: ignore
             ConfigError, "^seed must be an integer >= 0 or a numpy SeedSequence", "seed")
    assert SeenPool(np.ones((2, 4)), np.ones((2, 4)), codes, seed=5).seed.entropy == (
        streams.stream(5).entropy)  # an int, as streams take it
    assert MicroBenchmark(np.array([1.0, 3.0])).items.dtype == np.int64  # whole numbers
    _refused(lambda: method_class(["random"]), ConfigError,  # type: ignore[arg-type]
             "^method must be a method name", "method")
    _refused(lambda: fast_methods(None), ConfigError,  # type: ignore[arg-type]
             "^names must be a tuple", "names")


def test_a_methods_invalid_micro_benchmark_names_the_method_not_an_option():
    """A review found a plugin's bad item indices reported as `--items must be ...`,
    an option of `mdad data answers` the user never gave."""
    from mdad import streams
    from mdad.selection import MethodDefaults, MicroBenchmark, SeenPool

    class Broken(MethodDefaults):
        name = "broken"

        def select(self, pool, size, *, rng):
            return MicroBenchmark(np.array([0.5]))

    pool = SeenPool(np.ones((2, 4)), np.ones((2, 4)), np.zeros(4, dtype=int))
    with pytest.raises(DataError, match=r"^method broken built an invalid micro-benchmark: "
                                        r"items must be") as info:
        Broken().select(pool, 1, rng=streams.rng(0))
    assert info.value.parameters == ()
