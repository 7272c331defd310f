"""For practitioners: plan a size, select a micro-benchmark, estimate, compare.

The names below load on first use (PEP 562), so importing one submodule, e.g.
`mdad.practice.estimate`, does not load the others and their libraries (scipy,
pandas, the selection methods).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mdad._lazy import lazy_exports

# public name -> the submodule that defines it
_EXPORTS = {
    "AdaptiveEstimate": "mdad.practice.adaptive",
    "AdaptiveTest": "mdad.practice.adaptive",
    "start_adaptive_test": "mdad.practice.adaptive",
    "MicroBenchmarkFile": "mdad.practice.bundle",
    "lm_eval_samples_json": "mdad.practice.bundle",
    "lm_eval_tasks": "mdad.practice.bundle",
    "select_microbenchmark": "mdad.practice.bundle",
    "select_microbenchmarks": "mdad.practice.bundle",
    "with_reference": "mdad.practice.bundle",
    "CONFIDENCE": "mdad.practice.compare",
    "RULE": "mdad.practice.compare",
    "Comparison": "mdad.practice.compare",
    "Footing": "mdad.practice.compare",
    "Estimate": "mdad.practice.estimate",
    "ItemScores": "mdad.practice.results",
    "compare_models": "mdad.practice.compare",
    "estimate_score": "mdad.practice.estimate",
    "read_model_scores": "mdad.practice.results",
    "plan": "mdad.practice.sizing",
    "Calibration": "mdad.practice.calibration",
    "RoundTrip": "mdad.practice.roundtrip",
    "round_trip": "mdad.practice.roundtrip",
    "AnalyticMdad": "mdad.practice.planner",
    "Plan": "mdad.practice.planner",
    "analytic_mdad": "mdad.practice.planner",
    "pair_structure": "mdad.practice.planner",
    "size_for_gap": "mdad.practice.planner",
}

__all__ = [
    "CONFIDENCE",
    "RULE",
    "AdaptiveEstimate",
    "AdaptiveTest",
    "AnalyticMdad",
    "Calibration",
    "Comparison",
    "Estimate",
    "Footing",
    "ItemScores",
    "MicroBenchmarkFile",
    "Plan",
    "RoundTrip",
    "analytic_mdad",
    "compare_models",
    "estimate_score",
    "lm_eval_samples_json",
    "lm_eval_tasks",
    "pair_structure",
    "plan",
    "read_model_scores",
    "round_trip",
    "select_microbenchmark",
    "select_microbenchmarks",
    "size_for_gap",
    "start_adaptive_test",
    "with_reference",
]

if TYPE_CHECKING:
    from mdad.practice.adaptive import AdaptiveEstimate, AdaptiveTest, start_adaptive_test
    from mdad.practice.bundle import (
        MicroBenchmarkFile,
        lm_eval_samples_json,
        lm_eval_tasks,
        select_microbenchmark,
        select_microbenchmarks,
        with_reference,
    )
    from mdad.practice.calibration import Calibration
    from mdad.practice.compare import CONFIDENCE, RULE, Comparison, Footing, compare_models
    from mdad.practice.estimate import Estimate, estimate_score
    from mdad.practice.planner import (
        AnalyticMdad,
        Plan,
        analytic_mdad,
        pair_structure,
        size_for_gap,
    )
    from mdad.practice.results import ItemScores, read_model_scores
    from mdad.practice.roundtrip import RoundTrip, round_trip
    from mdad.practice.sizing import plan


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)

