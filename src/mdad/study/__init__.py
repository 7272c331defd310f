"""The study protocol: plan, run, evaluate, write."""

from mdad.study.config import DEFAULT_METHODS, DEFAULT_SIZES, StudyConfig, StudyPlan, plan_study
from mdad.study.design import RunDesign, draw_run, seen_pool_size, split_seen_unseen
from mdad.study.evaluate import MDAD_COLUMNS, StudyTables, evaluate
from mdad.study.runner import StudyResult, run_cell, run_study, select_cell

__all__ = [
    "DEFAULT_METHODS",
    "DEFAULT_SIZES",
    "MDAD_COLUMNS",
    "RunDesign",
    "StudyConfig",
    "StudyPlan",
    "StudyResult",
    "StudyTables",
    "draw_run",
    "evaluate",
    "plan_study",
    "run_cell",
    "run_study",
    "seen_pool_size",
    "select_cell",
    "split_seen_unseen",
]
