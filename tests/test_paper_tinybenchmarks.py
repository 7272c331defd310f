"""GPQA, tinyBenchmarks, S = 300, 50 runs: our MDAD against the paper's published values.

tinyBenchmarks reads correctness only, as in the paper, so unlike the confidence-based
methods (the published GPQA runs had option probabilities; our GPQA file has 0/1
correctness) it is directly comparable. Our fit is the same SVI as the paper's py-irt
fork's, with other random numbers, so the anchors differ run by run; what must agree
is the MDAD curve.

Tolerance, measured rather than chosen:
- ours: the spread of MDAD over a few independent seeds of the full study, here;
- the reference's: the published results at S = 150, 200, 250 and 300 (the fork named
  in ../shared/data/README.md, graphs-combine-subtasks/gpqa-mdad-results.csv), four
  runs of the reference code that differ only in source count, where MDAD has
  levelled off (see the table).
A published value passes when it lies within 3 robust standard deviations of the
difference of two independent draws, plus one 0.005 bin, of our seeds' median (a seed
whose MDAD is not reached counts as 0.5, the reference code's convention).
"""

from __future__ import annotations

import numpy as np
import pytest

from mdad.study import StudyConfig, evaluate, plan_study, run_study
from mdad.study.backends import ProcessBackend

# Each study of the paper's protocol takes seconds: the quick tier leaves them to CI.
pytestmark = pytest.mark.slow

SIZES = (10, 25, 50, 100, 200)
# S = 150, 200, 250, 300; the last is the published S = 300 value.
REFERENCE = {
    ("seen", 10): (0.165, 0.175, 0.17, 0.155),
    ("seen", 25): (0.11, 0.09, 0.10, 0.095),
    ("seen", 50): (0.065, 0.065, 0.07, 0.07),
    ("seen", 100): (0.04, 0.045, 0.045, 0.045),
    ("seen", 200): (0.015, 0.015, 0.015, 0.015),
    ("unseen", 10): (0.24, 0.5, 0.235, 0.255),
    ("unseen", 25): (0.17, 0.19, 0.15, 0.17),
    ("unseen", 50): (0.11, 0.135, 0.13, 0.135),
    ("unseen", 100): (0.085, 0.10, 0.095, 0.105),
    ("unseen", 200): (0.07, 0.08, 0.08, 0.08),
}
N_SEEDS = 3
BIN = 0.005


@pytest.fixture(scope="module")
def seed_mdads(gpqa) -> dict[tuple[str, int], np.ndarray]:
    values: dict[tuple[str, int], list[float]] = {}
    for seed in range(N_SEEDS):
        plan = plan_study(gpqa, StudyConfig(methods=("tinybenchmarks",), sizes=SIZES,
                                            seed=seed, n_resamples=1))
        for row in evaluate(run_study(gpqa, plan, backend=ProcessBackend(2))).mdad.itertuples():
            values.setdefault((row.split, row.size), []).append(row.mdad)
    return {key: np.array(v) for key, v in values.items()}


@pytest.mark.parametrize("split", ["seen", "unseen"])
@pytest.mark.parametrize("size", SIZES)
def test_published_tinybenchmarks_within_measured_noise(seed_mdads, split, size):
    # A seed whose MDAD is not reached counts as 0.5, as the reference code writes it.
    ours = np.where(np.isnan(seed_mdads[(split, size)]), 0.5, seed_mdads[(split, size)])
    reference = np.array(REFERENCE[(split, size)])
    # The reference's one unseen n = 10 outlier (0.5: the curve never reached 0.8), and
    # an unreached seed of ours, would swamp a standard deviation: a robust centre and
    # spread (median, 1.4826 * MAD) on both sides keep the test honest.
    def robust_sd(values: np.ndarray) -> float:
        return float(1.4826 * np.median(np.abs(values - np.median(values))))

    reached = seed_mdads[(split, size)][~np.isnan(seed_mdads[(split, size)])]
    ours_sd = max(robust_sd(ours), reached.std(ddof=1) if reached.size > 1 else 0.0)
    spread = np.sqrt(ours_sd**2 + robust_sd(reference) ** 2)
    published = reference[-1]
    assert abs(published - np.median(ours)) <= 3 * spread + BIN, (
        f"{split} n={size}: published {published}, ours {ours.round(3)} "
        f"(median {np.median(ours):.4f}), reference {reference}")
