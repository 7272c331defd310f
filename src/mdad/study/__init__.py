"""The study protocol: plan, run, evaluate, write."""

from mdad.study.config import (
    ALL_TARGETS,
    DEFAULT_METHODS,
    DEFAULT_SIZES,
    PAPER_METHODS,
    StudyConfig,
    StudyPlan,
    expand_methods,
    plan_study,
)
from mdad.study.design import RunDesign, draw_run, seen_pool_size, split_seen_unseen
from mdad.study.evaluate import MDAD_COLUMNS, StudyTables, evaluate
from mdad.study.runner import StudyResult, run_cell, run_study, select_cell

__all__ = [
    "ALL_TARGETS",
    "DEFAULT_METHODS",
    "DEFAULT_SIZES",
    "MDAD_COLUMNS",
    "PAPER_METHODS",
    "RunDesign",
    "StudyConfig",
    "StudyPlan",
    "StudyResult",
    "StudyTables",
    "draw_run",
    "evaluate",
    "expand_methods",
    "plan_study",
    "run_cell",
    "run_study",
    "seen_pool_size",
    "select_cell",
    "split_seen_unseen",
]
