"""Where the tests find the real data of ../shared/data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def shared_data(relative: str = "") -> Path:
    """The shared real-data folder (or a path inside it).

    Missing data skips the test locally and fails it when ``CI`` is set, so CI can
    never pass without having run the real-data checks.
    """
    env = os.environ.get("MDAD_DATA")
    root = Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"
    path = root / relative
    if not path.exists():
        message = f"real data not found at {path}; set MDAD_DATA to the shared data folder"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


GPQA_CSV = "open-llm-leaderboard-v2/gpqa_main.csv"
MMLU_PRO_CSV = "mmlu-pro-tiger-lab/mmlu_pro_29_models.csv"
