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
A published value passes when it lies within 3 standard deviations of the difference
of two independent draws, plus one 0.005 bin, of our seed mean.
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
    ours = seed_mdads[(split, size)]
    reference = np.array(REFERENCE[(split, size)])
    # The reference's one unseen n = 10 outlier (0.5: the curve never reached 0.8)
    # would swamp its spread; a robust spread (1.4826 * MAD) keeps the test honest.
    reference_sd = 1.4826 * np.median(np.abs(reference - np.median(reference)))
    spread = np.sqrt(ours.var(ddof=1) + reference_sd**2)
    published = reference[-1]
    assert abs(published - ours.mean()) <= 3 * spread + BIN, (
        f"{split} n={size}: published {published}, ours {ours.round(3)} "
        f"(mean {ours.mean():.4f}), reference {reference}")
