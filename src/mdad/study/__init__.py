"""The study protocol: a request in, a study folder out.

`prepare_study` loads and checks a request; `conduct_study` runs it (checkpoint,
compute, evaluate, write) and `resume_study` continues one interrupted; `plan_study`,
`run_study` and `evaluate` are the steps, for studies kept in memory. Names load
their module on first use (PEP 562), so the CLI can read the defaults without pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mdad._lazy import lazy_exports

_MODULES = {
    "mdad.study.config": ("ALL_TARGETS", "DEFAULT_METHODS", "DEFAULT_SIZES", "PAPER_METHODS",
                          "StudyConfig", "StudyPlan", "expand_methods", "plan_study"),
    "mdad.study.design": ("RunDesign", "draw_run", "seen_pool_size", "split_seen_unseen"),
    "mdad.study.evaluation": ("MDAD_COLUMNS", "StudyTables", "evaluate"),
    "mdad.study.folder": ("StudyFolder", "read_study_folder"),
    "mdad.study.pipeline": ("PreparedStudy", "StudyInterrupted", "StudyOutcome",
                            "StudyProgress", "conduct_study", "prepare_study",
                            "resume_study", "saved_request"),
    "mdad.study.records": ("StudyResult",),
    "mdad.study.request": ("StudyRequest",),
    "mdad.study.cells": ("run_cell", "select_cell"),
    "mdad.study.runner": ("run_studies", "run_study"),
}
_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}
__all__ = [
    "ALL_TARGETS",
    "DEFAULT_METHODS",
    "DEFAULT_SIZES",
    "MDAD_COLUMNS",
    "PAPER_METHODS",
    "PreparedStudy",
    "RunDesign",
    "StudyConfig",
    "StudyFolder",
    "StudyInterrupted",
    "StudyOutcome",
    "StudyPlan",
    "StudyProgress",
    "StudyRequest",
    "StudyResult",
    "StudyTables",
    "conduct_study",
    "draw_run",
    "evaluate",
    "expand_methods",
    "plan_study",
    "prepare_study",
    "read_study_folder",
    "resume_study",
    "run_cell",
    "run_studies",
    "run_study",
    "saved_request",
    "seen_pool_size",
    "select_cell",
    "split_seen_unseen",
]

if TYPE_CHECKING:
    from mdad.study.cells import run_cell, select_cell
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
    from mdad.study.evaluation import MDAD_COLUMNS, StudyTables, evaluate
    from mdad.study.folder import StudyFolder, read_study_folder
    from mdad.study.pipeline import (
        PreparedStudy,
        StudyInterrupted,
        StudyOutcome,
        StudyProgress,
        conduct_study,
        prepare_study,
        resume_study,
        saved_request,
    )
    from mdad.study.records import StudyResult
    from mdad.study.request import StudyRequest
    from mdad.study.runner import run_studies, run_study


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
