"""Fixtures shared by the test suite: the real GPQA and MMLU-Pro matrices; and the
quick tier on every core."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from helpers import GPQA_CSV, MMLU_PRO_CSV, shared_data

from mdad.data import Dataset, ResponseMatrix, load_dataset, load_wide_csv

QUICK_TIER = "not slow"


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """The whole quick tier (``pytest -m "not slow"``, no paths, no ``-n``) runs on one
    pytest-xdist worker per core: its tests are mostly CLI processes that each spend a
    second importing, so two cores halve its wall time. ``-n 0`` keeps it serial; the
    full suite (CI) stays serial, as its slow tests time their own worker processes."""
    if hasattr(config, "workerinput"):  # a worker: it runs the tests it is sent
        return
    whole_quick_tier = (config.option.markexpr == QUICK_TIER
                        and config.args_source != pytest.Config.ArgsSource.ARGS)
    if (whole_quick_tier and config.pluginmanager.hasplugin("xdist")
            and config.option.numprocesses is None and (os.cpu_count() or 1) > 1):
        config.option.numprocesses = "auto"
        if config.option.dist == "no":  # xdist's own default: set only its load balancing
            config.option.dist = "worksteal"  # an idle worker takes a busy one's queue
        config.stash[_SPREAD] = True


_SPREAD = pytest.StashKey[bool]()


def pytest_report_header(config: pytest.Config) -> str | None:
    """Say so when the quick tier was spread over the cores."""
    if config.stash.get(_SPREAD, False):
        return ("quick tier: one pytest-xdist worker per core (tests/conftest.py); "
                "-n 0 runs it in one process")
    return None


@pytest.fixture(scope="session")
def gpqa_data() -> Dataset:
    """GPQA as `mdad` loads it by name (its spec: subtasks, lm-eval task)."""
    shared_data(GPQA_CSV)
    return load_dataset("gpqa")


@pytest.fixture(scope="session")
def gpqa() -> ResponseMatrix:
    return load_wide_csv(shared_data(GPQA_CSV), subtask_column="subset")


@pytest.fixture(scope="session")
def mmlu_pro() -> ResponseMatrix:
    return load_wide_csv(shared_data(MMLU_PRO_CSV), item_column="question_id",
                         subtask_column="category")
