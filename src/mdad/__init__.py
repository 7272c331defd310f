"""mdad: how reliable is a language-model micro-benchmark?

The public API, by task:

- loading: `load_dataset`, `read_results`, `Dataset`, `ResponseMatrix`;
- the study: `StudyConfig`, `StudyRequest`, `prepare_study`, `conduct_study`,
  `resume_study`, `read_study_folder`;
- MDAD: `first_crossing_mdad`, `smooth_mdad`, `MdadResult`, `DEFAULT_THRESHOLD`;
- plan a size: `plan`;
- select a micro-benchmark: `select_microbenchmark`, `MicroBenchmarkFile`;
- estimate and compare: `read_model_scores`, `estimate_score`, `compare_models`,
  `ItemScores`, `Estimate`, `Comparison`;
- test adaptively: `start_adaptive_test`, `AdaptiveTest`;
- errors: `MdadError`, `ConfigError`, `DataError`.

Each name loads its module on first use (PEP 562), so ``import mdad`` and the command
line start without pandas, scipy, scikit-learn or matplotlib.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from mdad.errors import ConfigError, DataError, MdadError

# public name -> the module that exports it
_EXPORTS = {
    "Dataset": "mdad.data",
    "ResponseMatrix": "mdad.data",
    "load_dataset": "mdad.data",
    "read_results": "mdad.data",
    "StudyConfig": "mdad.study",
    "StudyRequest": "mdad.study",
    "conduct_study": "mdad.study",
    "prepare_study": "mdad.study",
    "resume_study": "mdad.study",
    "read_study_folder": "mdad.study",
    "DEFAULT_THRESHOLD": "mdad.metrics",
    "MdadResult": "mdad.metrics",
    "first_crossing_mdad": "mdad.metrics",
    "smooth_mdad": "mdad.metrics",
    "plan": "mdad.practice",
    "MicroBenchmarkFile": "mdad.practice",
    "select_microbenchmark": "mdad.practice",
    "Comparison": "mdad.practice",
    "Estimate": "mdad.practice",
    "ItemScores": "mdad.practice",
    "compare_models": "mdad.practice",
    "estimate_score": "mdad.practice",
    "read_model_scores": "mdad.practice",
    "AdaptiveTest": "mdad.practice",
    "start_adaptive_test": "mdad.practice",
}

__all__ = [
    "DEFAULT_THRESHOLD",
    "AdaptiveTest",
    "Comparison",
    "ConfigError",
    "DataError",
    "Dataset",
    "Estimate",
    "ItemScores",
    "MdadError",
    "MdadResult",
    "MicroBenchmarkFile",
    "ResponseMatrix",
    "StudyConfig",
    "StudyRequest",
    "__version__",
    "compare_models",
    "conduct_study",
    "estimate_score",
    "first_crossing_mdad",
    "load_dataset",
    "plan",
    "prepare_study",
    "read_model_scores",
    "read_results",
    "read_study_folder",
    "resume_study",
    "select_microbenchmark",
    "smooth_mdad",
    "start_adaptive_test",
]

if TYPE_CHECKING:
    from mdad.data import Dataset, ResponseMatrix, load_dataset, read_results
    from mdad.metrics import DEFAULT_THRESHOLD, MdadResult, first_crossing_mdad, smooth_mdad
    from mdad.practice import (
        AdaptiveTest,
        Comparison,
        Estimate,
        ItemScores,
        MicroBenchmarkFile,
        compare_models,
        estimate_score,
        plan,
        read_model_scores,
        select_microbenchmark,
        start_adaptive_test,
    )
    from mdad.study import (
        StudyConfig,
        StudyRequest,
        conduct_study,
        prepare_study,
        read_study_folder,
        resume_study,
    )

    __version__: str


def __getattr__(name: str) -> object:
    if name == "__version__":
        from mdad._version import version

        value: object = version()
    elif name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
