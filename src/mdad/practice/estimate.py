"""A new model's estimated full score from a saved micro-benchmark, and the reference
models it is reliably above or below.

`estimate`'s 95% interval of the full accuracy holds at every true accuracy, not only
on average (`accuracy_interval`): exact for uniform random sampling, a Neyman belt
calibrated on held-out models for every other method (`mdad.practice.calibration`).

`estimate`'s lists (`LIST_RULE`) must hold as lists: a user reads them whole. A
reference model, whose full accuracy the file stores, is listed when that accuracy lies
outside the new model's 99.9% interval, the estimate is at least the MDAD from it, and
`RULE` applied to the two models' answers names the same winner (through the very
function `compare` uses). One event makes a list wrong, the interval missing on its
side, so its false discovery rate is at most that chance.

The rule for one pair, and the paired interval it uses: `mdad.practice.compare`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mdad.practice.compare import CONFIDENCE, TOLERANCE, Z95, Footing, verdicts_against
from mdad.practice.estimators import estimates_of
from mdad.practice.results import ItemScores, require_items

if TYPE_CHECKING:
    from mdad.practice.bundle import MicroBenchmarkFile

LIST_FDR = 0.05

# Lists use a 99.9% interval: a model's list is long exactly when its estimate is
# extreme, which is when an interval misses most often: at 95% or 99%, more than 5% of
# listed verdicts were wrong at 10 items in held-out round trips
# (benchmarks/bench_roundtrip.py).
LIST_CONFIDENCE = 0.999

LIST_RULE = ("a model is listed when its full-benchmark accuracy lies outside the 99.9% "
             "interval, the estimate is at least the MDAD from it, and `mdad compare` "
             "names the same winner; a list is wrong only when the interval misses on its "
             "side")


@dataclass(frozen=True)
class Estimate(Footing):
    """A model's estimated full-benchmark accuracy and where it stands.

    Attributes
    ----------
    model : its name.
    accuracy, low, high : the estimate and its 95% interval (fractions).
    missing, extra : the micro-benchmark's items the results lack, and how many
        results were for items outside it.
    above, below, too_close : reference models this model is reliably above, below,
        or too close to call (`LIST_RULE`): every model listed is the winner `compare`
        names, and each list holds as a whole (`list_error_rate`). All three are
        empty when the estimate is `beyond` or `unexplained`: no model is judged.
    rule : `LIST_RULE`.
    interval_how : how the accuracy interval was computed.
    beyond : the estimate lies past the band of the strongest (weakest) held-out model
        it was calibrated on, which such a model gives rarely: the model may lie beyond
        the reference models, where the interval extrapolates (`Calibration.beyond`),
        so no model is listed above or below.
    list_error_rate : the false discovery rate each list controls (0.05); None when the
        interval holds on average over models only (a file older than /4, too few
        models to calibrate), which cannot vouch for a list as a whole.
    unexplained : no accuracy explains the estimate: the micro-benchmark read this model
        unlike any held-out model; the interval is all the calibration speaks for, and
        nothing is listed.
    low_censored, high_censored : that end of the interval is where the calibration
        stops speaking (`Calibration.censored`), not a bound the data set: read `low`
        as "at least" and `high` as "no upper bound", or the other way round.
    The rest (the items used and the MDAD for them): `Footing`.
    """

    model: str
    accuracy: float
    low: float
    high: float
    missing: list[str]
    extra: int
    above: list[str]
    below: list[str]
    too_close: list[str]
    rule: str
    interval_how: str
    beyond: bool = False
    list_error_rate: float | None = 0.05
    unexplained: bool = False
    low_censored: bool = False
    high_censored: bool = False


def estimate_score(bundle: MicroBenchmarkFile, results: ItemScores, *,
                   allow_partial: bool = False) -> Estimate:
    """Estimate `results`' model's full accuracy from the micro-benchmark, and list the
    reference models it is reliably above or below (`LIST_RULE`).

    The 95% interval (`accuracy_interval`): for uniform random sampling, the exact
    interval of n of N items drawn without replacement (`hypergeometric_interval`;
    Wilson's for partial-credit scores); for every other
    method, the Neyman belt calibrated on the file's held-out models
    (`mdad.practice.calibration`), its spread scaled by sqrt(size / n) when only n
    items were answered. With `allow_partial`, items the results lack are left out:
    linear estimators are re-weighted over the rest, IRT estimators re-fitted on the
    answered anchors; Anchor Points' predictor refuses.

    Raises
    ------
    DataError
        For missing items without `allow_partial`, or an estimator that cannot work
        on the answered subset.
    """
    observed = ~np.isnan(results.scores)
    require_items(bundle, observed, allow_partial=allow_partial, who=results.model)
    used = int(observed.sum())
    value = float(estimates_of(bundle, np.nan_to_num(results.scores)[None, :], observed)[0])
    interval = accuracy_interval(bundle, value, used)
    footing = Footing.of(bundle, used)
    mdad = footing["mdad"]
    strict = accuracy_interval(bundle, value, used, LIST_CONFIDENCE)
    # an estimate no reference model's accuracy gives is read by the belt's extrapolation,
    # whose far tails no held-out model tested: no list-level claim rests on it
    withheld = interval.unexplained or interval.beyond
    ahead, behind = _listed(bundle, results.scores, observed, value, mdad,
                            None if withheld else strict)
    names = np.asarray(bundle.reference_models)
    judged = ~(ahead | behind) & (not withheld)  # withheld: no model is judged at all
    return Estimate(
        **footing, model=results.model, accuracy=value, low=interval.low,
        high=interval.high, missing=results.missing, extra=results.extra,
        above=names[ahead].tolist(),
        below=names[behind].tolist(), too_close=names[judged].tolist(),
        rule=LIST_RULE, interval_how=interval.how, beyond=interval.beyond,
        list_error_rate=None if strict.averaged else LIST_FDR,
        unexplained=interval.unexplained, low_censored=interval.low_censored,
        high_censored=interval.high_censored)


def _listed(bundle: MicroBenchmarkFile, scores: np.ndarray, observed: np.ndarray,
            value: float, mdad: float | None, strict: AccuracyInterval | None
            ) -> tuple[np.ndarray, np.ndarray]:
    """`LIST_RULE`: bool masks over the reference models of those the model estimated
    at `value` is listed above and below, from its `strict` (99.9%) interval; none
    when the MDAD is not reached or the interval is withheld (None: the estimate is
    unexplained or beyond the reference models)."""
    truth = np.asarray(bundle.reference_accuracy)
    if mdad is None or strict is None or strict.unexplained:
        return np.zeros(truth.size, dtype=bool), np.zeros(truth.size, dtype=bool)
    clears = np.abs(value - truth) >= mdad - TOLERANCE
    ahead, behind = clears & (truth < strict.low), clears & (truth > strict.high)
    # compare's verdict on the two models' answers, for the candidates only
    candidates = np.flatnonzero(ahead | behind)
    verdicts = verdicts_against(bundle, scores, bundle.reference_scores()[candidates],
                                observed, mdad)
    agrees = np.zeros(truth.size, dtype=bool)
    agrees[candidates] = verdicts.reliable & (np.sign(verdicts.difference)
                                              == np.where(ahead, 1, -1)[candidates])
    return ahead & agrees, behind & agrees


@dataclass(frozen=True)
class AccuracyInterval:
    """A 95% interval of a model's full accuracy (fractions), how it was made, whether
    the estimate lies past the models it was calibrated on (an extrapolation), and whether
    no accuracy explains the estimate (`Calibration.unexplained`: then the interval is
    all the belt speaks for, and no list is made)."""

    low: float
    high: float
    how: str
    beyond: bool = False
    unexplained: bool = False
    averaged: bool = False  # holds on average over models only: no list-level claim
    low_censored: bool = False  # at the belt's reach: the data set no bound there
    high_censored: bool = False


def accuracy_interval(bundle: MicroBenchmarkFile, value: float, used: int,
                      confidence: float = CONFIDENCE) -> AccuracyInterval:
    """The `confidence` interval (95% by default) of the full accuracy of a model
    estimated at `value` from `used` of the micro-benchmark's items (see
    `estimate_score`)."""
    from scipy.special import ndtri

    z = float(ndtri(0.5 + confidence / 2))
    scaled = "" if used == bundle.size else f", its spread scaled by sqrt({bundle.size}/{used})"
    if bundle.error_sd is None:
        correct = value * used
        if abs(correct - round(correct)) < 1e-6 and bundle.pool_size < 10**6:
            low, high = hypergeometric_interval(round(correct), used, bundle.pool_size,
                                                confidence)
            return AccuracyInterval(low, high, "exact, for items drawn without replacement")
        low, high = _wilson(value, used, bundle.pool_size, z)
        return AccuracyInterval(low, high, "Wilson score, finite-population corrected "
                                "(partial-credit scores)")
    calibration = bundle.calibration(confidence)
    if calibration is None:
        from mdad.practice.bundle_format import CALIBRATED_FORMATS
        from mdad.practice.calibration import MIN_MODELS

        why = (f"a format {bundle.format} file: select again for an interval calibrated "
               "at every accuracy" if bundle.format not in CALIBRATED_FORMATS else
               f"{len(bundle.reference_models)} models are too few to calibrate one at "
               f"every accuracy (it needs {MIN_MODELS}); it holds on average only")
        spread = bundle.error_sd * np.sqrt(bundle.size / used)
        return AccuracyInterval(max(value - z * spread, 0.0), min(value + z * spread, 1.0),
                                f"+-{z:.2f} x the cross-validated error{scaled} ({why})",
                                averaged=True)
    scale = float(np.sqrt(bundle.size / used))
    low, high = (float(v) for v in calibration.interval(value, scale=scale))
    low_censored, high_censored = calibration.censored(low, high)
    return AccuracyInterval(low, high, f"calibrated on {calibration.models} held-out "
                            f"models at every accuracy{scaled}{bundle.calibration_caveat()}",
                            bool(calibration.beyond(value, scale)),
                            bool(calibration.unexplained(value, scale)),
                            low_censored=bool(low_censored), high_censored=bool(high_censored))


def hypergeometric_interval(correct: int, n: int, pool: int,
                            confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The exact interval of a pool's accuracy K / `pool` from `correct` of `n` items
    drawn without replacement: every K whose hypergeometric tail at `correct` is above
    (1 - confidence) / 2 on each side (Clopper and Pearson's construction for a finite
    pool), so it covers every model's accuracy with at least `confidence`. Each tail is
    monotone in K, so each end is found by bisection (about 2 log2(pool) tails).

    >>> hypergeometric_interval(5, 5, 5)  # the whole pool: exact
    (1.0, 1.0)
    """
    if not 0 <= correct <= n <= pool or n < 1:
        raise ValueError(f"need 0 <= correct <= n <= pool and n >= 1; got {correct}, {n}, "
                         f"{pool}")
    tail = (1 - confidence) / 2
    x = np.arange(n + 1, dtype=np.float64)

    def tails(k: int) -> tuple[float, float]:
        """P(X <= correct | K = k), P(X >= correct | K = k)."""
        pmf = _hypergeometric_pmf(x, k, n, pool)
        return float(pmf[: correct + 1].sum()), float(pmf[correct:].sum())

    # lowest K with P(X >= correct) > tail; highest K with P(X <= correct) > tail
    lo, hi = correct, pool - (n - correct)  # the K the draw allows
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if tails(mid)[1] > tail else (mid + 1, hi)
    low = lo
    lo, hi = correct, pool - (n - correct)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if tails(mid)[0] > tail else (lo, mid - 1)
    return low / pool, lo / pool


def _hypergeometric_pmf(x: np.ndarray, k: int, n: int, pool: int) -> np.ndarray:
    """P(X = x) for the correct items X among n drawn from a pool of `pool` with k
    correct, for each of `x` (0 where impossible)."""
    from scipy.special import gammaln

    def log_choose(a: float, b: np.ndarray) -> np.ndarray:
        ok = (b >= 0) & (b <= a)
        safe = np.where(ok, b, 0.0)
        return np.where(ok, gammaln(a + 1) - gammaln(safe + 1) - gammaln(a - safe + 1),
                        -np.inf)

    log_pmf = (log_choose(k, x) + log_choose(pool - k, n - x)
               - log_choose(pool, np.array(float(n))))
    return np.exp(log_pmf)


def _wilson(value: float, n: int, pool: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval (95% for the default `z`) of a mean of n 0/1 scores drawn without
    replacement from `pool` items: the sample size is inflated by the finite
    population correction (n / fpc), which shrinks the interval as n nears the pool."""
    fpc = (pool - n) / max(pool - 1, 1)
    if fpc <= 0:
        return value, value
    effective = n / fpc
    z2 = z**2
    centre = (value + z2 / (2 * effective)) / (1 + z2 / effective)
    half = z * np.sqrt(value * (1 - value) / effective + z2 / (4 * effective**2)) / (
        1 + z2 / effective)
    return max(centre - half, 0.0), min(centre + half, 1.0)
