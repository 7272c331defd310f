"""Throughput of the metrics stage: pair counts by |gap| bin plus the bootstrap MDAD,
for 50 runs x 4,000 targets at one size (400 million pairs); the issue asks for
under 10 seconds.

Baseline, measured in the same run: mdad's previous implementation, which listed
every pair with `np.triu_indices` and processed all runs of a batch of pairs at once
(its memory grows with runs x batch, so it is timed on 10 runs and scaled to 50).

The data: reference accuracies on a 6,016-item seen pool (synthetic MMLU-Pro's), and
estimates with 5 points of noise rounded to whole points, so that ties occur.

Usage: python benchmarks/bench_metrics.py [--runs 50] [--targets 4000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

import numpy as np

from mdad.metrics.mdad import first_crossing_mdad
from mdad.metrics.pairs import N_BINS, agreement, gap_bins, pair_counts


def previous_pair_counts(estimates: np.ndarray, reference: np.ndarray,
                         batch: int = 2_000_000) -> tuple[np.ndarray, np.ndarray]:
    """mdad 0.x's pair counts (pairs and agreeing per run and bin), for the baseline."""
    n_runs, n_targets = estimates.shape
    first, second = np.triu_indices(n_targets, k=1)
    pairs = np.zeros((n_runs, N_BINS), dtype=np.int64)
    agreeing = np.zeros((n_runs, N_BINS), dtype=np.int64)
    for start in range(0, first.size, batch):
        i, j = first[start:start + batch], second[start:start + batch]
        est_gap = estimates[:, i] - estimates[:, j]
        ref_gap = reference[:, i] - reference[:, j]
        bins = gap_bins(ref_gap) + N_BINS * np.arange(n_runs)[:, None]
        agree = agreement(est_gap, ref_gap)
        pairs += np.bincount(bins.ravel(), minlength=n_runs * N_BINS).reshape(n_runs, N_BINS)
        agreeing += np.bincount(bins.ravel(), weights=agree.ravel(),
                                minlength=n_runs * N_BINS).reshape(n_runs, N_BINS).astype(int)
    return pairs, agreeing


def data(n_runs: int, n_targets: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    reference = rng.integers(0, 6017, size=(n_runs, n_targets)) / 6016
    estimates = np.clip(reference + rng.normal(0, 0.05, reference.shape), 0, 1).round(2)
    return estimates, reference


def metrics_stage(estimates: np.ndarray, reference: np.ndarray, threads: int) -> float:
    counts = pair_counts(estimates, reference, threads=threads)
    return first_crossing_mdad(counts.pairs.sum(axis=0), counts.agreeing.sum(axis=0),
                               n_resamples=1000, rng=np.random.default_rng(0)).mdad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--targets", type=int, default=4000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    estimates, reference = data(args.runs, args.targets)
    n_pairs = args.runs * args.targets * (args.targets - 1) // 2
    print(f"{args.runs} runs x {args.targets} targets = {n_pairs / 1e6:.0f} million pairs")
    timings = {}
    for threads in (1, 2):
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            mdad = metrics_stage(estimates, reference, threads)
            times.append(time.perf_counter() - start)
        timings[threads] = statistics.median(times)
        print(f"mdad, {threads} thread(s): median {timings[threads]:.2f} s of {args.repeats} "
              f"(MDAD {100 * mdad:.1f} points)")
    baseline_runs = min(10, args.runs)
    start = time.perf_counter()
    old = previous_pair_counts(estimates[:baseline_runs], reference[:baseline_runs])
    baseline = (time.perf_counter() - start) * args.runs / baseline_runs
    new = pair_counts(estimates[:baseline_runs], reference[:baseline_runs])
    assert np.array_equal(old[0], new.pairs) and np.array_equal(old[1], new.agreeing)
    print(f"baseline, previous implementation (timed on {baseline_runs} runs, scaled): "
          f"{baseline:.2f} s = {baseline / timings[2]:.1f}x mdad with 2 threads")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory of this process (the baseline included): {peak:.0f} MB")


if __name__ == "__main__":
    main()
