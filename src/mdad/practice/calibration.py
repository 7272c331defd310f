"""Intervals calibrated on held-out models: a Neyman belt from cross-validated errors.

A micro-benchmark's estimate of a model's accuracy errs by more for some models than
for others: a shrinking estimator (an IRT fit, an adaptive test's prior) pulls strong
models down and weak ones up, so a plus-or-minus of one average error misses them.
`Calibration` models the error r = estimate - truth of held-out models (each estimated
by a micro-benchmark selected without it) as a function of their true accuracy t:

    r = mu(t) + sigma(t) e,    mu and sigma quadratic in t (sigma floored),

mu by least squares, sigma by least squares on |r - mu(t)|, and e's 2.5% and 97.5%
points taken from the standardised held-out errors themselves, in each third of the
models by accuracy (order statistics far enough out, so no normality is assumed). The
95% interval of a new estimate y is every accuracy t that would put y inside its own
95% band [t + mu(t) + sigma(t) e_lo(t), t + mu(t) + sigma(t) e_hi(t)]: a confidence set
that holds at every true accuracy, not only on average over models, as far as the
curves describe the errors (the assumption docs/reference/practice.md states). The band's edges are
made nondecreasing in t (by widening only), so a higher estimate never gets a lower
interval. Beyond the held-out models' accuracies no model says how the error behaves, so
the band widens there (`band`): it spans the mean error's tangent and its edge value
(the trend may go on or stop), and with `widen_past` the spread and the tail points
grow from their edge values to the widest seen within the range, reached at the
belt's reach. Every belt speaks for the held-out range widened by `REACH` of it on
each side (all of it again), and for nothing further out. An estimate past the band
of the strongest (weakest) held-out model is `beyond`; its interval reaches back to
that model's accuracy.

`widen_past` is for adaptive tests: a test picks its items by its running estimate,
which its prior pulls toward the reference models, so a model beyond them is read
with items chosen for the wrong ability and its error grows past the range faster
than within it. Held out past GPQA's top decile (`benchmarks/bench_roundtrip.py
--split top`, the belts refitted with the growth off), the band without the growth
covered 88% of that decile after 10 answers, and 87.5% after 50 for the
multidimensional test. A static micro-benchmark's items do not depend on the model:
with the reach-back, its band covered at least 90% of either decile beyond the
reference models without the growth, and the growth made its intervals near the
ends of the range wider (at 50 items by 2 to 4 points on average, Anchor Points'
predictor by 14), so static micro-benchmarks' belts do not grow.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mdad import streams
from mdad.errors import DataError, check_open_unit, check_positive, float_array

CONFIDENCE = 0.95
CV_FOLDS = 5  # folds by model of the held-out estimates a belt is fitted on
GRID = np.linspace(0.0, 1.0, 4001)  # accuracies the belt is inverted over
_UNIT = np.linspace(0.0, 1.0, 201)  # the held-out range, for the spread's largest
MIN_MODELS = 20  # fewer held-out models cannot place a 2.5% point
LIST_LENGTH = 19  # numbers in `Calibration.to_list()`
WINDOWS = 3  # thirds of the held-out models by true accuracy, each with its own tails
# The belt's 2.5% points are order statistics of the held-out errors, taken far enough
# out that they are too central with probability at most MISS (see `tail_rank`).
MISS = 0.1
REACH = 1.0  # the belt speaks for the held-out range widened by all of it each side


@dataclass(frozen=True)
class Calibration:
    """The held-out error of an estimate as a function of the true accuracy.

    Attributes
    ----------
    mean : mu(t) = mean[0] + mean[1] x + mean[2] x^2 with x = (t - lowest) / (highest -
        lowest), the mean error (fractions); beyond the held-out range, where a
        parabola would turn, continued along its tangent or held (`mean_at`).
    spread : sigma(t) = spread[0] + spread[1] x + spread[2] x^2, floored at
        `spread_floor` (fractions): held-out errors spread more at both ends of the
        models' range than in its middle. Beyond the range it grows with
        `widen_past`, else it holds its edge value (`spread_at`).
    spread_floor : a tenth of the mean absolute error: never a spread of 0.
    low, high : the tail points of the standardised errors (`tail_rank`) in each third
        of the held-out models by true accuracy, at `centres` (x of each third's median
        model), each at least as far out as the tail point of all of them: the lower
        tail of strong models' errors is longer (a strong model can look average on a
        few items), which one set of tail points for all would miss. Beyond the
        held-out range they grow toward the widest of them with `widen_past`, else
        they hold (`tails_at`).
    lowest, highest : the range of the held-out models' true accuracies.
    models : how many held-out estimates it was fitted on (one per model, and for the
        multidimensional adaptive test one more for each model of its folds beyond).
    widen_past : whether the spread and the tail points grow beyond the held-out range
        (`_growth`; see the module docstring), or hold their edge values.
    """

    mean: tuple[float, float, float]
    spread: tuple[float, float, float]
    spread_floor: float
    low: tuple[float, float, float]
    high: tuple[float, float, float]
    centres: tuple[float, float, float]
    lowest: float
    highest: float
    models: int
    widen_past: bool = True

    @classmethod
    def fit(cls, truth: np.ndarray, estimate: np.ndarray,
            confidence: float = CONFIDENCE, *, widen_past: bool) -> Calibration:
        """Fit the belt on held-out models.

        Parameters
        ----------
        truth, estimate : float arrays of shape (m,), each held-out model's accuracy on
            the whole pool and its estimate by a micro-benchmark selected without it
            (fractions). NaN pairs are left out.
        confidence : the belt's level; its tails are (1 - confidence) / 2 each.
        widen_past : the field of that name.

        Raises
        ------
        DataError
            With fewer than `MIN_MODELS` pairs.
        """
        check_open_unit(confidence, "confidence")
        truth, estimate = float_array(truth, "truth"), float_array(estimate, "estimate")
        if truth.shape != estimate.shape or truth.ndim != 1:
            raise DataError(f"truth and estimate must be two 1-D arrays of one length; got "
                            f"{truth.shape} and {estimate.shape}",
                            parameters=("truth", "estimate"))
        kept = ~(np.isnan(truth) | np.isnan(estimate))
        truth, estimate = truth[kept], estimate[kept]
        if not ((truth >= 0) & (truth <= 1)).all():
            raise DataError("truth must be accuracies in [0, 1] (NaN for none)",
                            parameters=("truth",))
        if not np.isfinite(estimate).all():
            raise DataError("estimate must be finite (NaN for none)", parameters=("estimate",))
        m = truth.size
        if m < MIN_MODELS:
            raise DataError(f"{m} held-out models cannot calibrate a 95% interval; it "
                            f"needs at least {MIN_MODELS}", parameters=("truth", "estimate"))
        lowest, highest = float(truth.min()), float(truth.max())
        if highest - lowest < 1e-6:
            raise DataError(f"the {m} held-out models all have the same accuracy: they "
                            "cannot show how the error varies with it", parameters=("truth",))
        x = _unit(truth, lowest, highest)
        design = np.column_stack([np.ones(m), x, x * x])
        error = estimate - truth
        mean, *_ = np.linalg.lstsq(design, error, rcond=None)
        deviation = np.abs(error - design @ mean)
        spread_coef, *_ = np.linalg.lstsq(design, deviation, rcond=None)
        floor = max(0.1 * float(deviation.mean()), 1e-4)
        spread = np.maximum(design @ spread_coef, floor)
        standardised = (error - design @ mean) / spread
        tail = (1 - confidence) / 2
        low_all, high_all = _tails(standardised, tail)
        order = np.argsort(truth, kind="stable")
        thirds = np.array_split(order, WINDOWS)
        tails = np.array([_tails(standardised[part], tail, conformal=True)
                          for part in thirds])
        centres = [float(np.median(x[part])) for part in thirds]
        return cls(_floats(mean), _floats(spread_coef), floor,
                   _floats(np.minimum(tails[:, 0], low_all)),
                   _floats(np.maximum(tails[:, 1], high_all)), _floats(centres), lowest,
                   highest, m, widen_past)

    def to_list(self) -> list[float]:
        """The fields but `widen_past` as `LIST_LENGTH` numbers, in order (`from_list`
        reads them back, given the same `widen_past`)."""
        return [*self.mean, *self.spread, self.spread_floor, *self.low, *self.high,
                *self.centres, self.lowest, self.highest, float(self.models)]

    @classmethod
    def from_list(cls, values: list[float], *, widen_past: bool) -> Calibration:
        """The belt whose `to_list()` is `values`, with `widen_past` (not in the list).

        Raises
        ------
        DataError
            When `values` cannot be a `to_list()` (`valid_list`)."""
        v = float_array(values, "values").reshape(-1).tolist()
        if not (np.isfinite(v).all() and Calibration.valid_list(v)):
            raise DataError(f"values must be the {LIST_LENGTH} numbers of a belt's to_list()",
                            parameters=("values",))
        return cls(_floats(v[0:3]), _floats(v[3:6]), v[6], _floats(v[7:10]),
                   _floats(v[10:13]), _floats(v[13:16]), v[16], v[17], int(v[18]),
                   widen_past)

    @staticmethod
    def valid_list(values: list[float]) -> bool:
        """Whether `values` (finite numbers) can be a `to_list()`: 19 of them, the range
        within [0, 1], a positive floor, low <= high, at least `MIN_MODELS` models."""
        return (len(values) == LIST_LENGTH and 0 <= values[16] <= values[17] <= 1
                and values[6] > 0 and all(values[7 + k] <= values[10 + k] for k in range(3))
                and values[13] <= values[14] <= values[15] and values[18] >= MIN_MODELS)

    def mean_at(self, truth: np.ndarray, trend: bool = True) -> np.ndarray:
        """mu(t) for accuracies `truth` (any shape); beyond the held-out range continued
        along its tangent (`trend`), but never falling faster than t rises (a stronger
        model is never expected to score lower), or held at its edge value."""
        x = _unit(np.asarray(truth, dtype=np.float64), self.lowest, self.highest)
        edge = np.clip(x, 0.0, 1.0)
        a, b, c = self.mean
        steepest = -max(self.highest - self.lowest, 1e-9)  # d mu / d x = -d t / d x
        slope = np.maximum(b + 2 * c * edge, steepest) if trend else 0.0
        return a + b * edge + c * edge**2 + slope * (x - edge)

    def tails_at(self, truth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The lower and upper tail points at accuracies `truth`: linear between the
        thirds' centres, constant beyond them within the held-out range, and beyond
        it growing toward the widest of them (`_past`) or, without `widen_past`,
        constant."""
        x = _unit(np.asarray(truth, dtype=np.float64), self.lowest, self.highest)
        past = self._growth(x)
        low = np.interp(x, self.centres, self.low)
        high = np.interp(x, self.centres, self.high)
        return (low + (min(self.low) - low) * past, high + (max(self.high) - high) * past)

    def spread_at(self, truth: np.ndarray) -> np.ndarray:
        """sigma(t) for accuracies `truth` (any shape); beyond the held-out range growing
        from its edge value toward its largest within the range (`_past`): a quadratic
        fitted on a few edge models may turn toward 0 there, which no model beyond
        confirms. Without `widen_past` it holds its edge value: a static
        micro-benchmark's estimate past the range rests on the reach-back to the
        strongest (weakest) model instead, measured to hold (module docstring)."""
        x = _unit(np.asarray(truth, dtype=np.float64), self.lowest, self.highest)
        within = np.maximum(np.polyval(self.spread[::-1], np.clip(x, 0.0, 1.0)),
                            self.spread_floor)
        largest = max(float(np.polyval(self.spread[::-1], _UNIT).max()), self.spread_floor)
        return within + (largest - within) * self._growth(x)

    def log_density(self, estimate: float, truth: np.ndarray, scale: float = 1.0
                    ) -> np.ndarray:
        """The log of the belt's density of `estimate` at each of the accuracies `truth` (shape
        kept), for a belt fitted at 95%: half a normal on each side of t + mu(t), each
        side with half the mass and its sigma set so that the side's 2.5% point is the
        band's tail point there (`tails_at`, `spread_at` times `scale`). A smooth
        stand-in for the error's distribution, to weigh accuracies against each
        other; the interval itself rests on the order statistics alone."""
        from scipy.special import ndtri

        t = np.asarray(truth, dtype=np.float64)
        spread = scale * self.spread_at(t) / float(ndtri(1 - (1 - CONFIDENCE) / 2))
        low_tail, high_tail = self.tails_at(t)
        below = np.maximum(-low_tail * spread, 1e-9)
        above = np.maximum(high_tail * spread, 1e-9)
        residual = estimate - (t + self.mean_at(t))
        sigma = np.where(residual < 0, below, above)
        return -0.5 * (residual / sigma) ** 2 - np.log(np.sqrt(2 * np.pi) * sigma)

    def _growth(self, x: np.ndarray) -> np.ndarray:
        """How far the spread and tails have grown at unit accuracies `x`: `_past`,
        or 0 everywhere without `widen_past`."""
        return _past(x) if self.widen_past else np.zeros_like(x)

    def interval(self, estimate: np.ndarray | float, scale: float = 1.0
                 ) -> tuple[np.ndarray, np.ndarray]:
        """The 95% confidence interval of the true accuracy for each estimate.

        Parameters
        ----------
        estimate : fractions, any shape.
        scale : multiplies the spread (e.g. sqrt(size / answered) for partial results).

        Returns
        -------
        low, high : arrays of `estimate`'s shape, within [0, 1]. Where no accuracy
            puts the estimate inside its band (an estimate unlike any a held-out model
            gave, `unexplained`), the interval is every accuracy the belt speaks for.
            An estimate `beyond` the strongest (weakest) held-out model's band gets an
            interval reaching down to that model's accuracy (up to it): the data say
            only that the model is not weaker (stronger) than it, and how far past
            it the model lies rests on the widened band's assumption alone.
        """
        y = _estimates(estimate).reshape(-1)
        band = self.band(_scale(scale))
        low, high = self._invert(self._inside(y, band))
        above, below = self._past_ends(y, band)
        weakest, strongest = GRID[self._end_points()]  # on the grid: monotone as it is
        low = np.where(above, np.minimum(low, strongest), low)
        high = np.where(below, np.maximum(high, weakest), high)
        shape = np.shape(estimate)
        return low.reshape(shape), high.reshape(shape)

    def unexplained(self, estimate: np.ndarray | float, scale: float = 1.0) -> np.ndarray:
        """Whether no accuracy puts each estimate inside its band: the micro-benchmark
        read this model unlike any held-out model of any accuracy (bool, `estimate`'s
        shape)."""
        y = _estimates(estimate)
        inside = self._inside(y.reshape(-1), self.band(_scale(scale)))
        return ~inside.any(axis=1).reshape(y.shape)

    def _invert(self, inside: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The lowest and highest grid accuracy of each row of `inside` (n, grid); a
        row with none gets the whole domain, written into `inside` (a fresh array)."""
        inside[~inside.any(axis=1)] = self._domain()
        first = np.argmax(inside, axis=1)
        last = GRID.size - 1 - np.argmax(inside[:, ::-1], axis=1)
        return GRID[first], GRID[last]

    def _inside(self, flat: np.ndarray, band: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """(n, grid) whether estimate n lies in the `band` of each grid accuracy."""
        low_edge, high_edge = band
        flat = flat.reshape(-1, 1)
        return (flat >= low_edge) & (flat <= high_edge) & self._domain()

    def band(self, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
        """The band's lower and upper edges at each accuracy of `GRID`, made
        nondecreasing in the accuracy by widening only (the lower edge to its running
        minimum from above, the upper to its running maximum from below): a stronger
        model is never expected to score lower, so a higher estimate never gets a
        lower interval, whatever the fitted curves do at the ends. Accuracies past the
        belt's reach (`_domain`), which no interval includes, take no part. Beyond the
        held-out range the band spans both continuations of the mean error."""
        spread = scale * self.spread_at(GRID)
        low_tail, high_tail = self.tails_at(GRID)
        centres = GRID + np.stack([self.mean_at(GRID), self.mean_at(GRID, trend=False)])
        outside = ~self._domain()
        low_edge = centres.min(axis=0) + spread * low_tail
        high_edge = centres.max(axis=0) + spread * high_tail
        low_edge[outside], high_edge[outside] = np.inf, -np.inf
        return (np.minimum.accumulate(low_edge[::-1])[::-1],
                np.maximum.accumulate(high_edge))

    def _domain(self) -> np.ndarray:
        """The accuracies the belt speaks for: the held-out models' range widened by
        `REACH` of it on each side. Further out, a shrinking estimator's lines would
        admit any accuracy up to 0 or 1."""
        low_end, high_end = self.reach()
        return (GRID >= low_end) & (GRID <= high_end)

    def reach(self) -> tuple[float, float]:
        """The lowest and highest accuracy the belt speaks for: an interval that ends
        there ends where the data stop saying anything, not at a bound they set."""
        # never empty: models of one accuracy still leave a point either side
        reach = max(REACH * (self.highest - self.lowest), 0.01)
        return self.lowest - reach, self.highest + reach

    def censored(self, low: np.ndarray | float, high: np.ndarray | float
                 ) -> tuple[np.ndarray, np.ndarray]:
        """Whether each interval end lies at the belt's reach (`reach`) within 0 and 1:
        there the data stop speaking, so the end is censored, no bound (bool arrays of
        the broadcast shape). 0 and 1 themselves are bounds: no accuracy lies past them."""
        low_end, high_end = self.reach()
        step = 1e-3  # a grid step is 2.5e-4: rounding is not reaching
        low_censored = (low_end > 0) & (np.asarray(low) <= low_end + step)
        high_censored = (high_end < 1) & (np.asarray(high) >= high_end - step)
        return low_censored, high_censored

    def beyond(self, estimate: np.ndarray | float, scale: float = 1.0) -> np.ndarray:
        """Whether each estimate lies past the band of the strongest (weakest) held-out
        model's accuracy, which such a model gives rarely (the tail of `confidence`):
        the model may lie beyond the models the belt was fitted on, where it
        extrapolates (bool, `estimate`'s shape)."""
        above, below = self._past_ends(_estimates(estimate), self.band(_scale(scale)))
        return above | below

    def _past_ends(self, y: np.ndarray, band: tuple[np.ndarray, np.ndarray]
                   ) -> tuple[np.ndarray, np.ndarray]:
        """Whether each estimate `y` lies above the `band` of the strongest held-out
        model's accuracy, and whether below the weakest's (bool, `y`'s shape)."""
        low_edge, high_edge = band
        weakest, strongest = self._end_points()
        return y > high_edge[strongest], y < low_edge[weakest]

    def _end_points(self) -> np.ndarray:
        """The indices in `GRID` of the weakest and the strongest held-out model's
        accuracy (the first grid point at or above each)."""
        return np.minimum(np.searchsorted(GRID, [self.lowest, self.highest]), GRID.size - 1)


def tail_rank(m: int, tail: float, miss: float = MISS) -> int:
    """The rank k (1..m) of the order statistic taken as a `tail` point of m draws, so
    that it is too central (more than `tail` of the distribution lies beyond it) with
    probability at most `miss`: the largest k with P(Binomial(m, tail) < k) <= miss,
    or 1 when even the extreme draw is not enough."""
    from scipy.special import bdtr

    counts = np.arange(m)  # k - 1
    ok = np.flatnonzero(bdtr(counts, m, tail) <= miss)
    return int(ok[-1]) + 1 if ok.size else 1


def _tails(standardised: np.ndarray, tail: float, conformal: bool = False
           ) -> tuple[float, float]:
    """The lower and upper `tail` points of `standardised` errors: the order statistics
    of rank `tail_rank`, or with `conformal` split conformal prediction's own rank,
    floor((m + 1) tail) (at least 1), which a window of a third of the models uses."""
    ordered = np.sort(standardised)
    m = ordered.size
    k = max(int(np.floor((m + 1) * tail)), 1) if conformal else tail_rank(m, tail)
    low, high = float(ordered[k - 1]), float(ordered[m - k])
    reached = 1.0 - MISS ** (1.0 / m)  # the tail the extreme stands for, at MISS
    if not conformal and tail < reached:
        # too few models for so small a tail: the extremes, stretched as far as a
        # normal tail would go from theirs to it (the one assumption beyond the data)
        from scipy.special import ndtri

        stretch = float(ndtri(1 - tail) / ndtri(1 - reached))
        centre = float(np.median(ordered))
        low, high = centre + (low - centre) * stretch, centre + (high - centre) * stretch
    return low, high


def _estimates(estimate: object) -> np.ndarray:
    """`estimate` as floats, refused unless each is finite."""
    y = float_array(estimate, "estimate")
    if not np.isfinite(y).all():
        raise DataError("estimate must be finite numbers", parameters=("estimate",))
    return y


def _scale(scale: object) -> float:
    """`scale`, refused unless a finite number > 0."""
    return check_positive(scale, "scale")


def _past(x: np.ndarray) -> np.ndarray:
    """How far beyond the held-out range each unit accuracy `x` lies, as a share of the
    belt's reach: 0 within the range, 1 at the reach's end and further."""
    return np.clip(np.maximum(x - 1.0, -x) / REACH, 0.0, 1.0)


def _floats(values) -> tuple[float, float, float]:
    return (float(values[0]), float(values[1]), float(values[2]))


def _unit(truth: np.ndarray, lowest: float, highest: float) -> np.ndarray:
    """Accuracies mapped so that the held-out range is 0..1."""
    return (truth - lowest) / max(highest - lowest, 1e-9)


def deciles(accuracy: np.ndarray) -> np.ndarray:
    """0 for the bottom decile of `accuracy`, 2 for the top, 1 between; shape kept."""
    low, high = np.quantile(accuracy, [0.1, 0.9])
    return np.where(accuracy <= low, 0, np.where(accuracy >= high, 2, 1))


def cross_validation_folds(seed: int, n_models: int) -> list[np.ndarray]:
    """The `CV_FOLDS` folds of models 0..n_models-1 (int arrays, sizes differing by at
    most 1), drawn from the stream (seed, "cross-validation", "folds")."""
    order = streams.rng(seed, "cross-validation", "folds").permutation(n_models)
    return np.array_split(order, CV_FOLDS)

