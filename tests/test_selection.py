"""The contract every registered selection method keeps, and each random method's law."""

from __future__ import annotations

import inspect
from collections import Counter

import numpy as np
import pytest
import reference_impl as ref
from hypothesis import given, settings
from hypothesis import strategies as st

from mdad.errors import ConfigError
from mdad.selection import METHODS, MicroBenchmark, SeenPool, get_method


def make_pool(subtask_sizes: list[int], n_sources: int = 20, seed: int = 0) -> SeenPool:
    rng = np.random.default_rng(seed)
    codes = np.repeat(np.arange(len(subtask_sizes)), subtask_sizes)
    correctness = (rng.random((n_sources, codes.size)) < 0.4).astype(np.float32)
    return SeenPool(correctness, correctness, codes)


@pytest.mark.parametrize("name", sorted(METHODS))
class TestContract:
    def test_constructor_only_stores_its_parameters(self, name):
        # scikit-learn's rule: __init__ keeps what it is given, as given, and computes
        # nothing; the work waits for select (and its pool)
        cls = METHODS[name]
        parameters = {k: p.default for k, p in inspect.signature(cls.__init__).parameters.items()
                      if k != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        assert all(default is not inspect.Parameter.empty for default in parameters.values())
        method = cls()
        assert vars(method) == parameters
        if parameters:  # and keeps a value it is given, unchanged
            name, default = next(iter(parameters.items()))
            other = default + 1 if isinstance(default, int) else default
            assert vars(cls(**{name: other})) == {**parameters, name: other}

    def test_same_rng_same_subset_and_exactly_n_distinct_items(self, name):
        pool = make_pool([30, 12, 25])
        method = get_method(name)
        for size in (1, 5, 17, method.max_size(pool)):
            first = method.select(pool, size, rng=np.random.default_rng(7))
            again = method.select(pool, size, rng=np.random.default_rng(7))
            assert np.array_equal(first.items, again.items)
            assert first.items.min() >= 0 and first.items.max() < pool.n_items
            if method.static:
                assert first.items.size == size == np.unique(first.items).size
                continue
            # an adaptive test: each model answers `size` distinct items of the pool
            targets = (np.random.default_rng(3).random((6, pool.n_items)) < 0.5)
            estimates, exposure = first.estimate_with_exposure(targets.astype(float))
            assert np.array_equal(estimates, again.estimate(targets.astype(float)))
            assert first.length == size and size <= exposure.distinct_items <= pool.n_items


@given(confidence=st.lists(st.floats(0, 1), min_size=3, max_size=60),
       share=st.floats(0.01, 1.0), seed=st.integers(0, 2**32 - 1))
@settings(max_examples=60, deadline=None)
def test_every_method_s_weights_are_fractions(confidence, share, seed):
    """The micro-benchmark file refuses weights outside [0, 1] as edits, so none that
    a method writes may lie there: Horvitz-Thompson weights 1 / (p N) have p N >= 1
    (a stratum's share of its items times the pool), cluster shares sum to 1."""
    values = np.tile(np.asarray(confidence, dtype=np.float32), (4, 1))
    pool = SeenPool(values, values, np.zeros(values.shape[1], dtype=np.int64))
    size = max(1, round(share * pool.n_items))
    for name in ("confidence-strata", "anchor-points"):
        weights = get_method(name).select(pool, size, rng=np.random.default_rng(seed)).weights
        assert weights is not None and ((weights >= 0) & (weights <= 1)).all() and weights.any()


def test_unknown_method_lists_the_known_ones():
    with pytest.raises(ConfigError, match=r"unknown method 'bogus'; choose from: random, "):
        get_method("bogus")


def test_plain_mean_ties_stay_exact():
    scores = np.zeros((2, 300))
    scores[0, :7] = 1
    scores[1, 100:107] = 1
    micro = MicroBenchmark.plain_mean(np.arange(0, 300, 1))
    est = micro.estimate(scores)
    assert est[0] - est[1] == 0.0 and est[0] == 7 / 300


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 30), min_size=1, max_size=8), st.data())
def test_subtask_equal_allocation(sizes, data):
    pool = make_pool(sizes)
    method = get_method("subtask-equal")
    size = data.draw(st.integers(1, method.max_size(pool)))
    chosen = method.select(pool, size, rng=np.random.default_rng(data.draw(st.integers(0, 99))))
    per_subtask = np.bincount(pool.subtask_codes[chosen.items], minlength=len(sizes))
    k = len(sizes)
    assert per_subtask.sum() == size
    assert set(per_subtask.tolist()) <= {size // k, size // k + 1}
    assert (per_subtask == size // k + 1).sum() == size % k


def test_subtask_equal_remainder_goes_to_random_subtasks():
    pool = make_pool([20, 20, 20])
    method = get_method("subtask-equal")
    extra = Counter()
    for seed in range(600):
        chosen = method.select(pool, 4, rng=np.random.default_rng(seed))
        counts = np.bincount(pool.subtask_codes[chosen.items], minlength=3)
        extra[int(np.argmax(counts))] += 1
    assert all(170 < extra[s] < 230 for s in range(3))  # 200 each, sd ~12


def test_subtask_proportional_gives_each_subtask_an_equal_first_draw():
    sizes = [60, 10, 30]
    pool = make_pool(sizes)
    probabilities = ref.subtask_proportional_probabilities(pool.subtask_codes.tolist())
    method = get_method("subtask-proportional")
    picks = np.array([method.select(pool, 1, rng=np.random.default_rng(s)).items[0]
                      for s in range(3000)])
    share = np.bincount(pool.subtask_codes[picks], minlength=3) / picks.size
    assert share == pytest.approx([1 / 3] * 3, abs=0.03)  # binomial sd 0.009
    assert np.bincount(pool.subtask_codes, weights=probabilities) == pytest.approx([1 / 3] * 3)


def test_uniform_inclusion_probability_is_n_over_pool():
    pool = make_pool([50])
    method = get_method("random")
    hits = np.zeros(50)
    for seed in range(2000):
        hits[method.select(pool, 10, rng=np.random.default_rng(seed)).items] += 1
    assert hits / 2000 == pytest.approx(np.full(50, 0.2), abs=0.04)  # sd 0.009


# --------------------------------------------------------------------------- the classes

# The Okabe-Ito look the report used before the classes carried it: unchanged.
OKABE_ITO = {
    "random": ("#000000", "-"), "subtask-equal": ("#999999", "-"),
    "subtask-proportional": ("#999999", "--"), "diversity": ("#CC79A7", "-"),
    "confidence-strata": ("#E69F00", "-"), "anchor-points": ("#0072B2", "-"),
    "anchor-points-predictor": ("#0072B2", "--"), "tinybenchmarks": ("#D55E00", "-"),
    "tinybenchmarks-pirt": ("#009E73", "-"), "tinybenchmarks-gpirt": ("#56B4E9", "-"),
}


def test_each_method_class_carries_its_look_and_facts():
    from mdad.selection import method_class, paper_methods

    assert {name: (cls.colour, cls.line_style) for name, cls in METHODS.items()
            if name in OKABE_ITO} == OKABE_ITO
    # every method looks different in a figure
    looks = [(cls.colour, cls.line_style) for cls in METHODS.values()]
    assert len(set(looks)) == len(looks)
    assert paper_methods() == ("random", "subtask-equal", "diversity", "confidence-strata",
                               "anchor-points", "tinybenchmarks")
    assert {n: c.analytic_mdad for n, c in METHODS.items() if c.analytic_mdad} == {
        "random": "uniform", "subtask-equal": "stratified"}
    assert method_class("anchor-points").label() == "Anchor Points (anchor-points)"
    with pytest.raises(ConfigError, match="unknown method 'nope'"):
        method_class("nope")


@pytest.mark.parametrize("name", sorted(METHODS))
def test_largest_size_by_name_equals_the_pool_answer(name):
    from mdad.selection import largest_size

    for sizes in ([30, 12, 25], [1, 1], [7]):
        pool = make_pool(sizes)
        assert largest_size(name, np.array(sizes)) == get_method(name).max_size(pool)
    assert largest_size("subtask-equal", [30, 12, 25]) == 36
    assert largest_size("anchor-points-predictor", [30, 12, 25]) == 66
    assert largest_size("tinybenchmarks", [1]) == 0


def _scores(n_models: int, n_items: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random((n_models, n_items))


@pytest.mark.parametrize(("name", "kind"), [("random", "linear"),
                                            ("confidence-strata", "linear"),
                                            ("anchor-points-predictor", "predictor"),
                                            ("tinybenchmarks", "linear"),
                                            ("tinybenchmarks-gpirt", "irt")])
def test_estimators_round_trip_through_the_file_format(name, kind):
    """What `select` saves, loaded back over the file's items, estimates exactly as the
    fitted micro-benchmark does; the JSON is plain (json.dumps works)."""
    import json

    cls = METHODS[name]
    pool = make_pool([20, 15, 25], n_sources=12)
    micro = cls().select(pool, 9, rng=np.random.default_rng(2))
    saved = json.loads(json.dumps(cls.save_estimator(micro)))
    assert saved["kind"] == kind
    loaded = cls.load_estimator(saved, 9)
    scores = _scores(5, pool.n_items)
    np.testing.assert_allclose(loaded.estimate(scores[:, micro.items]), micro.estimate(scores),
                               rtol=0, atol=1e-12)


def test_linear_and_predictor_json_keep_the_format_2_layout():
    from mdad.selection.anchor_points import AnchorPredictorBenchmark

    micro = MicroBenchmark(np.array([3, 1]), np.array([0.25, 0.75]), uses_confidence=True)
    assert METHODS["anchor-points"].save_estimator(micro) == {
        "kind": "linear", "weights": [0.25, 0.75], "confidence": True}
    predictor = AnchorPredictorBenchmark(np.array([4]), uses_confidence=True,
                                         nearest=np.array([0, 0]), slope=np.array([1.0, 2.0]),
                                         intercept=np.array([0.5, -0.5]))
    assert list(METHODS["anchor-points-predictor"].save_estimator(predictor).items()) == [
        ("kind", "predictor"), ("nearest", [0, 0]), ("slope", [1.0, 2.0]),
        ("intercept", [0.5, -0.5])]


def test_an_estimator_the_method_does_not_know_is_refused_not_saved_as_linear():
    from dataclasses import dataclass

    from mdad.errors import DataError

    @dataclass(frozen=True, eq=False)
    class Doubled(MicroBenchmark):
        def estimate(self, scores):
            return 2 * super().estimate(scores)

    with pytest.raises(ConfigError, match=r"method random returned a Doubled, which it "
                                          r"cannot save"):
        METHODS["random"].save_estimator(Doubled(np.array([0, 1])))
    with pytest.raises(DataError, match=r"unknown estimator kind 'quantum' for method random"):
        METHODS["random"].load_estimator({"kind": "quantum"}, 3)
    with pytest.raises(DataError, match=r"the predictor estimator cannot be read"):
        METHODS["anchor-points-predictor"].load_estimator({"kind": "predictor"}, 3)


def test_a_method_class_must_carry_what_the_project_reads():
    from mdad.selection import MethodDefaults
    from mdad.selection.registry import MethodRegistry

    registry = MethodRegistry()

    class NoSelect(MethodDefaults):
        pass

    class Forgetful(MicroBenchmark):  # a kind of its own, but the parent's file format
        kind = "forgetful"

    class LosesItsEstimator(MethodDefaults):
        estimators = (Forgetful,)

        def select(self, pool, size, *, rng):
            return Forgetful(np.arange(size))

    with pytest.raises(ConfigError, match="must define select"):
        registry.add("no-select", NoSelect)
    with pytest.raises(ConfigError, match="Forgetful must define its own kind, to_file"):
        registry.add("forgetful", LosesItsEstimator)
    with pytest.raises(ConfigError, match="must subclass"):
        registry.add("plain", object)
