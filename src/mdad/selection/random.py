"""The paper's three random micro-benchmarks, each estimated by the plain mean."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from mdad.grouping import shuffled_ranks
from mdad.selection.base import MethodDefaults, MicroBenchmark, SeenPool
from mdad.selection.registry import register


@register("random")
class UniformRandom(MethodDefaults):
    """`size` items drawn uniformly without replacement from the seen pool."""

    display_name: ClassVar[str] = "Random (uniform)"
    colour: ClassVar[str] = "#000000"
    line_style: ClassVar[str] = "-"
    in_paper: ClassVar[bool] = True
    analytic_mdad: ClassVar[str | None] = "uniform"

    def select(self, pool: SeenPool, size: int, *, rng: np.random.Generator) -> MicroBenchmark:
        return MicroBenchmark.plain_mean(rng.choice(pool.n_items, size, replace=False))


class _BySubtask(MethodDefaults):
    """A method that samples at random within subtasks: on one subtask, a simple
    random sample."""

    @classmethod
    def simple_random(cls, subtask_sizes: np.ndarray) -> bool:
        return np.asarray(subtask_sizes).size == 1


@register("subtask-equal")
class SubtaskEqual(_BySubtask):
    """floor(size / k) items from each of the k subtasks; the remainder goes one item
    each to distinct subtasks chosen at random."""

    display_name: ClassVar[str] = "Random (subtask, equal)"
    colour: ClassVar[str] = "#999999"
    line_style: ClassVar[str] = "-"
    in_paper: ClassVar[bool] = True
    analytic_mdad: ClassVar[str | None] = "stratified"

    @classmethod
    def max_size_for(cls, subtask_sizes: np.ndarray) -> int:
        """As many items from every subtask as the smallest holds."""
        sizes = np.asarray(subtask_sizes)
        return int(sizes.size * sizes.min()) if sizes.size else 0

    def select(self, pool: SeenPool, size: int, *, rng: np.random.Generator) -> MicroBenchmark:
        sizes = pool.subtask_sizes()
        n_subtasks = sizes.size
        per_subtask = np.full(n_subtasks, size // n_subtasks)
        per_subtask[rng.choice(n_subtasks, size % n_subtasks, replace=False)] += 1
        order, rank = shuffled_ranks(pool.subtask_codes, rng=rng)
        chosen = order[rank < per_subtask[pool.subtask_codes[order]]]
        return MicroBenchmark.plain_mean(np.sort(chosen))


@register("subtask-proportional")
class SubtaskProportional(_BySubtask):
    """Items drawn without replacement with probability proportional to 1 / (size of
    the item's subtask in the seen pool), so each subtask is equally likely per draw."""

    display_name: ClassVar[str] = "Random (subtask, proportional)"
    colour: ClassVar[str] = "#999999"
    line_style: ClassVar[str] = "--"

    def select(self, pool: SeenPool, size: int, *, rng: np.random.Generator) -> MicroBenchmark:
        weights = 1.0 / pool.subtask_sizes()[pool.subtask_codes]
        items = rng.choice(pool.n_items, size, replace=False, p=weights / weights.sum())
        return MicroBenchmark.plain_mean(items)
