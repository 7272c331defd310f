"""A toy selection method from outside the mdad package, in one file: everything mdad
knows about it is on its class, and it reaches mdad only through the ``mdad.methods``
entry point (see the dist-info folder beside this file)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from mdad.selection import MethodDefaults, MicroBenchmark, SeenPool

SHRINK = 0.75


@dataclass(frozen=True, eq=False, kw_only=True)
class ShrunkMean(MicroBenchmark):
    """The plain mean on the items pulled towards `prior`, the source models' mean
    accuracy: ``SHRINK * mean + (1 - SHRINK) * prior``."""

    kind: ClassVar[str] = "toy-shrunk-mean"

    prior: float
    shrink: float = SHRINK

    def estimate(self, scores: np.ndarray) -> np.ndarray:
        mean = np.asarray(scores[:, self.items], dtype=np.float64).mean(axis=1)
        return self.shrink * mean + (1 - self.shrink) * self.prior

    def to_file(self) -> dict[str, Any]:
        return {"kind": self.kind, "prior": self.prior, "shrink": self.shrink}

    @classmethod
    def from_file(cls, data: dict[str, Any], size: int) -> ShrunkMean:
        return cls(np.arange(size), prior=float(data["prior"]), shrink=float(data["shrink"]))


class ToyMethod(MethodDefaults):
    """Every other item from a random start, estimated by a mean shrunk towards the
    sources' mean accuracy."""

    display_name: ClassVar[str] = "Toy (shrunk mean)"
    colour: ClassVar[str] = "#123456"
    line_style: ClassVar[str] = "-."
    estimators: ClassVar[tuple[type[MicroBenchmark], ...]] = (ShrunkMean,)

    @classmethod
    def max_size_for(cls, subtask_sizes: np.ndarray) -> int:
        return int(np.sum(subtask_sizes)) // 2

    def select(self, pool: SeenPool, size: int, *, rng: np.random.Generator) -> MicroBenchmark:
        start = int(rng.integers(pool.n_items - 2 * (size - 1)))
        items = start + 2 * np.arange(size)
        prior = float(np.asarray(pool.correctness, dtype=np.float64).mean())
        return ShrunkMean(items.astype(np.int64), prior=prior)
