"""The documented approximations keep each method's numbers within run-to-run noise.

Each fast variant (`diversity-fast`, `anchor-points-fast`, `tinybenchmarks-fast`) runs
in the same study as its exact method, on GPQA (24 runs, S = 300) and on synthetic
MMLU-Pro (420 models calibrated on the real MMLU-Pro file; 6 runs, S = 100). At every
size, on the seen split:
- its mean absolute error lies within 3 combined standard errors (over runs) of the
  exact method's, and its paired difference per run (the same designs) within 3.5
  standard errors of that difference: two-sided levels of 0.27% and 0.047% a
  comparison, about 1% over the 21 paired ones, as quantiles of Student's t for the
  runs' degrees of freedom (standard errors from 6 runs understate the spread: at 3.5
  of them a normal law's 0.047% is a 1.7% chance: on 2026-12-04 tinybenchmarks-fast
  on synthetic MMLU-Pro at 50 items gave 5.3 of them over 6 runs, and 0.5 over 12
  other runs in `benchmarks/approximation_noise.py`);
- its smooth MDAD lies within 1.5 combined half-widths of the two bootstrap 95%
  intervals (about 3 standard errors) of the exact method's (no limit where a bound is
  never reached), and is reached exactly when the exact one is.
The exact methods stay the default; the variant's name is the switch.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers import GPQA_CSV, MMLU_PRO_CSV, shared_data
from scipy.stats import norm
from scipy.stats import t as student_t

from mdad.data import load_dataset
from mdad.study import StudyConfig, evaluate, plan_study, run_study
from mdad.study.backends import ProcessBackend

pytestmark = pytest.mark.slow

VARIANTS = {"diversity-fast": "diversity", "anchor-points-fast": "anchor-points",
            "tinybenchmarks-fast": "tinybenchmarks"}
# Two-sided levels a comparison: a normal law's 3 standard errors, and 3.5 for the
# paired differences, as 21 of them are made in all; as Student's t quantiles.
ERROR_LEVEL = 2 * norm.sf(3.0)
PAIRED_LEVEL = 2 * norm.sf(3.5)
# A bootstrap 95% half-width is about 2 standard errors: 1.5 of them combined make the
# same 3-SE limit as the error's (4 GPQA and 3 MMLU-Pro cells per method).
MDAD_LIMIT = 1.5
STUDIES = {  # benchmark: (runs, sources, sizes); about 2 minutes in all on 2 cores
    "gpqa": (24, (300,), (10, 25, 50, 100)),
    "synthetic:mmlu-pro": (6, (100,), (10, 50, 250)),
}


@pytest.fixture(scope="module", params=list(STUDIES))
def tables(request) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    shared_data(GPQA_CSV), shared_data(MMLU_PRO_CSV)  # fail under CI when missing
    runs, sources, sizes = STUDIES[request.param]
    matrix = load_dataset(request.param).matrix
    methods = tuple(VARIANTS.values()) + tuple(VARIANTS)
    plan = plan_study(matrix, StudyConfig(methods=methods, n_runs=runs, sources=sources),
                      default_sizes=sizes)
    study = run_study(matrix, plan, backend=ProcessBackend(2))
    result = evaluate(study)
    seen_mdad = result.mdad[result.mdad.split == "seen"].set_index(["method", "sources", "size"])
    summary = result.summary.set_index(["method", "sources", "size"])
    # per run (methods, sizes, source counts, runs): the error on the targets' seen accuracy
    per_run = np.abs(study.estimates - study.seen[None, None, None]).mean(axis=-1)
    paired = []
    for fast, exact in VARIANTS.items():
        gap = per_run[methods.index(fast)] - per_run[methods.index(exact)]
        for s, size in enumerate(plan.sizes):
            for c, n_sources in enumerate(plan.config.sources):
                paired.append({"method": fast, "size": size, "sources": n_sources,
                               "gap": gap[s, c].mean(),
                               "se": gap[s, c].std(ddof=1) / np.sqrt(runs), "runs": runs})
    print(pd.DataFrame(paired).round(5).to_string())
    print(request.param)
    print(summary[["mae_seen", "mae_seen_se"]].join(
        seen_mdad[["mdad_smooth", "mdad_smooth_low", "mdad_smooth_high", "pairs"]]).round(4)
        .to_string())
    return summary, seen_mdad, pd.DataFrame(paired)


def _pairs(table: pd.DataFrame, fast: str) -> list[tuple[pd.Series, pd.Series]]:
    exact = VARIANTS[fast]
    rows = []
    for (method, n_sources, size), row in table.iterrows():
        if method == fast:
            rows.append((table.loc[(exact, n_sources, size)], row))
    assert rows, f"no rows for {fast}"
    return rows


def t_limit(level: float, df: float) -> float:
    """How many standard errors a two-sided test at `level` allows, with `df` degrees
    of freedom behind them."""
    return float(student_t.isf(level / 2, df))


def test_t_limits_are_the_normal_ones_with_many_runs_and_wider_with_few():
    assert t_limit(PAIRED_LEVEL, 10**6) == pytest.approx(3.5, abs=1e-3)
    assert t_limit(ERROR_LEVEL, 10**6) == pytest.approx(3.0, abs=1e-3)
    assert t_limit(PAIRED_LEVEL, 23) == pytest.approx(4.08, abs=0.01)  # GPQA's 24 runs
    assert t_limit(PAIRED_LEVEL, 5) == pytest.approx(8.10, abs=0.01)  # 6 runs


@pytest.mark.parametrize("fast", list(VARIANTS))
def test_fast_variant_error_is_within_noise(tables, fast):
    summary, _, _ = tables
    for exact, approximate in _pairs(summary, fast):
        gap = approximate.mae_seen - exact.mae_seen
        a, b = approximate.mae_seen_se, exact.mae_seen_se
        noise = np.hypot(a, b)
        # Welch and Satterthwaite's degrees of freedom of the two means' difference
        df = noise**4 / ((a**4 + b**4) / (exact.runs - 1)) if noise > 0 else exact.runs - 1
        limit = t_limit(ERROR_LEVEL, df)
        assert abs(gap) <= limit * noise, (fast, approximate.name, gap, noise, limit)


@pytest.mark.parametrize("fast", list(VARIANTS))
def test_fast_variant_mdad_is_within_noise(tables, fast):
    _, seen_mdad, _ = tables
    for exact, approximate in _pairs(seen_mdad, fast):
        assert approximate.smooth_reached == exact.smooth_reached, (fast, approximate.name)
        if not exact.smooth_reached:
            continue
        # an unreached bootstrap bound (NaN) leaves that interval open: no limit
        half_widths = [np.nan_to_num((row.mdad_smooth_high - row.mdad_smooth_low) / 2,
                                     nan=np.inf) for row in (exact, approximate)]
        gap = approximate.mdad_smooth - exact.mdad_smooth
        limit = MDAD_LIMIT * np.hypot(*half_widths)
        assert abs(gap) <= limit, (fast, approximate.name, gap, limit)


@pytest.mark.parametrize("fast", list(VARIANTS))
def test_fast_variant_error_is_within_paired_noise(tables, fast):
    # The same designs (targets, sources, split) for both: the run-to-run spread of the
    # designs cancels, and what is left is the methods' own randomness.
    _, _, paired = tables
    mine = paired[paired.method == fast]
    assert len(mine) > 0
    for row in mine.itertuples():
        assert abs(row.gap) <= t_limit(PAIRED_LEVEL, row.runs - 1) * row.se, row
