"""Adaptive testing as a study method: every target gets its own items.

The source models fit a unidimensional 2PL model on the seen pool (once per run and
source count, shared by every size). Each target then takes a computerized adaptive
test of `size` items (`mdad.irt.cat`): it starts at the prior mean ability, answers
the unused item with the most Fisher information at its current ability, and its
ability is updated by MAP after each answer. Its estimate is its predicted accuracy
on the whole seen pool: answered items as answered, the others at their IRT
probability. Selection reads only the source models; the test reads a target's
answers only on the items it administers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from mdad.irt.cat import administer
from mdad.selection.base import ItemExposure, MethodDefaults, MicroBenchmark, SeenPool
from mdad.selection.registry import register
from mdad.selection.tinybenchmarks import fit_irt

# Randomesque exposure control (Kingsbury & Zara 1989): draw among this many best items.
RANDOMESQUE_TOP = 5


@dataclass(frozen=True, eq=False, kw_only=True)
class AdaptiveBenchmark(MicroBenchmark):
    """An adaptive test over the seen pool: `items` are the candidate items (all of
    the pool), `length` the items each model answers.

    Attributes
    ----------
    discrimination, difficulty : arrays of shape (n_items,), the 1-D 2PL parameters.
    length : items per model.
    top : each item is drawn among the `top` most informative (1: the best).
    seed : seed of those draws (unused when `top` is 1).
    """

    kind: ClassVar[str] = "adaptive"

    discrimination: np.ndarray
    difficulty: np.ndarray
    length: int
    top: int = 1
    seed: int = 0

    def estimate(self, scores: np.ndarray) -> np.ndarray:
        return self.estimate_with_exposure(scores)[0]

    def estimate_with_exposure(self, scores: np.ndarray) -> tuple[np.ndarray, ItemExposure]:
        """Each model's adaptive estimate from `scores` (n_models, n_items), reading
        only the items it is given, and which items the models saw."""
        answers = np.asarray(scores)[:, self.items]
        rng = np.random.default_rng(self.seed) if self.top > 1 else None
        run = administer(answers, self.discrimination, self.difficulty, self.length,
                         top=self.top, rng=rng)
        n_models = answers.shape[0]
        if n_models == 0:
            return run.estimates, ItemExposure(0, float("nan"))
        uses = np.bincount(run.items.ravel(), minlength=self.items.size)
        return run.estimates, ItemExposure(int(np.count_nonzero(uses)),
                                           float(uses.max(initial=0) / n_models))

    def to_file(self) -> dict[str, Any]:
        """The item parameters and the test's rules (items are the file's items)."""
        return {"kind": self.kind, "discrimination": self.discrimination.tolist(),
                "difficulty": self.difficulty.tolist(), "length": self.length,
                "top": self.top, "seed": self.seed}

    @classmethod
    def from_file(cls, data: dict[str, Any], size: int) -> AdaptiveBenchmark:
        discrimination = np.asarray(data["discrimination"], dtype=np.float64)
        difficulty = np.asarray(data["difficulty"], dtype=np.float64)
        if discrimination.shape != (size,) or difficulty.shape != (size,):
            raise ValueError(f"item parameters for {size} items expected")
        return cls(np.arange(size), discrimination=discrimination, difficulty=difficulty,
                   length=int(data["length"]), top=int(data["top"]), seed=int(data["seed"]))


@register("adaptive")
class Adaptive(MethodDefaults):
    """Computerized adaptive testing: a 1-D 2PL fit on the sources, maximum-information
    items at the current MAP ability, the predicted accuracy on the seen pool."""

    display_name: ClassVar[str] = "Adaptive (CAT)"
    colour: ClassVar[str] = "#882255"  # Paul Tol's wine: the Okabe-Ito colours are taken
    line_style: ClassVar[str] = "-"
    min_sources: ClassVar[int] = 2  # an IRT fit needs two models
    static: ClassVar[bool] = False
    estimators: ClassVar[tuple[type[MicroBenchmark], ...]] = (AdaptiveBenchmark,)
    libraries: ClassVar[tuple[str, ...]] = ("scipy.optimize", "scipy.special")
    top: ClassVar[int] = 1

    @classmethod
    def max_size_for(cls, subtask_sizes: np.ndarray) -> int:
        """The whole pool, or nothing below two items (an IRT fit needs two)."""
        n_items = int(np.sum(subtask_sizes))
        return n_items if n_items >= 2 else 0

    def select(self, pool: SeenPool, size: int, *, rng: np.random.Generator) -> MicroBenchmark:
        model = pool.shared("irt-2pl-d1", lambda stream: fit_irt(pool.correctness, 1, stream))
        return AdaptiveBenchmark(
            np.arange(pool.n_items), discrimination=model.discrimination_[:, 0],
            difficulty=model.difficulty_, length=size, top=self.top,
            seed=int(rng.integers(2**63 - 1)) if self.top > 1 else 0)


@register("adaptive-randomesque")
class AdaptiveRandomesque(Adaptive):
    """The same test, each item drawn at random among the 5 most informative, so that
    no item is shown to every model."""

    display_name: ClassVar[str] = "Adaptive, randomesque"
    line_style: ClassVar[str] = "--"
    top: ClassVar[int] = RANDOMESQUE_TOP
