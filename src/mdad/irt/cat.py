"""Computerized adaptive testing on a 2PL model, for many examinees at once.

The model is `mdad.irt`'s: ``P(correct) = sigmoid(theta . a_j - D b_j)`` with
abilities in D dimensions (D = 1 is the textbook unidimensional 2PL,
``sigmoid(a theta - b)``). Each examinee starts at the prior mean ability 0. At every
step it answers the unused item that adds the most to the determinant of its
posterior information at its current ability (Segall 1996; for D = 1 this is the item
with the largest Fisher information ``a**2 P (1 - P)``), or one drawn at random among
the `top` best, to spread exposure; then its ability is updated to the MAP estimate
under a standard normal prior, by Newton steps with a backtracking line search
(`posterior_ability`; in a session, compiled: `mdad.irt._cat_pass`). All examinees
advance one item per step: numpy's loops run over steps and Newton iterations, never
over examinees or items.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from mdad.irt.model import line_search, softplus_and_sigmoid

# Newton steps on the ability stop when a step falls below this, taken (convergence is
# quadratic: the mode is then exact to about its square).
_NEWTON_TOLERANCE = 1e-5
_NEWTON_MAX_STEPS = 100
_MAX_STEP = 2.0  # damping: no step moves an ability further than this


def sigmoid(z: np.ndarray) -> np.ndarray:
    """The logistic function ``1 / (1 + exp(-z))``, without overflow for any z: the one
    logistic of the adaptive tests, in the study and in practice.

    A new float64 array of z's shape (0-d for a number). Within 2.3e-16 of scipy's
    `expit` everywhere. Where numpy has no vector exp and tanh for float64 (a CPU
    without AVX-512), exp costs 6 ns a value and tanh 15: this form is then twice as
    fast as ``(1 + tanh(z / 2)) / 2`` and 1.2 times as fast as expit (2026-12-07,
    an AMD EPYC); where it has both, about as fast.
    """
    out = np.negative(z, out=np.empty(np.shape(z)))
    np.minimum(out, 709.0, out=out)  # exp(709) is finite: no overflow warning
    np.exp(out, out=out)
    out += 1.0
    return np.divide(1.0, out, out=out)


def _as_matrix(discrimination: np.ndarray) -> np.ndarray:
    """Discriminations as (n_items, D): a vector is the unidimensional model's."""
    a = np.asarray(discrimination, dtype=np.float64)
    return a[:, None] if a.ndim == 1 else a


def fisher_information(ability: np.ndarray, discrimination: np.ndarray,
                       difficulty: np.ndarray) -> np.ndarray:
    """Unidimensional item information ``a**2 P (1 - P)``, shape (n_examinees,
    n_items), of abilities (n_examinees,) on items with discriminations and
    difficulties (n_items,)."""
    p = sigmoid(ability[:, None] * discrimination[None, :] - difficulty[None, :])
    return discrimination[None, :] ** 2 * p * (1.0 - p)


def _outer(a: np.ndarray) -> np.ndarray:
    """Each item's a a', flattened: shape (..., D*D) from `a` of shape (..., D)."""
    return (a[..., :, None] * a[..., None, :]).reshape(*a.shape[:-1], a.shape[-1] ** 2)


def _precision(p: np.ndarray, a: np.ndarray) -> np.ndarray:
    """I + sum_j P_j (1 - P_j) a_j a_j', (n, D, D), from P (n, k) and `a` (n, k, D)."""
    n, _, dims = a.shape
    # one batched product of the weights with the outer products: 30% faster than
    # (a' * w) @ a, whose weighted copy is strided
    information = (((p * (1.0 - p))[:, None, :]) @ _outer(a)).reshape(n, dims, dims)
    return information + np.eye(dims)


def posterior_ability(discrimination: np.ndarray, difficulty: np.ndarray,
                      answers: np.ndarray, start: np.ndarray | None = None
                      ) -> tuple[np.ndarray, np.ndarray]:
    """MAP abilities under a N(0, I) prior from each examinee's own items, and their
    posterior covariance. (`mdad.irt.map_ability` does the same from a models x items
    matrix of responses; both take difficulties, as every public function of
    `mdad.irt` does: the offset D b is computed inside.)

    Newton's method with a backtracking line search: each step, damped to at most 2
    long, is halved until the log posterior rises (Armijo's condition), so that it
    reaches the mode from any start (plain damped steps can circle it for ever: from 0,
    3 items in 5 dimensions did). It stops when a step is shorter than 1e-5, taken;
    the mode is then exact to about that squared. A session's steps are the same,
    compiled (`mdad.irt._cat_pass`).

    Parameters
    ----------
    discrimination : array of shape (n_examinees, k, D)
        The discriminations of the k items each examinee answered (k may be 0).
    difficulty : array of shape (n_examinees, k), the difficulties of those items.
    answers : array of shape (n_examinees, k), scores in [0, 1] (fractions act as
        soft labels).
    start : array of shape (n_examinees, D), where Newton's method starts (default
        0); the mode does not depend on it (the log posterior is strictly concave).

    Returns
    -------
    ability : array of shape (n_examinees, D)
    covariance : array of shape (n_examinees, D, D), the inverse posterior
        information at the mode (prior included).
    """
    a = np.asarray(discrimination, dtype=np.float64)
    c = a.shape[2] * np.asarray(difficulty, dtype=np.float64)  # the offset D b
    theta = (np.zeros((a.shape[0], a.shape[2])) if start is None
             else np.array(start, dtype=np.float64))
    y = np.asarray(answers, dtype=np.float64)
    value, p = _log_posterior(theta, a, c, y)
    for _ in range(_NEWTON_MAX_STEPS):
        precision = _precision(p, a)
        gradient = ((y - p)[:, None, :] @ a)[:, 0, :] - theta
        step = np.linalg.solve(precision, gradient[..., None])[..., 0]
        norm = np.linalg.norm(step, axis=1)
        step *= np.minimum(1.0, _MAX_STEP / np.maximum(norm, 1e-300))[:, None]
        theta, value, p = line_search(
            theta, step, (gradient * step).sum(axis=1), norm < _NEWTON_TOLERANCE, value,
            lambda points, rows: _log_posterior(points, a[rows], c[rows], y[rows]))
        if norm.max(initial=0.0) < _NEWTON_TOLERANCE:
            break
    return theta, np.linalg.inv(_precision(p, a))


def _log_posterior(theta: np.ndarray, a: np.ndarray, c: np.ndarray, y: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Each examinee's log posterior at `theta` (n, D), up to a constant, shape (n,),
    and P (n, k) there, from `a` (n, k, D), offsets `c` and answers `y` (n, k)."""
    z = (a @ theta[:, :, None])[:, :, 0] - c
    softplus, p = softplus_and_sigmoid(z)
    return (y * z - softplus).sum(axis=1) - 0.5 * (theta * theta).sum(axis=1), p


def next_items(ability: np.ndarray, covariance: np.ndarray, available: np.ndarray,
               discrimination: np.ndarray, difficulty: np.ndarray, *, top: int = 1,
               rng: np.random.Generator | None = None) -> np.ndarray:
    """Each examinee's next item: the available one that most raises the determinant
    of its posterior information, ``P (1 - P) a' Cov a`` (for D = 1 the largest
    Fisher information), or, with `top` > 1, one drawn uniformly among the `top` best.

    Parameters
    ----------
    ability : array of shape (n_examinees, D); covariance : (n_examinees, D, D)
    available : bool array of shape (n_examinees, n_items); each row has an item left.
    discrimination : array of shape (n_items, D); difficulty : (n_items,).
    top : how many of the best items to draw from (1: the best; ties go to the
        lowest index).
    rng : the generator of the draws (needed when `top` > 1).

    Returns
    -------
    int array of shape (n_examinees,)
    """
    gain = item_gain(ability, covariance, discrimination, difficulty)
    gain[~available] = -np.inf
    if top <= 1:
        return np.argmax(gain, axis=1)
    if rng is None:
        raise ValueError("rng is needed to draw among the top items")
    k = int(min(top, available.sum(axis=1).min()))
    # the k best as a sorted set, so the draw does not depend on argpartition's order
    best = np.sort(np.argpartition(-gain, k - 1, axis=1)[:, :k], axis=1)
    return best[np.arange(best.shape[0]), rng.integers(k, size=best.shape[0])]


def item_gain(ability: np.ndarray, covariance: np.ndarray, discrimination: np.ndarray,
              difficulty: np.ndarray) -> np.ndarray:
    """How much each item adds to the determinant of each examinee's posterior
    information, up to a positive factor per examinee: ``P (1 - P) a' Cov a`` (for D = 1,
    the Fisher information ``a**2 P (1 - P)``), shape (n_examinees, n_items); arguments
    as in `next_items`."""
    p = sigmoid(ability @ discrimination.T - discrimination.shape[1] * difficulty)
    if discrimination.shape[1] == 1:  # a' Cov a is the same positive factor for every item
        return discrimination[:, 0] ** 2 * p * (1.0 - p)
    # a' Cov a as one product with the items' outer products a a' (D*D columns): 6 times
    # faster than summing (discrimination @ covariance) * discrimination over D
    dims = discrimination.shape[1]
    spread = covariance.reshape(-1, dims * dims) @ _outer(discrimination).T
    return p * (1.0 - p) * spread


def best_items(ability: np.ndarray, covariance: np.ndarray, available: np.ndarray,
               discrimination: np.ndarray, difficulty: np.ndarray, k: int) -> np.ndarray:
    """Each examinee's `k` available items of largest `item_gain`, best first (ties to
    the lowest index: the first is `next_items`' choice), int array of shape
    (n_examinees, k); each row must have k items available."""
    gain = item_gain(ability, covariance, discrimination, difficulty)
    gain[~available] = -np.inf
    if k <= 0 or 4 * k > gain.shape[1]:
        return np.argsort(-gain, axis=1, kind="stable")[:, :k]
    # the k best by a partition, then sorted: 3 to 4 times faster than a whole sort
    best = np.argpartition(-gain, k - 1, axis=1)[:, :k]
    value = np.take_along_axis(gain, best, axis=1)
    best = np.take_along_axis(best, np.lexsort((best, -value), axis=1), axis=1)
    # a tie at the k-th value may have kept a higher index than the sort would: redo
    # those rows
    tied = np.count_nonzero(gain >= value.min(axis=1, keepdims=True), axis=1) > k
    if tied.any():
        best[tied] = np.argsort(-gain[tied], axis=1, kind="stable")[:, :k]
    return best


@dataclass(frozen=True, eq=False)
class AdaptiveRun:
    """What `administer` gives back.

    Attributes
    ----------
    estimates : array of shape (n_examinees,), the predicted accuracy on all items:
        answered items as answered, the others at their IRT probability.
    ability : array of shape (n_examinees, D), the final MAP ability.
    covariance : array of shape (n_examinees, D, D), its posterior covariance.
    items : int array of shape (n_examinees, n_steps), the items in the order given.
    """

    estimates: np.ndarray
    ability: np.ndarray
    covariance: np.ndarray
    items: np.ndarray

    @property
    def standard_error(self) -> np.ndarray:
        """Standard error of the ability, shape (n_examinees,) (for D > 1, of its
        first dimension)."""
        return np.sqrt(self.covariance[:, 0, 0])


def predicted_accuracy(ability: np.ndarray, discrimination: np.ndarray,
                       difficulty: np.ndarray, items: np.ndarray, answers: np.ndarray
                       ) -> np.ndarray:
    """Expected accuracy on all n_items items, shape (n_examinees,): the `answers`
    on each examinee's `items` (n_examinees, k) and the IRT probability elsewhere,
    for abilities (n_examinees, D), discriminations (n_items, D), difficulties (n_items,)."""
    probability = sigmoid(ability @ discrimination.T - discrimination.shape[1] * difficulty)
    probability[np.arange(ability.shape[0])[:, None], items] = answers
    return probability.mean(axis=1)


class AdaptiveSession:
    """Adaptive tests in progress for `n_examinees` examinees, one item per step.

    Parameters
    ----------
    discrimination : array of shape (n_items,) or (n_items, D)
    difficulty : array of shape (n_items,)
    n_examinees : examinees tested at once.
    top, rng : see `next_items`; the session draws from `rng` as it goes.
    """

    def __init__(self, discrimination: np.ndarray, difficulty: np.ndarray, n_examinees: int,
                 *, top: int = 1, rng: np.random.Generator | None = None) -> None:
        self.discrimination = _as_matrix(discrimination)
        n_items, dims = self.discrimination.shape
        self.difficulty = np.asarray(difficulty, dtype=np.float64)
        self.offset = dims * self.difficulty
        self.top, self.rng = top, rng
        self.available = np.ones((n_examinees, n_items), dtype=bool)
        self.ability = np.zeros((n_examinees, dims))
        self.covariance = np.broadcast_to(np.eye(dims), (n_examinees, dims, dims)).copy()
        # what each examinee answered, in buffers filled step by step (columns past
        # `_steps` unused): no step copies or gathers the earlier ones again
        self._steps = 0
        self._given: dict[str, np.ndarray] = {
            "items": np.empty((n_examinees, 0), dtype=np.int64),
            "answers": np.empty((n_examinees, 0)), "a": np.empty((n_examinees, 0, dims)),
            "offset": np.empty((n_examinees, 0))}

    @property
    def n_steps(self) -> int:
        return self._steps

    @property
    def items(self) -> np.ndarray:
        """The items given, in order, int array of shape (n_examinees, n_steps)."""
        return self._given["items"][:, :self._steps]

    @property
    def answers(self) -> np.ndarray:
        """Their answers, shape (n_examinees, n_steps)."""
        return self._given["answers"][:, :self._steps]

    def _append(self, items: np.ndarray, answers: np.ndarray) -> None:
        """Write `items` and `answers` (n_examinees, m) after the given ones, growing the
        buffers (doubling) when full."""
        end = self._steps + items.shape[1]
        if end > self._given["items"].shape[1]:
            room = min(max(end, 2 * self._given["items"].shape[1], 16),
                       self.available.shape[1])
            for name, buffer in self._given.items():
                grown = np.empty((buffer.shape[0], room, *buffer.shape[2:]), buffer.dtype)
                grown[:, :self._steps] = buffer[:, :self._steps]
                self._given[name] = grown
        part = slice(self._steps, end)
        self._given["items"][:, part] = items
        self._given["answers"][:, part] = answers
        self._given["a"][:, part] = self.discrimination[items]
        self._given["offset"][:, part] = self.offset[items]
        self._steps = end

    def choose(self) -> np.ndarray:
        """Each examinee's next item, shape (n_examinees,) (see `next_items`)."""
        return next_items(self.ability, self.covariance, self.available, self.discrimination,
                          self.difficulty, top=self.top, rng=self.rng)

    def choose_batch(self, k: int) -> np.ndarray:
        """Each examinee's next `k` items, chosen at once at its current ability (see
        `best_items`), shape (n_examinees, k); a session drawing among the top items
        chooses one at a time."""
        if self.top > 1:
            raise ValueError("a session that draws among its top items chooses one at a time")
        return best_items(self.ability, self.covariance, self.available, self.discrimination,
                          self.difficulty, k)

    def record(self, items: np.ndarray, answers: np.ndarray) -> None:
        """Each examinee answered `items` (n_examinees, m) with `answers` (same shape,
        scores in [0, 1]); its ability becomes the MAP estimate on all its answers."""
        items = np.asarray(items, dtype=np.int64)
        answers = np.asarray(answers, dtype=np.float64)
        n_examinees, n_items = self.available.shape
        if items.ndim != 2 or items.shape[0] != n_examinees or answers.shape != items.shape:
            raise ValueError(f"items and answers must have shape ({n_examinees}, m); got "
                             f"{items.shape} and {answers.shape}")
        rows = np.arange(n_examinees)[:, None]
        # checked before anything changes: an item given twice would overrun the buffers
        if items.size and (items.min() < 0 or items.max() >= n_items
                           or not self.available[rows, items].all()
                           or np.any(np.diff(np.sort(items, axis=1), axis=1) == 0)):
            raise ValueError(f"items must be indices in 0..{n_items - 1} that each "
                             "examinee has not been given yet")
        self.available[rows, items] = False
        self._append(items, answers)
        # compiled (`mdad.irt._cat_pass`): numpy's steps cost a dozen calls each on
        # arrays of a few numbers per examinee
        from mdad.irt._cat_pass import newton

        self.ability, self.covariance = newton(
            self._given["a"], self._given["offset"], self._given["answers"], self._steps,
            self.ability, tol=_NEWTON_TOLERANCE, max_steps=_NEWTON_MAX_STEPS,
            max_step=_MAX_STEP)

    def advance(self, scores: np.ndarray, n_steps: int) -> None:
        """Give `n_steps` more items, one at a time, reading the answers from `scores`
        (n_examinees, n_items); only the items given are read."""
        rows = np.arange(scores.shape[0])
        for _ in range(n_steps):
            chosen = self.choose()
            self.record(chosen[:, None], scores[rows, chosen][:, None])

    def accuracy(self) -> np.ndarray:
        """Each examinee's predicted accuracy now, shape (n_examinees,) (see
        `predicted_accuracy`)."""
        return predicted_accuracy(self.ability, self.discrimination, self.difficulty,
                                  self.items, self.answers)

    def result(self) -> AdaptiveRun:
        """The estimates now, with the covariance evaluated at the mode."""
        covariance = self.covariance
        if self._steps:
            a, offset = self._given["a"][:, :self._steps], self._given["offset"][:, :self._steps]
            p = sigmoid((a @ self.ability[:, :, None])[:, :, 0] - offset)
            covariance = np.linalg.inv(_precision(p, a))
        return AdaptiveRun(self.accuracy(), self.ability, covariance, self.items)

    def copy(self) -> AdaptiveSession:
        """An independent session in the same state (its generator copied too)."""
        twin = copy.copy(self)
        for name in ("available", "ability", "covariance"):
            setattr(twin, name, getattr(self, name).copy())
        # the answers so far only: a test resumed from it grows its own room
        twin._given = {name: buffer[:, :self._steps].copy()
                       for name, buffer in self._given.items()}
        twin.rng = copy.deepcopy(self.rng)
        return twin


def administer(scores: np.ndarray, discrimination: np.ndarray, difficulty: np.ndarray,
               n_steps: int, *, top: int = 1,
               rng: np.random.Generator | None = None) -> AdaptiveRun:
    """Give every examinee an adaptive test of `n_steps` items.

    Parameters
    ----------
    scores : array of shape (n_examinees, n_items)
        Each examinee's score on every item; only the items administered are read.
    discrimination : array of shape (n_items,) or (n_items, D)
    difficulty : array of shape (n_items,)
    n_steps : items per examinee, 0 to n_items.
    top, rng : see `next_items`.
    """
    n_items = scores.shape[1]
    if not 0 <= n_steps <= n_items:
        raise ValueError(f"n_steps must lie in 0..{n_items}; got {n_steps}")
    session = AdaptiveSession(discrimination, difficulty, scores.shape[0], top=top, rng=rng)
    session.advance(scores, n_steps)
    return session.result()
