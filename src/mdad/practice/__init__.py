"""For practitioners: plan a size, select a micro-benchmark, estimate, compare."""

from mdad.practice.bundle import (
    MicroBenchmarkFile,
    lm_eval_samples_json,
    lm_eval_tasks,
    select_microbenchmark,
    with_reference,
)
from mdad.practice.estimate import (
    CONFIDENCE,
    RULE,
    Comparison,
    Estimate,
    ItemScores,
    compare_models,
    estimate_score,
    read_results,
)
from mdad.practice.plan import plan
from mdad.practice.planner import (
    AnalyticMdad,
    Plan,
    analytic_mdad,
    pair_structure,
    size_for_gap,
)

__all__ = [
    "CONFIDENCE",
    "RULE",
    "AnalyticMdad",
    "Comparison",
    "Estimate",
    "ItemScores",
    "MicroBenchmarkFile",
    "Plan",
    "analytic_mdad",
    "compare_models",
    "estimate_score",
    "lm_eval_samples_json",
    "lm_eval_tasks",
    "pair_structure",
    "plan",
    "read_results",
    "select_microbenchmark",
    "size_for_gap",
    "with_reference",
]
