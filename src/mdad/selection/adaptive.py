"""Adaptive testing as a study method: every target gets its own items.

The source models fit a 2PL model on the seen pool, unidimensional by default (once
per run and source count, shared by every size). Each target then takes a computerized adaptive
test of `size` items (`mdad.irt.cat`): it starts at the prior mean ability, the
sources' mean (the fit is standardised: its prior is the sources' spread), answers
the unused item with the most Fisher information at its current ability, and its
ability is updated by MAP after each answer. Its estimate is its predicted accuracy
on the whole seen pool: answered items as answered, the others at their IRT
probability. Selection reads only the source models; the test reads a target's
answers only on the items it administers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from mdad.irt.cat import AdaptiveSession
from mdad.selection.base import ItemExposure, MethodDefaults, MicroBenchmark, SeenPool
from mdad.selection.registry import register
from mdad.selection.tinybenchmarks import fit_irt

# Randomesque exposure control (Kingsbury & Zara 1989): draw among this many best items.
RANDOMESQUE_TOP = 5


class SessionCache:
    """The tests in progress on one seen pool, by the answers they read.

    A cell of n items resumes the longest test of at most n items on the same
    answers, so a run's sizes cost the largest size's steps, not their sum; each test
    from the start draws from a generator seeded with `seed`, so a resumed test is
    bit for bit the one started afresh.
    """

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._sessions: dict[bytes, list[AdaptiveSession]] = {}

    def run(self, benchmark: AdaptiveBenchmark, answers: np.ndarray) -> AdaptiveSession:
        import hashlib  # here: `mdad methods` imports this module, and hashlib costs 4 ms

        key = hashlib.blake2b(np.ascontiguousarray(answers).tobytes()
                              + repr((answers.shape, answers.dtype.str)).encode()).digest()
        started = self._sessions.setdefault(key, [])
        shorter = [s for s in started if s.n_steps <= benchmark.length]
        if shorter:
            session = max(shorter, key=lambda s: s.n_steps).copy()
        else:
            session = benchmark.new_session(answers.shape[0], self.seed)
        session.advance(answers, benchmark.length - session.n_steps)
        started.append(session)
        return session


@dataclass(frozen=True, eq=False, kw_only=True)
class AdaptiveBenchmark(MicroBenchmark):
    """An adaptive test over the seen pool: `items` are the candidate items (all of
    the pool), `length` the items each model answers.

    Attributes
    ----------
    discrimination : array of shape (n_items,) for the unidimensional 2PL, or
        (n_items, D); difficulty : array of shape (n_items,).
    length : items per model.
    top : each item is drawn among the `top` most informative (1: the best).
    seed : seed of those draws (unused when `top` is 1).
    sessions : tests already under way on the same pool (a study's sizes share them).
    """

    kind: ClassVar[str] = "adaptive"

    discrimination: np.ndarray
    difficulty: np.ndarray
    length: int
    top: int = 1
    seed: int = 0
    sessions: SessionCache | None = field(default=None, repr=False)

    def new_session(self, n_models: int, seed: int | None = None) -> AdaptiveSession:
        """A test of nothing yet for `n_models` models."""
        rng = np.random.default_rng(self.seed if seed is None else seed) if self.top > 1 else None
        return AdaptiveSession(self.discrimination, self.difficulty, n_models, top=self.top,
                               rng=rng)

    def estimate(self, scores: np.ndarray) -> np.ndarray:
        return self.estimate_with_exposure(scores)[0]

    def estimate_with_exposure(self, scores: np.ndarray) -> tuple[np.ndarray, ItemExposure]:
        """Each model's adaptive estimate from `scores` (n_models, n_items), reading
        only the items it is given, and which items the models saw."""
        answers = np.asarray(scores)[:, self.items]
        if self.sessions is not None:
            session = self.sessions.run(self, answers)
        else:
            session = self.new_session(answers.shape[0])
            session.advance(answers, self.length)
        run = session.result()
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
        if discrimination.shape[:1] != (size,) or difficulty.shape != (size,):
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
    dims: ClassVar[int] = 1

    @classmethod
    def max_size_for(cls, subtask_sizes: np.ndarray) -> int:
        """The whole pool, or nothing below two items (an IRT fit needs two)."""
        n_items = int(np.sum(subtask_sizes))
        return n_items if n_items >= 2 else 0

    def select(self, pool: SeenPool, size: int, *, rng: np.random.Generator) -> MicroBenchmark:
        model = pool.shared(f"irt-2pl-d{self.dims}",
                            lambda stream: fit_irt(pool.correctness, self.dims, stream))
        # Each target starts at the sources' mean ability, with their spread as its prior.
        model = model.standardised()
        discrimination = model.discrimination_
        # one cache per pool and test: its seed comes from the pool, so all sizes share
        # the draws of a randomesque test
        sessions = pool.shared(f"adaptive-sessions-d{self.dims}-top{self.top}",
                               lambda stream: SessionCache(int(stream.integers(2**63 - 1))))
        return AdaptiveBenchmark(
            np.arange(pool.n_items),
            discrimination=discrimination[:, 0] if self.dims == 1 else discrimination,
            difficulty=model.difficulty_, length=size, top=self.top, seed=sessions.seed,
            sessions=sessions)


@register("adaptive-randomesque")
class AdaptiveRandomesque(Adaptive):
    """The same test, each item drawn at random among the 5 most informative, so that
    no item is shown to every model."""

    display_name: ClassVar[str] = "Adaptive, randomesque"
    line_style: ClassVar[str] = "--"
    top: ClassVar[int] = RANDOMESQUE_TOP


@register("adaptive-md")
class AdaptiveMultidimensional(Adaptive):
    """The same test on a 3-dimensional 2PL fit: each item the one that most raises
    the determinant of the posterior information (Segall 1996), the ability a MAP
    vector. On GPQA it ranks close models far better than the 1-D test at 10 to 50
    items (see docs/explanation/adaptive.md)."""

    display_name: ClassVar[str] = "Adaptive, 3-D"
    line_style: ClassVar[str] = ":"
    dims: ClassVar[int] = 3
