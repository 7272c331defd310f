"""An adaptive test's own model, chosen by cross-validation on reference models.

For a budget of n items, candidate tests (a dimension D of the 2PL fit and a prior
scale tau: abilities ~ N(0, tau^2 I) on the standardised fit, the same as
discriminations scaled by tau under N(0, I)) are given to held-out reference models,
each fold's tests by a fit on the other folds' models, on their real answers. After
each checkpoint (number of answers) the estimate errs by e = predicted accuracy -
accuracy on all items; a candidate's error is its root mean square error over the
held-out models at n answers, or at an earlier checkpoint on `series` (its stop) that
errs less by more than twice the standard error of the paired difference (a test that
gives fewer items than it may must earn it). The dimension with the least error at
the first prior scale is kept, then the other
prior scales are tried at it (a coordinate search: half the tests of the whole grid),
and the least error of all is the choice (ties to the candidate tried first).

The held-out tests take their items in batches along a path of answer counts: the
practitioner's test uses its own batch size; the study's tests, which give one item
at a time, are cross-validated along the 1-1.6-2-2.5-4-5-6.3 series (`series`), 15
to 20 times cheaper than one item at a time, so the choice is made on a slightly
coarser test than the one given. Sessions advance along the path once and serve every
budget: a budget off the path is scored from the path's last point before it (a copy
of the session, or a new one brought there when the session went further), so the
result never depends on which budgets were asked first.

The error chosen is the least of several, so a little optimistic; the intervals of the
chosen test are measured afresh on held-out models (`mdad.practice.round_trip`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mdad.irt.cat import AdaptiveSession

DIMS = (1, 2, 3, 5)  # candidate dimensions
# candidate prior standard deviations (in the reference models' spread): the dimension
# is chosen at the first, then the others are tried at that dimension
PRIOR_SCALES = (1.0, 0.5, 2.0)
_MANTISSAS = (1.0, 1.6, 2.0, 2.5, 4.0, 5.0, 6.3)


def series(limit: int) -> np.ndarray:
    """The answer counts the study's held-out tests are scored at, up to `limit`:
    1, 2, 3, 4, 5, 6, 10, 16, 20, 25, 40, 50, 63, 100, 160, 200, ... (about seven per
    decade; the study's default sizes all lie on it). Int array, ascending."""
    values = {1, 2, 3, 4, 5, 6}
    scale = 10
    while scale <= limit:
        values.update(round(m * scale) for m in _MANTISSAS)
        scale *= 10
    return np.array(sorted(v for v in values if v <= limit), dtype=np.int64)


@dataclass(frozen=True)
class AdaptiveChoice:
    """The test cross-validation chose for a budget.

    Attributes
    ----------
    dims : the IRT model's dimension; prior_scale : the abilities' prior standard
        deviation, in units of the reference models' spread.
    stop : items to give, at most `budget`; budget : the most items the test may give.
    error : the held-out root mean square error at the choice (accuracy, a fraction):
        the least of the candidates', so a little optimistic (chosen on the same tests);
        the round trips of held-out models measure the chosen test's intervals afresh.
    candidates : for every (dims, prior scale) tried, (dims, prior scale, its best stop,
        its error there), in the order tried.
    folds, models : the cross-validation's folds and held-out reference models.
    """

    dims: int
    prior_scale: float
    stop: int
    budget: int
    error: float
    candidates: tuple[tuple[int, float, int, float], ...]
    folds: int
    models: int

    def describe(self) -> str:
        """One line: the choice and the evidence behind it."""
        return (f"{self.dims}-D IRT, prior sd {self.prior_scale:g}, stop after {self.stop} of "
                f"{self.budget} items (held-out error {100 * self.error:.1f} points, the "
                f"least of "
                f"{len(self.candidates)} candidates cross-validated in {self.folds} folds "
                f"over {self.models} reference models)")

    def to_json(self) -> dict[str, Any]:
        return {"dims": self.dims, "prior_scale": self.prior_scale, "stop": self.stop,
                "budget": self.budget, "error": self.error,
                "candidates": [list(c) for c in self.candidates], "folds": self.folds,
                "models": self.models}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AdaptiveChoice:
        """From `to_json`'s dict (checked by the caller's schema)."""
        return cls(int(data["dims"]), float(data["prior_scale"]), int(data["stop"]),
                   int(data["budget"]), float(data["error"]),
                   tuple((int(d), float(s), int(k), float(e))
                         for d, s, k, e in data["candidates"]),
                   int(data["folds"]), int(data["models"]))


class CrossValidatedTests:
    """Held-out adaptive tests of every candidate, scored along a path of answer
    counts (see the module docstring).

    Parameters
    ----------
    scores : array of shape (n_models, n_items), the reference models' answers (only
        the held-out models' rows are kept).
    folds : the held-out models of each fold (int arrays, disjoint).
    fit : fit(fold, dims) -> (discrimination (n_items, dims), difficulty (n_items,)),
        the standardised fit on models outside fold `fold`'s held-out ones; called once
        per fold and dimension, when first needed.
    path : the answer counts the sessions advance to, strictly ascending, from 0 or 1
        (default: `series`); a budget is scored at the path's counts below it and at
        itself.
    dims, prior_scales : the candidates.
    keep_sessions : keep each test to serve a larger budget later (a study's sizes);
        False drops it once scored (one budget: memory for one test at a time).
    """

    def __init__(self, scores: np.ndarray, folds: Sequence[np.ndarray],
                 fit: Callable[[int, int], tuple[np.ndarray, np.ndarray]], *,
                 path: Sequence[int] | None = None, dims: Sequence[int] = DIMS,
                 prior_scales: Sequence[float] = PRIOR_SCALES,
                 keep_sessions: bool = True) -> None:
        scores = np.asarray(scores)
        self.n_rows, n_items = scores.shape
        self.folds = [np.asarray(held, dtype=np.int64) for held in folds]
        self._answers = [scores[held].astype(np.float64) for held in self.folds]
        self.fit = fit
        self.path = series(n_items) if path is None else np.asarray(path, dtype=np.int64)
        if self.path.size == 0 or self.path[0] < 0 or np.any(np.diff(self.path) <= 0):
            raise ValueError("path must be answer counts >= 0, strictly ascending")
        self.dims, self.prior_scales = tuple(dims), tuple(prior_scales)
        self.keep_sessions = keep_sessions
        self._fits: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        self._sessions: dict[tuple[int, int, float], AdaptiveSession] = {}
        # (fold, dims, scale) -> {answers: estimates of the fold's models}; off-path
        # budgets apart, (fold, dims, scale, budget) -> their estimates
        self._estimates: dict[tuple[int, int, float], dict[int, np.ndarray]] = {}
        self._off_path: dict[tuple[int, int, float, int], np.ndarray] = {}

    @property
    def n_models(self) -> int:
        return int(sum(held.size for held in self.folds))

    def checkpoints(self, budget: int) -> np.ndarray:
        """The answer counts a `budget` is scored at: the path's below it, and itself."""
        return np.append(self.path[self.path < budget], budget)

    def estimates(self, dims: int, prior_scale: float, budget: int) -> np.ndarray:
        """Every held-out model's estimate at each checkpoint of `budget`, shape
        (n_checkpoints, n_models), models in the order of `scores` (a model in no fold
        is NaN)."""
        points = self.checkpoints(budget)
        out = np.full((points.size, self.n_rows), np.nan)
        for k, held in enumerate(self.folds):
            out[:, held] = self._curve(k, dims, prior_scale, budget)
        return out

    def squared_errors(self, dims: int, prior_scale: float, budget: int) -> np.ndarray:
        """Each held-out model's squared error at each checkpoint of `budget`, shape
        (n_checkpoints, n_held_out), folds in order (accuracy, a fraction, squared)."""
        error = np.hstack([self._curve(k, dims, prior_scale, budget) - answers.mean(axis=1)
                           for k, answers in enumerate(self._answers)])
        return error * error

    def error(self, dims: int, prior_scale: float, budget: int) -> np.ndarray:
        """The root mean square error over the held-out models at each checkpoint of
        `budget`, shape (n_checkpoints,)."""
        return np.sqrt(self.squared_errors(dims, prior_scale, budget).mean(axis=1))

    def best_stop(self, dims: int, prior_scale: float, budget: int) -> tuple[int, float]:
        """A candidate's stop and its error there: the budget, or the point of `series`
        below it (at least one answer) of least error, when that errs less than the
        budget by more than twice the standard error of the paired difference (about
        seven points per decade are tried, whatever the path: a test stops early only
        where the evidence is clear). A NaN error counts as infinite."""
        points = self.checkpoints(budget)
        squared = self.squared_errors(dims, prior_scale, budget)
        mean = squared.mean(axis=1)
        tried = (points > 0) & np.isin(points, series(budget)) & ~np.isnan(mean)
        k = points.size - 1
        if tried[:-1].any() and squared.shape[1] > 1:
            best = np.flatnonzero(tried)[np.argmin(mean[tried])]
            difference = squared[best] - squared[-1]
            if difference.mean() + 2 * difference.std(ddof=1) / np.sqrt(difference.size) < 0:
                k = best
        error = float(np.sqrt(mean[k]))
        return int(points[k]), (error if error == error else np.inf)

    def choose(self, budget: int) -> AdaptiveChoice:
        """The candidate and stop with the least held-out error for `budget` (see the
        module docstring for the search)."""
        first = self.prior_scales[0]
        tried = [(dims, first, *self.best_stop(dims, first, budget)) for dims in self.dims]
        dims = min(tried, key=lambda c: c[3])[0]
        tried += [(dims, scale, *self.best_stop(dims, scale, budget))
                  for scale in self.prior_scales[1:]]
        best = min(tried, key=lambda c: c[3])
        return AdaptiveChoice(best[0], float(best[1]), best[2], int(budget), best[3],
                              tuple((d, float(s), k, e) for d, s, k, e in tried),
                              len(self.folds), self.n_models)

    def _curve(self, fold: int, dims: int, scale: float, budget: int) -> np.ndarray:
        """The fold's estimates at every checkpoint of `budget`, shape (n_checkpoints,
        n_held): the path's points from the fold's session, advanced along the path; a
        budget off the path from a copy of it at the point before (or from a new session
        brought there, when the kept one went further for a larger budget)."""
        key = (fold, dims, scale)
        curve = self._estimates.setdefault(key, {})
        below = [int(p) for p in self.path[self.path <= budget]]
        session = None
        if 0 not in curve or any(p not in curve for p in below):
            session = self._session_at(key, below)
        if budget not in curve and (*key, budget) not in self._off_path:
            session = session or self._session_at(key, below)
            twin = session.copy() if session is self._sessions.get(key) else session
            _advance(twin, self._answers[fold], budget)
            self._off_path[*key, budget] = twin.accuracy()
        return np.array([curve[p] if p in curve else self._off_path[*key, budget]
                         for p in self.checkpoints(budget)])

    def _session_at(self, key: tuple[int, int, float], below: list[int]) -> AdaptiveSession:
        """The fold's session advanced along the path to the last of `below`, recording
        its estimates: the kept one, unless it went further (then a new one)."""
        kept = self._sessions.get(key)
        if kept is not None and kept.n_steps <= max(below, default=0):
            session = kept
        else:
            session = self._new_session(*key)
            self._estimates[key][0] = session.accuracy()
            if self.keep_sessions and kept is None:
                self._sessions[key] = session
        for point in below:
            if point > session.n_steps:
                _advance(session, self._answers[key[0]], point)
                self._estimates[key][point] = session.accuracy()
        return session

    def _new_session(self, fold: int, dims: int, scale: float) -> AdaptiveSession:
        if (fold, dims) not in self._fits:
            self._fits[fold, dims] = self.fit(fold, dims)
        a, b = self._fits[fold, dims]
        return AdaptiveSession(a * scale, b, self.folds[fold].size)


def _advance(session: AdaptiveSession, answers: np.ndarray, to: int) -> None:
    """Give each examinee items up to `to` answers in one batch, chosen at its current
    ability."""
    chosen = session.choose_batch(to - session.n_steps)
    session.record(chosen, answers[np.arange(answers.shape[0])[:, None], chosen])
