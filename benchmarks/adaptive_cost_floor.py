"""A floor under what `adaptive-cv` adds to `mdad run gpqa --methods all` (issue 39.4:
at most 10 s for every adaptive method), on this machine.

Per run, `adaptive-cv` fits the 2PL on each of its 2 folds' training sources at each
candidate dimension (1, 2, 3, 5) before it tests anything: 8 fits that no other
method shares. This times exactly those fits, as the study makes them (the same
pools, seeds and fits, one thread), for a few runs, and prints their CPU seconds per
run and what GPQA's 50 runs would cost on this machine's cores: whatever the tests
themselves cost, `adaptive-cv` adds at least that much.

Usage: python benchmarks/adaptive_cost_floor.py [--runs 5]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the CLI runs a study's cells

import argparse
import time

import numpy as np

from mdad.data import load_dataset
from mdad.irt.cat_cv import DIMS
from mdad.selection import get_method
from mdad.selection.adaptive_cv import CV_FOLDS, _cross_validation
from mdad.selection.threads import one_thread
from mdad.selection.tinybenchmarks import fit_irt
from mdad.study.cells import draw_design, seen_pool
from mdad.study.config import StudyConfig, plan_study

STUDY_RUNS = 50  # `mdad run gpqa`'s default


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    matrix = load_dataset("gpqa").matrix
    plan = plan_study(matrix, StudyConfig(methods=("adaptive-cv",), n_runs=STUDY_RUNS))
    rng = np.random.default_rng(0)
    fit_irt((rng.random((20, 30)) < 0.5).astype(float), 2, rng)  # numba's kernels loaded
    seconds = {dims: [] for dims in DIMS}
    for run in range(args.runs):
        pool = seen_pool(matrix, draw_design(matrix, plan, run), plan.config.sources[0],
                         seed=plan.config.seed, stream=plan.stream)
        cv = pool.shared("adaptive-cv", lambda stream, pool=pool: _cross_validation(pool, stream))
        with one_thread([get_method("adaptive-cv")]):  # as `compute_run` limits a cell
            for dims in DIMS:
                start = time.process_time()
                for fold in range(CV_FOLDS):
                    cv.fit(fold, dims)
                seconds[dims].append(time.process_time() - start)
    per_run = sum(np.mean(values) for values in seconds.values())
    cores = len(os.sched_getaffinity(0))  # the cores this process may use
    print(f"GPQA, {pool.n_sources} sources, {pool.n_items} seen items, {args.runs} runs: "
          f"CPU seconds per run of the {CV_FOLDS} folds' fits, by dimension: "
          + ", ".join(f"{dims}-D {np.mean(values):.3f}" for dims, values in seconds.items()))
    print(f"{per_run:.2f} CPU s a run; {STUDY_RUNS} runs: {STUDY_RUNS * per_run:.1f} CPU s, "
          f"{STUDY_RUNS * per_run / cores:.1f} s on {cores} cores (goal for every adaptive "
          f"method together: 10 s)")


if __name__ == "__main__":
    main()
