"""Intervals calibrated on held-out models: a Neyman belt from cross-validated errors.

A micro-benchmark's estimate of a model's accuracy errs by more for some models than
for others: a shrinking estimator (an IRT fit, an adaptive test's prior) pulls strong
models down and weak ones up, so a plus-or-minus of one average error misses them.
`Calibration` models the error r = estimate - truth of held-out models (each estimated
by a micro-benchmark selected without it) as a function of their true accuracy t:

    r = mu(t) + sigma(t) e,    mu(t) = a + b t,    sigma(t) = c + d t (floored),

with a and b by least squares, c and d by least squares on |r - mu(t)|, and e's 2.5%
and 97.5% points taken from the standardised held-out errors themselves (conformal
ranks, so no normality is assumed). The 95% interval of a new estimate y is every
accuracy t that would put y inside its own 95% band [t + mu(t) + sigma(t) e_lo,
t + mu(t) + sigma(t) e_hi]: a confidence set that holds at every true accuracy, not
only on average over models, as far as the two lines describe the errors (the
assumption the README states). Beyond the held-out models' accuracies the lines are
extrapolated, the spread is held at its edge value and widened (`beyond`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mdad.errors import DataError

CONFIDENCE = 0.95
GRID = np.linspace(0.0, 1.0, 4001)  # accuracies the belt is inverted over
MIN_MODELS = 20
# The belt's 2.5% points are order statistics of the held-out errors, taken far enough
# out that they are too central with probability at most MISS (see `tail_rank`).
MISS = 0.1  # fewer held-out models cannot place a 2.5% point
# Beyond the held-out models' accuracies the spread grows by this share of its edge
# value per unit of accuracy outside (kept below 1 / (spread x tail point), or the
# belt would admit every accuracy).
BEYOND_WIDENING = 2.0
REACH = 0.5  # the belt speaks for the held-out range widened by half of it each side


@dataclass(frozen=True)
class Calibration:
    """The held-out error of an estimate as a function of the true accuracy.

    Attributes
    ----------
    intercept, slope : mu(t) = intercept + slope t, the mean error (fractions).
    spread : sigma(t) = spread[0] + spread[1] x + spread[2] x^2 with x = (t - lowest) /
        (highest - lowest), floored at `spread_floor` (fractions): held-out errors
        spread more at both ends of the models' range than in its middle.
    spread_floor : a tenth of the mean absolute error: never a spread of 0.
    low, high : the 2.5% and 97.5% points of the standardised errors (conformal).
    lowest, highest : the range of the held-out models' true accuracies.
    models : how many held-out models it was fitted on.
    """

    intercept: float
    slope: float
    spread: tuple[float, float, float]
    spread_floor: float
    low: float
    high: float
    lowest: float
    highest: float
    models: int

    @classmethod
    def fit(cls, truth: np.ndarray, estimate: np.ndarray,
            confidence: float = CONFIDENCE) -> Calibration:
        """Fit the belt on held-out models.

        Parameters
        ----------
        truth, estimate : float arrays of shape (m,), each held-out model's accuracy on
            the whole pool and its estimate by a micro-benchmark selected without it
            (fractions). NaN pairs are left out.

        Raises
        ------
        DataError
            With fewer than `MIN_MODELS` pairs.
        """
        truth, estimate = np.asarray(truth, dtype=np.float64), np.asarray(estimate,
                                                                         dtype=np.float64)
        kept = ~(np.isnan(truth) | np.isnan(estimate))
        truth, estimate = truth[kept], estimate[kept]
        m = truth.size
        if m < MIN_MODELS:
            raise DataError(f"{m} held-out models cannot calibrate a 95% interval; it "
                            f"needs at least {MIN_MODELS}")
        error = estimate - truth
        design = np.column_stack([np.ones(m), truth])
        (intercept, slope), *_ = np.linalg.lstsq(design, error, rcond=None)
        deviation = np.abs(error - design @ (intercept, slope))
        lowest, highest = float(truth.min()), float(truth.max())
        x = _unit(truth, lowest, highest)
        spread_coef, *_ = np.linalg.lstsq(np.column_stack([np.ones(m), x, x * x]),
                                          deviation, rcond=None)
        floor = max(0.1 * float(deviation.mean()), 1e-4)
        spread = np.maximum(np.polyval(spread_coef[::-1], x), floor)
        standardised = np.sort((error - intercept - slope * truth) / spread)
        k = tail_rank(m, (1 - confidence) / 2)
        return cls(float(intercept), float(slope), tuple(float(v) for v in spread_coef),
                   floor, float(standardised[k - 1]), float(standardised[m - k]),
                   lowest, highest, m)

    def to_list(self) -> list[float]:
        """The fields as 11 numbers, in order (`from_list` reads them back)."""
        return [self.intercept, self.slope, *self.spread, self.spread_floor, self.low,
                self.high, self.lowest, self.highest, float(self.models)]

    @classmethod
    def from_list(cls, values: list[float]) -> Calibration:
        v = [float(x) for x in values]
        return cls(v[0], v[1], (v[2], v[3], v[4]), v[5], v[6], v[7], v[8], v[9], int(v[10]))

    def spread_at(self, truth: np.ndarray) -> np.ndarray:
        """sigma(t) for accuracies `truth` (any shape): held at the range's edges and
        widened by `BEYOND_WIDENING` per unit outside it."""
        t = np.asarray(truth, dtype=np.float64)
        edge = np.clip(t, self.lowest, self.highest)
        x = _unit(edge, self.lowest, self.highest)
        base = np.maximum(np.polyval(self.spread[::-1], x), self.spread_floor)
        return base * (1.0 + BEYOND_WIDENING * np.abs(t - edge))

    def interval(self, estimate: np.ndarray | float, scale: float = 1.0
                 ) -> tuple[np.ndarray, np.ndarray]:
        """The 95% confidence interval of the true accuracy for each estimate.

        Parameters
        ----------
        estimate : fractions, any shape.
        scale : multiplies the spread (e.g. sqrt(size / answered) for partial results).

        Returns
        -------
        low, high : arrays of `estimate`'s shape, within [0, 1], low <= estimate's
            nearest belt accuracy <= high. Where no accuracy puts the estimate inside
            its band (an estimate far outside what held-out models gave), the interval
            runs from the estimate to the accuracy whose band it is nearest.
        """
        y = np.asarray(estimate, dtype=np.float64)
        flat = y.reshape(-1, 1)
        centre = GRID + self.intercept + self.slope * GRID
        spread = scale * self.spread_at(GRID)
        inside = (flat >= centre + spread * self.low) & (flat <= centre + spread * self.high)
        inside &= self._domain()
        any_inside = inside.any(axis=1)
        first = np.argmax(inside, axis=1)
        last = GRID.size - 1 - np.argmax(inside[:, ::-1], axis=1)
        low, high = GRID[first], GRID[last]
        if not any_inside.all():
            distance = np.abs(flat - centre) / spread
            nearest = GRID[np.argmin(distance, axis=1)]
            low = np.where(any_inside, low, np.minimum(nearest, flat[:, 0]))
            high = np.where(any_inside, high, np.maximum(nearest, flat[:, 0]))
        return low.reshape(y.shape), high.reshape(y.shape)

    def _domain(self) -> np.ndarray:
        """The accuracies the belt speaks for: the held-out models' range widened by
        `REACH` of it on each side. Further out, a shrinking estimator's lines would
        admit any accuracy up to 0 or 1; an interval that reaches an end is `beyond`."""
        reach = REACH * (self.highest - self.lowest)
        return (GRID >= self.lowest - reach) & (GRID <= self.highest + reach)

    def beyond(self, low: float, high: float) -> bool:
        """Whether an interval reaches past the held-out models' accuracies: the model
        may lie beyond the reference models, where the belt extrapolates."""
        return bool(high > self.highest or low < self.lowest)


def tail_rank(m: int, tail: float, miss: float = MISS) -> int:
    """The rank k (1..m) of the order statistic taken as a `tail` point of m draws, so
    that it is too central (more than `tail` of the distribution lies beyond it) with
    probability at most `miss`: the largest k with P(Binomial(m, tail) < k) <= miss,
    or 1 when even the extreme draw is not enough."""
    from scipy.special import bdtr

    counts = np.arange(m)  # k - 1
    ok = np.flatnonzero(bdtr(counts, m, tail) <= miss)
    return int(ok[-1]) + 1 if ok.size else 1


def _unit(truth: np.ndarray, lowest: float, highest: float) -> np.ndarray:
    """Accuracies mapped so that the held-out range is 0..1."""
    return (truth - lowest) / max(highest - lowest, 1e-9)
