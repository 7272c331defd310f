"""FasterPAM compiled (mdad.selection._fasterpam) against the `kmedoids` library it
replaces: the same medoids, loss, passes and swaps from the same start and order of
candidates; the same distribution of results in a shuffled order; and Python's lock
free while it runs (Ctrl-C is answered)."""

from __future__ import annotations

import threading
import time

import kmedoids
import numpy as np
import pytest
from helpers import GPQA_CSV, shared_data
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import ks_2samp

from mdad.selection import _fasterpam
from mdad.selection._fasterpam import fasterpam


def _library(distance: np.ndarray, start: np.ndarray, max_passes: int = 100):
    """The library's FasterPAM from `start`, candidates in index order."""
    return kmedoids.fasterpam(distance, start.astype(np.uintp), max_iter=max_passes, n_cpu=1)


def _distance(seed: int, n: int, symmetric: bool, ties: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 4, (n, n)).astype(float) if ties else rng.random((n, n))
    if symmetric:
        values = values + values.T
    np.fill_diagonal(values, 0.0)
    return values


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**20), st.integers(2, 40), st.integers(1, 8), st.booleans(),
       st.booleans(), st.integers(1, 4))
def test_the_library_s_result_from_the_same_start(seed, n, k, symmetric, ties, passes):
    """Ties (integer distances) test the first-of-equals rules; an asymmetric matrix, that
    d(o, j) is read where the library reads it."""
    k = min(k, n)
    distance = _distance(seed, n, symmetric, ties)
    start = np.random.RandomState(seed).choice(n, k, replace=False)
    expected = _library(distance, start, passes)
    medoids, loss, used, swaps = fasterpam(distance, start, max_passes=passes)
    assert medoids.tolist() == [int(m) for m in expected.medoids]
    assert loss == expected.loss
    assert (used, swaps) == (expected.n_iter, expected.n_swap)


@given(st.integers(1, 150), st.integers(0, 2**16), st.booleans())
def test_symmetric_finds_any_asymmetric_pair(n, seed, asymmetric):
    distance = _distance(seed, n, True, False)
    if asymmetric and n > 1:
        i, j = np.random.default_rng(seed).choice(n, 2, replace=False)
        distance[i, j] += 1e-12
    assert _fasterpam.symmetric(distance) == (not asymmetric or n == 1)
    assert np.array_equal(_fasterpam.columns_of(distance), distance.T)


def test_slices_of_a_pass_change_nothing(monkeypatch):
    """A pass is cut into compiled calls of a few candidates: the last swap's position
    is met in a later call than the one that made it."""
    distance = _distance(3, 60, True, False)
    start = np.arange(6)
    whole = fasterpam(distance, start)
    monkeypatch.setattr(_fasterpam, "_CELLS_PER_CALL", 7 * 60)  # 7 candidates a call
    sliced = fasterpam(distance, start)
    assert np.array_equal(whole[0], sliced[0]) and whole[1:] == sliced[1:]
    assert whole[3] > 1  # swaps were made, so the slices mattered


def test_bad_input_is_refused_before_the_unchecked_kernels():
    distance = _distance(0, 5, True, False)
    for medoids in ([], [0, 0], [5], [-1]):
        with pytest.raises(ValueError, match="medoids"):
            fasterpam(distance, np.array(medoids, dtype=np.int64))
    with pytest.raises(ValueError, match="square"):
        fasterpam(distance[:4], np.array([0]))
    with pytest.raises(ValueError, match="permutation"):
        fasterpam(distance, np.array([0, 1]), order=np.array([0, 1, 2, 3, 3]))
    with pytest.raises(ValueError, match="columns"):
        fasterpam(distance, np.array([0, 1]), columns=distance[:4])


def test_by_hand_one_swap_moves_a_medoid_into_the_far_group():
    # two groups on a line, 0 1 2 and 10 11: from medoids 0 and 1 the best is 1 and 10
    points = np.array([0.0, 1.0, 2.0, 10.0, 11.0])
    distance = np.abs(points[:, None] - points[None, :])
    medoids, loss, _, swaps = fasterpam(distance, np.array([0, 1]))
    assert sorted(medoids.tolist()) == [1, 3] and loss == pytest.approx(3.0) and swaps == 2
    # one medoid: the middle point of all five (sums 24, 21, 20, 44, 49)
    medoids, loss, _, _ = fasterpam(distance, np.array([4]))
    assert medoids.tolist() == [2] and loss == 20.0


def test_gpqa_s_distance_matrix_as_the_library_at_every_size():
    from mdad.data import load_dataset
    from mdad.selection.anchor_points import item_correlation

    shared_data(GPQA_CSV)
    distance = 1.0 - item_correlation(load_dataset("gpqa").matrix.gold_confidence())
    for size in (1, 10, 50, 200):
        start = np.random.RandomState(size).choice(distance.shape[0], size, replace=False)
        expected = _library(distance, start)
        medoids, loss, _, _ = fasterpam(distance, start)
        assert medoids.tolist() == [int(m) for m in expected.medoids] and loss == expected.loss


def test_a_shuffled_order_gives_the_library_s_distribution_of_losses():
    """The library shuffles its candidates with Rust's generator, Anchor Points'
    `_medoids` with numpy's: both are uniform permutations, so the losses reached from
    random starts share one distribution (300 seeds each; a two-sample KS test and the
    means)."""
    from mdad.selection.anchor_points import _medoids

    distance = _distance(5, 150, True, False)
    ours, theirs = [], []
    for seed in range(300):
        medoids = _medoids(distance, 8, np.random.default_rng(seed))
        ours.append(distance[medoids].min(axis=0).sum())
        theirs.append(kmedoids.fasterpam(distance, 8, init="random", random_state=seed,
                                         n_cpu=1).loss)
    ours, theirs = np.array(ours), np.array(theirs)
    assert ks_2samp(ours, theirs).pvalue > 1e-3
    spread = np.sqrt(ours.var(ddof=1) / ours.size + theirs.var(ddof=1) / theirs.size)
    assert abs(ours.mean() - theirs.mean()) < 4 * spread
    assert len(set(ours.round(9))) > 5  # the starts and orders did vary


def test_python_s_lock_is_free_while_it_runs():
    """While FasterPAM works on 3,000 items in a thread, this thread keeps running:
    the library held the lock for the whole call (0.9 s here), Ctrl-C included."""
    distance = _distance(1, 3000, True, False)
    fasterpam(distance[:50, :50], np.arange(3))  # compiled or loaded beforehand
    done = threading.Event()
    worker = threading.Thread(target=lambda: (fasterpam(distance, np.arange(200)),
                                               done.set()))
    gaps, last = [], time.monotonic()
    worker.start()
    while not done.is_set():
        time.sleep(0.005)
        now = time.monotonic()
        gaps.append(now - last)
        last = now
    worker.join()
    assert len(gaps) > 20 and max(gaps) < 0.3, f"{len(gaps)} ticks, longest {max(gaps):.2f} s"


def test_listing_or_planning_methods_loads_no_numba():
    """Anchor Points imports its compiled FasterPAM only to select: `mdad methods` and
    `mdad plan` stay free of numba's import (0.2 s, and memory a low limit lacks)."""
    import subprocess
    import sys

    code = ("import sys, mdad.selection, mdad.practice.sizing\n"
            "print('numba' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.strip() == "False", done.stderr
