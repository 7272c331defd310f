"""Synthetic leaderboards: the real benchmarks' shapes, coherent confidences, seeds, and
synthetic GPQA against the real one (accuracy spread and random-sampling MDAD)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import GPQA_CSV, MMLU_PRO_CSV, shared_data

from mdad.data import load_dataset, read_results
from mdad.data.synthetic import synthetic_matrix
from mdad.data.synthetic_loader import NamedRealData
from mdad.errors import ConfigError
from mdad.study import StudyConfig, evaluate, plan_study, run_study

SIZES = (10, 25, 50, 100, 200)


@pytest.mark.parametrize(("shape", "n_items", "n_subtasks"),
                         [("gpqa", 448, 1), ("bbh", 5761, 24), ("mmlu", 14042, 57),
                          pytest.param("mmlu-pro", 12032, 14, marks=pytest.mark.slow)])
def test_shapes_follow_the_real_benchmarks(shape, n_items, n_subtasks):
    shared_data(GPQA_CSV)
    shared_data(MMLU_PRO_CSV)
    matrix = read_results(f"synthetic:{shape}", n_models=12, data_seed=1)
    assert matrix.n_items == n_items and matrix.n_models == 12
    assert len(matrix.subtask_names) == n_subtasks
    sizes = dict(zip(*np.unique(matrix.subtasks, return_counts=True), strict=True))
    if shape == "bbh":
        assert sizes["bbh_causal_judgement"] == 187 and sizes["bbh_snarks"] == 178
        assert sizes["bbh_penguins_in_a_table"] == 146 and sizes["bbh_navigate"] == 250
    if shape == "mmlu-pro":
        real = load_dataset("mmlu-pro-29", missing="drop-models").matrix
        assert sizes == dict(zip(*np.unique(real.subtasks, return_counts=True), strict=True))
    assert matrix.correctness.dtype == np.uint8 and matrix.confidence.dtype == np.float32
    # right exactly when the gold-option confidence is above one half
    assert np.array_equal(matrix.correctness == 1, matrix.confidence > 0.5)


def test_same_seed_same_leaderboard_other_seed_other():
    shared_data(GPQA_CSV)
    first = load_dataset("synthetic:gpqa", n_models=50, data_seed=3).matrix
    again = load_dataset("synthetic:gpqa", n_models=50, data_seed=3).matrix
    other = load_dataset("synthetic:gpqa", n_models=50, data_seed=4).matrix
    assert np.array_equal(first.correctness, again.correctness)
    assert np.array_equal(first.confidence, again.confidence)
    assert not np.array_equal(first.correctness, other.correctness)


def test_model_count_limits_seed_and_unknown_shape():
    with pytest.raises(ConfigError, match=r"^n_models must be between 2 and 5000; got 5001$"
                       ) as info:
        load_dataset("synthetic:gpqa", n_models=5001)
    assert info.value.parameters == ("n_models",)
    with pytest.raises(ConfigError, match=r"^data_seed must be an integer >= 0; got -1$"
                       ) as info:
        load_dataset("synthetic:gpqa", data_seed=-1)
    assert info.value.parameters == ("data_seed",)
    with pytest.raises(ConfigError, match=r"unknown synthetic dataset synthetic:helm; "
                                          r"choose from: synthetic:gpqa"):
        load_dataset("synthetic:helm")


def test_the_pure_module_calibrates_on_the_real_data_it_is_given():
    """`synthetic_matrix` reads nothing itself: the loader's `NamedRealData` hands it the
    named datasets, as the registry reads them."""
    shared_data(GPQA_CSV)
    given = []

    def read_named(name):
        given.append(name)
        return load_dataset(name).matrix

    direct = synthetic_matrix("mmlu", NamedRealData(read_named), n_models=20, data_seed=5)
    loaded = load_dataset("synthetic:mmlu", n_models=20, data_seed=5)
    assert np.array_equal(direct.correctness, loaded.matrix.correctness)
    assert np.array_equal(direct.confidence, loaded.matrix.confidence)
    assert given in ([], ["gpqa"])  # [] when this process calibrated on GPQA before
    assert (loaded.name, str(loaded.path), loaded.spec.sizes) == ("synthetic:mmlu",
                                                                  "synthetic:mmlu", None)
    assert load_dataset("synthetic:gpqa", n_models=2).spec.sizes == (10, 25, 50, 100, 200)


def test_synthetic_gpqa_matches_the_real_one_within_study_noise():
    """Four seeds of `mdad run --methods random` on each; a synthetic value passes when
    it lies within 3 standard deviations of the difference of the two seed means (the
    spread measured over the eight seeds) plus one 0.005 bin."""
    shared_data(GPQA_CSV)
    real = load_dataset("gpqa").matrix
    synthetic = load_dataset("synthetic:gpqa").matrix
    assert synthetic.n_models == real.n_models == 420
    real_accuracy, synthetic_accuracy = real.accuracy(), synthetic.accuracy()
    assert abs(synthetic_accuracy.mean() - real_accuracy.mean()) < 0.01
    assert abs(synthetic_accuracy.std() / real_accuracy.std() - 1) < 0.15
    mdad = {}
    for name, matrix in (("real", real), ("synthetic", synthetic)):
        values = []
        for seed in range(4):
            plan = plan_study(matrix, StudyConfig(methods=("random",), sizes=SIZES, seed=seed,
                                                  n_resamples=1))
            table = evaluate(run_study(matrix, plan)).mdad
            values.append(table[table.split == "seen"].mdad.to_numpy())
        mdad[name] = np.array(values)
    for k, size in enumerate(SIZES):
        both = np.concatenate([mdad["real"][:, k], mdad["synthetic"][:, k]])
        spread = both.std(ddof=1) * np.sqrt(2 / 4)
        gap = abs(mdad["real"][:, k].mean() - mdad["synthetic"][:, k].mean())
        assert gap <= 3 * spread + 0.005, (size, mdad["real"][:, k], mdad["synthetic"][:, k])
