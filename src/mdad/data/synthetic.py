"""Synthetic leaderboards with the real benchmarks' shapes, for scale and teaching.

Each one is drawn from a multidimensional 2PL IRT model calibrated by `mdad.irt` on
real data: GPQA's 420 models (for `synthetic:gpqa`, `synthetic:bbh` and
`synthetic:mmlu`) or MMLU-Pro's 29 (for `synthetic:mmlu-pro`). Abilities are drawn
from a normal distribution with the fitted abilities' mean and covariance; items
resample the fitted items' (discrimination, difficulty) with replacement. A model
answers an item right when its latent score u = theta.a - D b + logistic noise is
positive (so P(right) is the model's), and its gold-option confidence is sigmoid(u):
above 0.5 exactly when right, and graded within each side, so confidence-based
methods see more than correctness.

Shapes (../shared/data/README.md): GPQA 448 items, one subtask; MMLU-Pro 12,032 in 14
categories with the real file's counts; BBH 5,761 in 24 subtasks (250 each, except
causal_judgement 187, penguins_in_a_table 146, snarks 178); MMLU 14,042 in 57 subjects,
split as evenly as possible (the per-subject counts are not in the data folder).

This module reads no dataset by itself: the real data it calibrates on come in through
`RealData` (`mdad.data.synthetic_loader` passes the named datasets), so it imports
neither the registry nor the loaders.
"""

from __future__ import annotations

import json
import numbers
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from mdad import streams
from mdad.data.matrix import ResponseMatrix
from mdad.errors import ConfigError, check_whole

PREFIX = "synthetic:"
# a synthetic matrix's `sha256` field: what it is drawn from, since it has no file to hash
IDENTITY = re.compile(r"synthetic:[a-z-]+:[0-9]+:[0-9]+:irt[0-9]+")
MAX_MODELS = 5000
IRT_DIMS = 5
BBH_SPECIAL = {"bbh_causal_judgement": 187, "bbh_penguins_in_a_table": 146, "bbh_snarks": 178}
SHAPES = ("gpqa", "mmlu-pro", "bbh", "mmlu")
# The named real dataset each shape is calibrated on.
CALIBRATED_ON = {"gpqa": "gpqa", "mmlu-pro": "mmlu-pro-29", "bbh": "gpqa", "mmlu": "gpqa"}


class RealData(Protocol):
    """The named real datasets synthetic ones are calibrated on ("gpqa", "mmlu-pro-29")."""

    def path(self, name: str) -> Path:
        """The file of the named dataset."""
        ...

    def matrix(self, name: str) -> ResponseMatrix:
        """The named dataset's complete matrix (the default missing-data policy applied)."""
        ...


@dataclass(frozen=True, eq=False)
class Calibration:
    """Fitted IRT parameters of a real dataset: the source of synthetic ones.

    `ability_cov` is the fitted abilities' covariance scaled so that the spread of the
    models' expected accuracies matches the real one (MAP abilities of a few hundred
    models overstate it); the scale is found by bisection.
    """

    ability_mean: np.ndarray
    ability_cov: np.ndarray
    discrimination: np.ndarray
    difficulty: np.ndarray


# (dataset name, its file) -> its calibration: fitting takes seconds, drawing does not
_CALIBRATIONS: dict[tuple[str, str], Calibration] = {}


def calibration(name: str, real: RealData) -> Calibration:
    """The calibration on the real dataset `name`, fitted once per file and process."""
    key = (name, str(real.path(name)))
    if key not in _CALIBRATIONS:
        _CALIBRATIONS[key] = calibrate(real.matrix(name))
    return _CALIBRATIONS[key]


def calibrate(matrix: ResponseMatrix) -> Calibration:
    """Fit `mdad.irt` (D = 5) on a complete real matrix."""
    from scipy.special import expit

    from mdad.irt import MultidimensionalIrt

    model = MultidimensionalIrt(IRT_DIMS, random_state=streams.rng(0)).fit(matrix.correctness)
    accuracy = matrix.accuracy()
    # the spread of true accuracies: the observed one minus binomial noise
    noise = float(np.mean(accuracy * (1 - accuracy)) / matrix.n_items)
    target = np.sqrt(max(float(accuracy.var()) - noise, 1e-8))
    mean, cov = model.ability_.mean(axis=0), np.cov(model.ability_, rowvar=False)
    rng = streams.rng(0)  # the data's definition: these draws never change
    draws = rng.multivariate_normal(np.zeros(IRT_DIMS), cov, 2000)
    # 2,000 items estimate the mean over items well and keep the bisection fast
    items = np.sort(rng.permutation(matrix.n_items)[:2000])
    a, b = model.discrimination_[items], model.difficulty_[items]
    # logits of the draws: base + sqrt(scale) * spread - shift
    base, spread = mean @ a.T - IRT_DIMS * b, draws @ a.T

    def expected(scale: float, shift: float) -> np.ndarray:
        """Expected accuracies of the draws with the covariance scaled and every
        difficulty shifted (in logit units)."""
        return expit(base + np.sqrt(scale) * spread - shift).mean(axis=1)

    def solve(function, low: float, high: float, goal: float) -> float:
        for _ in range(30):  # bisection on an increasing function
            middle = (low + high) / 2
            low, high = (middle, high) if function(middle) < goal else (low, middle)
        return (low + high) / 2

    # scale sets the spread, the shift the mean (shrinking the spread moves the mean)
    scale, shift = 1.0, 0.0
    for _ in range(3):
        scale = solve(lambda c, d=shift: float(expected(c, d).std()), 0.01, 4.0, target)
        shift = solve(lambda d, c=scale: -float(expected(c, d).mean()), -4.0, 4.0,
                      -float(accuracy.mean()))
    return Calibration(mean, cov * scale, model.discrimination_,
                       model.difficulty_ + shift / IRT_DIMS)


def subtask_shape(shape: str, real: RealData) -> tuple[list[str], list[int], str]:
    """(subtask names, items per subtask, the real dataset to calibrate on).

    Raises
    ------
    ConfigError
        For a shape not in `SHAPES`.
    """
    if shape == "gpqa":
        return ["gpqa_main"], [448], CALIBRATED_ON[shape]
    if shape == "mmlu-pro":
        import pandas as pd

        path = real.path(CALIBRATED_ON[shape])
        counts = pd.read_csv(path, usecols=["category"]).category.value_counts().sort_index()
        return list(counts.index), [int(c) for c in counts], CALIBRATED_ON[shape]
    if shape == "bbh":
        path = real.path("gpqa").parent / "bbh_subtasks.json"
        names = json.loads(Path(path).read_text(encoding="utf-8"))
        return names, [BBH_SPECIAL.get(name, 250) for name in names], CALIBRATED_ON[shape]
    if shape == "mmlu":
        sizes = np.full(57, 14042 // 57)
        sizes[: 14042 % 57] += 1
        return ([f"mmlu_subject_{k:02d}" for k in range(57)], sizes.tolist(),
                CALIBRATED_ON[shape])
    raise ConfigError(f"unknown synthetic dataset {PREFIX}{shape}; choose from: "
                      + ", ".join(PREFIX + s for s in SHAPES), parameters=("name_or_path",))


def synthetic_matrix(shape: str, real: RealData, *, n_models: int = 420,
                     data_seed: int = 0) -> ResponseMatrix:
    """A synthetic leaderboard of `n_models` models with `shape`'s items and subtasks,
    drawn with `data_seed` from the calibration on `real`'s data.

    Correctness is stored as uint8 0/1 and confidences as float32.

    Raises
    ------
    ConfigError
        For an unknown shape, a model count outside 2..5000 or a negative seed.
    """
    if (not isinstance(n_models, numbers.Integral) or isinstance(n_models, bool)
            or not 2 <= n_models <= MAX_MODELS):
        raise ConfigError(f"n_models must be between 2 and {MAX_MODELS}; got {n_models!r}",
                          parameters=("n_models",))
    check_whole(data_seed, "data_seed", minimum=0)
    names, sizes, calibrated_on = subtask_shape(shape, real)
    fitted = calibration(calibrated_on, real)
    rng = streams.rng(data_seed, 0x5E)  # the data's definition: these draws never change
    n_items = int(sum(sizes))
    ability = rng.multivariate_normal(fitted.ability_mean, fitted.ability_cov, n_models)
    # the fitted items themselves when the shape has as many (GPQA), else a resample
    picks = (rng.permutation(n_items) if n_items == fitted.difficulty.size
             else rng.integers(0, fitted.difficulty.size, n_items))
    discrimination, difficulty = fitted.discrimination[picks], fitted.difficulty[picks]
    correctness = np.empty((n_models, n_items), dtype=np.uint8)
    confidence = np.empty((n_models, n_items), dtype=np.float32)
    for start in range(0, n_models, 256):  # bounded memory for 5,000 x 14,042
        block = slice(start, min(start + 256, n_models))
        logits = ability[block] @ discrimination.T - IRT_DIMS * difficulty
        noise = rng.logistic(size=logits.shape)
        latent = logits + noise
        correctness[block] = latent > 0
        confidence[block] = 1.0 / (1.0 + np.exp(-latent))
    width = len(str(n_models - 1))
    return ResponseMatrix(
        correctness, np.array([f"synthetic-{k:0{width}d}" for k in range(n_models)]),
        np.array([str(j) for j in range(n_items)]),
        subtasks=np.repeat(names, sizes), confidence=confidence,
        source=f"{PREFIX}{shape} ({n_models} models, seed {data_seed})",
        sha256=f"{PREFIX}{shape}:{n_models}:{data_seed}:irt{IRT_DIMS}")
