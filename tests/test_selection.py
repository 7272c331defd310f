"""The contract every registered selection method keeps, and each random method's law."""

from __future__ import annotations

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
    def test_constructor_computes_nothing(self, name):
        method = METHODS[name]()
        assert not [k for k in vars(method) if k.endswith("_")]

    def test_same_rng_same_subset_and_exactly_n_distinct_items(self, name):
        pool = make_pool([30, 12, 25])
        method = get_method(name)
        for size in (1, 5, 17, method.max_size(pool)):
            first = method.select(pool, size, rng=np.random.default_rng(7))
            again = method.select(pool, size, rng=np.random.default_rng(7))
            assert np.array_equal(first.items, again.items)
            assert first.items.size == size == np.unique(first.items).size
            assert first.items.min() >= 0 and first.items.max() < pool.n_items


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
