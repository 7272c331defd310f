"""Computerized adaptive testing on a unidimensional 2PL model, for many examinees at once.

Each examinee starts at the prior mean ability 0. At every step it answers the unused
item with the largest Fisher information ``a**2 P (1 - P)`` at its current ability
(or one drawn at random among the `top` most informative, to spread item exposure),
and its ability is updated to the MAP estimate under a standard normal prior. Every
examinee advances one item per step: the loops run over steps, never over examinees
or items.

The model is ``P(correct) = sigmoid(a * theta - b)``: `mdad.irt`'s parametrisation
with one dimension.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Newton steps on the ability stop when the largest change falls below this.
_NEWTON_TOLERANCE = 1e-10
_NEWTON_MAX_STEPS = 100
_MAX_STEP = 2.0  # damping: no step moves an ability by more than this


def _sigmoid(z: np.ndarray) -> np.ndarray:
    from scipy.special import expit

    return expit(z)


def fisher_information(ability: np.ndarray, discrimination: np.ndarray,
                       difficulty: np.ndarray) -> np.ndarray:
    """Item information ``a**2 P (1 - P)``, shape (n_examinees, n_items), of abilities
    (n_examinees,) on items with discriminations and difficulties (n_items,)."""
    p = _sigmoid(ability[:, None] * discrimination[None, :] - difficulty[None, :])
    return discrimination[None, :] ** 2 * p * (1.0 - p)


def map_ability_1d(discrimination: np.ndarray, difficulty: np.ndarray, answers: np.ndarray,
                   start: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """MAP abilities under a N(0, 1) prior from each examinee's own items.

    Parameters
    ----------
    discrimination, difficulty, answers : arrays of shape (n_examinees, k)
        The parameters of the k items each examinee answered, and its scores on them
        in [0, 1] (fractions act as soft labels). k may be 0.
    start : array of shape (n_examinees,), optional
        Where Newton's method starts (default 0); the result does not depend on it.

    Returns
    -------
    ability : array of shape (n_examinees,)
    standard_error : array of shape (n_examinees,), 1 / sqrt(posterior information)
        at the mode (prior included, so at most 1).
    """
    theta = np.zeros(answers.shape[0]) if start is None else np.array(start, dtype=np.float64)
    a, b, y = (np.asarray(v, dtype=np.float64) for v in (discrimination, difficulty, answers))
    for _ in range(_NEWTON_MAX_STEPS):
        p = _sigmoid(theta[:, None] * a - b)
        gradient = (a * (y - p)).sum(axis=1) - theta
        information = (a * a * p * (1.0 - p)).sum(axis=1) + 1.0
        step = np.clip(gradient / information, -_MAX_STEP, _MAX_STEP)
        theta = theta + step
        if np.max(np.abs(step), initial=0.0) < _NEWTON_TOLERANCE:
            break
    p = _sigmoid(theta[:, None] * a - b)
    information = (a * a * p * (1.0 - p)).sum(axis=1) + 1.0
    return theta, 1.0 / np.sqrt(information)


def next_items(ability: np.ndarray, available: np.ndarray, discrimination: np.ndarray,
               difficulty: np.ndarray, *, top: int = 1,
               rng: np.random.Generator | None = None) -> np.ndarray:
    """Each examinee's next item: the available one with the most information at its
    ability, or, with `top` > 1, one drawn uniformly among its `top` most informative.

    Parameters
    ----------
    ability : array of shape (n_examinees,)
    available : bool array of shape (n_examinees, n_items); each row has an item left.
    discrimination, difficulty : arrays of shape (n_items,)
    top : how many of the most informative items to draw from (1: the best; ties go
        to the lowest index).
    rng : the generator of the draws (needed when `top` > 1).

    Returns
    -------
    int array of shape (n_examinees,)
    """
    information = fisher_information(ability, discrimination, difficulty)
    information[~available] = -np.inf
    if top <= 1:
        return np.argmax(information, axis=1)
    if rng is None:
        raise ValueError("rng is needed to draw among the top items")
    k = int(min(top, available.sum(axis=1).min()))
    # the k best as a sorted set, so the draw does not depend on argpartition's order
    best = np.sort(np.argpartition(-information, k - 1, axis=1)[:, :k], axis=1)
    return best[np.arange(best.shape[0]), rng.integers(k, size=best.shape[0])]


@dataclass(frozen=True, eq=False)
class AdaptiveRun:
    """What `administer` gives back.

    Attributes
    ----------
    estimates : array of shape (n_examinees,), predicted accuracy on all items:
        answered items count as answered, the others at their IRT probability.
    ability, standard_error : arrays of shape (n_examinees,), the final MAP ability.
    items : int array of shape (n_examinees, n_steps), the items in the order given.
    """

    estimates: np.ndarray
    ability: np.ndarray
    standard_error: np.ndarray
    items: np.ndarray


def predicted_accuracy(ability: np.ndarray, discrimination: np.ndarray,
                       difficulty: np.ndarray, items: np.ndarray,
                       answers: np.ndarray) -> np.ndarray:
    """Expected accuracy on all n_items items, shape (n_examinees,): the answers on
    each examinee's `items` (n_examinees, k) and the IRT probability on the rest."""
    probability = _sigmoid(ability[:, None] * discrimination[None, :] - difficulty[None, :])
    rows = np.arange(ability.shape[0])[:, None]
    probability[rows, items] = answers
    return probability.mean(axis=1)


def administer(scores: np.ndarray, discrimination: np.ndarray, difficulty: np.ndarray,
               n_steps: int, *, top: int = 1,
               rng: np.random.Generator | None = None) -> AdaptiveRun:
    """Give every examinee an adaptive test of `n_steps` items.

    Parameters
    ----------
    scores : array of shape (n_examinees, n_items)
        Each examinee's score on every item; only the items administered are read.
    discrimination, difficulty : arrays of shape (n_items,)
    n_steps : items per examinee, 0 to n_items.
    top, rng : see `next_items`.
    """
    n_examinees, n_items = scores.shape
    if not 0 <= n_steps <= n_items:
        raise ValueError(f"n_steps must lie in 0..{n_items}; got {n_steps}")
    a = np.asarray(discrimination, dtype=np.float64)
    b = np.asarray(difficulty, dtype=np.float64)
    rows = np.arange(n_examinees)
    available = np.ones((n_examinees, n_items), dtype=bool)
    items = np.empty((n_examinees, n_steps), dtype=np.int64)
    answers = np.empty((n_examinees, n_steps))
    ability = np.zeros(n_examinees)
    error = np.ones(n_examinees)
    for step in range(n_steps):
        chosen = next_items(ability, available, a, b, top=top, rng=rng)
        items[:, step] = chosen
        answers[:, step] = scores[rows, chosen]
        available[rows, chosen] = False
        given = items[:, : step + 1]
        ability, error = map_ability_1d(a[given], b[given], answers[:, : step + 1], ability)
    return AdaptiveRun(predicted_accuracy(ability, a, b, items, answers), ability, error,
                       items)
