"""The shared design of one run: which models are targets and sources, which items
are seen and unseen. All methods and sizes of a run use the same design."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mdad.errors import ConfigError, check_whole
from mdad.grouping import checked_codes, shuffled_ranks
from mdad.study.seeds import run_rng


@dataclass(frozen=True, eq=False)
class RunDesign:
    """Indices into the dataset's models and items for one run.

    Attributes
    ----------
    targets : int array of shape (n_targets,)
        Target models, in draw order (pairs are (i, j) with i < j in this order).
    source_order : int array of shape (n_models - n_targets,)
        The non-target models in random order; the first S are the sources for a
        study with S source models, so smaller source sets nest in larger ones.
    seen, unseen : int arrays
        Item indices, grouped by subtask in order of the subtasks' codes.
    """

    run: int
    targets: np.ndarray
    source_order: np.ndarray
    seen: np.ndarray
    unseen: np.ndarray

    def sources(self, n_sources: int) -> np.ndarray:
        return self.source_order[:n_sources]


def split_seen_unseen(
    subtask_codes: np.ndarray, *, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Shuffle each subtask's items; floor(half) go to the seen pool, the rest unseen.

    Parameters
    ----------
    subtask_codes : int array of shape (n_items,)

    Returns
    -------
    seen, unseen : int arrays of item indices, grouped by subtask code.
    """
    subtask_codes = checked_codes(subtask_codes)
    order, rank = shuffled_ranks(subtask_codes, rng=rng)
    sizes = np.bincount(subtask_codes)
    in_seen = rank < np.repeat(sizes // 2, sizes)
    return order[in_seen], order[~in_seen]


def seen_pool_size(subtask_codes: np.ndarray) -> int:
    """How many items the seen pool holds: the sum over subtasks of floor(size / 2)."""
    return int((np.bincount(checked_codes(subtask_codes)) // 2).sum())



def draw_run(
    n_models: int,
    subtask_codes: np.ndarray,
    *,
    seed: int,
    run: int,
    n_targets: int,
    fixed_targets: np.ndarray | None = None,
) -> RunDesign:
    """Draw run `run`'s design from its own generator.

    Targets are `n_targets` models drawn uniformly, or `fixed_targets` when given;
    the remaining models are shuffled into `source_order`.
    """
    check_whole(n_models, "n_models")
    rng = run_rng(seed, run)
    if fixed_targets is None:
        check_whole(n_targets, "n_targets", minimum=0, maximum=n_models)
        targets = rng.choice(n_models, n_targets, replace=False)
    else:
        targets = np.asarray(fixed_targets, dtype=np.int64)
        if (np.unique(targets).size != targets.size or (targets < 0).any()
                or (targets >= n_models).any()):
            raise ConfigError(f"fixed_targets must be distinct model indices in "
                              f"0..{n_models - 1}", parameters=("fixed_targets",))
    rest = np.setdiff1d(np.arange(n_models), targets)
    source_order = rng.permutation(rest)
    seen, unseen = split_seen_unseen(subtask_codes, rng=rng)
    return RunDesign(run, targets, source_order, seen, unseen)
