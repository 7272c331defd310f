"""Fixtures shared by the test suite: the real GPQA and MMLU-Pro matrices."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from shared import GPQA_CSV, MMLU_PRO_CSV, shared_data

from mdad.data import ResponseMatrix, load_wide_csv


@pytest.fixture(scope="session")
def gpqa() -> ResponseMatrix:
    return load_wide_csv(shared_data(GPQA_CSV), subtask_column="subset")


@pytest.fixture(scope="session")
def mmlu_pro() -> ResponseMatrix:
    return load_wide_csv(shared_data(MMLU_PRO_CSV), item_column="question_id",
                         subtask_column="category")
