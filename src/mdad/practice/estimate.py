"""A new model's estimated full score from a saved micro-benchmark, and the reference
models it is reliably above or below.

`estimate`'s 95% interval of the full accuracy holds at every true accuracy, not only
on average (`accuracy_interval`): exact for simple random samples, a Neyman belt
calibrated on held-out models for every other method (`mdad.practice.calibration`).

`estimate`'s lists (`LIST_RULE`) must hold as lists: a user reads them whole. A
reference model, whose full accuracy the file stores, is listed when that accuracy lies
outside the new model's 99.9% interval, the estimate is at least the MDAD from it, and
`RULE` applied to the two models' answers names the same winner (through the very
function `compare` uses). One event makes a list wrong, the interval missing on its
side, so its false discovery rate is at most that chance.

That bounds each list, not the share of all listed verdicts that are wrong: with few
items, an extreme estimate, the only kind that lists anyone, is as often a fluke of an
average model as a model that extreme, and one fluke lists dozens of models at once
(held-out round trips on GPQA: 43 of a 10-item list of 48 wrong, 15% of all verdicts
listed at 10 items). So a model is also listed only when, weighing the reference
models' own accuracies by how likely each makes the estimate (`intervals.log_likelihood`),
at most `WRONG_SIDE` (0.5%) of that weight lies on the other side of it
(`wrong_side_chance`): among models drawn as the reference models were and estimated
as this one, fewer than 0.5% are on the wrong side of any model listed. A model
stronger than every reference model is weighed as the strongest of them, so it is
listed less, never wrongly more.

The rule for one pair, and the paired interval it uses: `mdad.practice.compare`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mdad.practice.compare import TOLERANCE, Footing, verdicts_against
from mdad.practice.estimators import estimates_of
from mdad.practice.intervals import AccuracyInterval, accuracy_interval, log_likelihood
from mdad.practice.results import ItemScores, check_results, require_items

if TYPE_CHECKING:
    from mdad.practice.bundle import MicroBenchmarkFile

LIST_FDR = 0.05

# Lists use a 99.9% interval: a model's list is long exactly when its estimate is
# extreme, which is when an interval misses most often: at 95% or 99%, more than 5% of
# listed verdicts were wrong at 10 items in held-out round trips
# (benchmarks/bench_roundtrip.py).
LIST_CONFIDENCE = 0.999

# A model is listed only when at most this share of the reference models that would
# give its estimate lie on the other side (`wrong_side_chance`). At 5% and at 1%, one
# fluke's list still made 9% to 20% of the verdicts listed at 10 items wrong in
# held-out round trips on GPQA; at 0.5% none was (benchmarks/bench_roundtrip.py).
WRONG_SIDE = 0.005

LIST_RULE = ("a model is listed when its full-benchmark accuracy lies outside the 99.9% "
             "interval, the estimate is at least the MDAD from it, `mdad compare` names "
             f"the same winner, and at most {WRONG_SIDE:.1%} of the reference models that "
             "would give this estimate lie on the other side of it; a list is wrong only "
             "when the interval misses on its side")


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
    """Estimate a model's full-benchmark accuracy from its answers to a micro-benchmark.

    Estimates `results`' model's accuracy on the whole benchmark (or the file's pool)
    with the micro-benchmark's own estimator, gives its 95% interval, and lists the
    reference models it is reliably above or below (`LIST_RULE`).

    Parameters
    ----------
    bundle : MicroBenchmarkFile
        The saved micro-benchmark (``MicroBenchmarkFile.load(path)``): its items, its
        estimator, its calibration and its reference models.
    results : ItemScores
        The model's scores on the file's items (`read_model_scores`): one score in
        [0, 1] per item, NaN for an item not answered.
    allow_partial : bool, default False
        Estimate from the answered items only when some are missing; without it, any
        missing item is refused.

    Returns
    -------
    Estimate
        The estimated accuracy and its 95% interval (accuracy fractions, 0.05 = 5
        points), how the interval was made, the reference models the model is reliably
        above, below or too close to call, and the items used with the MDAD for them
        (`Footing`). The lists are empty when the estimate is `beyond` the reference
        models or `unexplained`.

    Raises
    ------
    ConfigError
        For a `bundle` or `results` of the wrong type.
    DataError
        For scores that are not the file's items' (`check_results`); for missing items
        without `allow_partial`, none answered, or a number answered the file has no MDAD
        for; or for an estimator that cannot work on the answered subset.

    Notes
    -----
    The 95% interval (`accuracy_interval`): for a simple random sample, the exact
    interval of n of N items drawn without replacement (`hypergeometric_interval`;
    Wilson's for partial-credit scores); for every other method, the Neyman belt
    calibrated on the file's held-out models (`mdad.practice.calibration`), its spread
    scaled by sqrt(size / n) when only n items were answered.

    With `allow_partial`, items the results lack are left out: linear estimators are
    re-weighted over the rest, IRT estimators re-fitted on the answered anchors; Anchor
    Points' predictor refuses.
    """
    check_results(bundle, results, "results")
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
    ahead, behind = _listed(bundle, results.scores, observed, value, used, mdad,
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
            value: float, used: int, mdad: float | None, strict: AccuracyInterval | None
            ) -> tuple[np.ndarray, np.ndarray]:
    """`LIST_RULE`: bool masks over the reference models of those the model estimated
    at `value` from `used` items is listed above and below, from its `strict` (99.9%)
    interval; none when the MDAD is not reached or the interval is withheld (None: the
    estimate is unexplained or beyond the reference models)."""
    truth = np.asarray(bundle.reference_accuracy)
    if mdad is None or strict is None or strict.unexplained:
        return np.zeros(truth.size, dtype=bool), np.zeros(truth.size, dtype=bool)
    clears = np.abs(value - truth) >= mdad - TOLERANCE
    log_weight = log_likelihood(bundle, value, used, truth)
    top = log_weight.max()
    weights = np.exp(log_weight - top) if np.isfinite(top) else np.zeros(truth.size)
    not_above, not_below = wrong_side_chance(weights, truth)
    ahead = clears & (truth < strict.low) & (not_above <= WRONG_SIDE)
    behind = clears & (truth > strict.high) & (not_below <= WRONG_SIDE)
    # compare's verdict on the two models' answers, for the candidates only
    candidates = np.flatnonzero(ahead | behind)
    verdicts = verdicts_against(bundle, scores, bundle.reference_scores()[candidates],
                                observed, mdad, reference=candidates)
    agrees = np.zeros(truth.size, dtype=bool)
    agrees[candidates] = verdicts.reliable & (np.sign(verdicts.difference)
                                              == np.where(ahead, 1, -1)[candidates])
    return ahead & agrees, behind & agrees


def wrong_side_chance(weights: np.ndarray, truth: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
    """For each reference model j, of accuracy ``truth[j]``: the share of `weights`
    (each reference model's, >= 0, shape (m,)) on models at or below that accuracy,
    and the share at or above it, each shape (m,). With the likelihood of an estimate
    as weights, the first is the chance that a model so estimated, drawn as the
    reference models were, is not above model j (a tie is not above), the second
    that it is not below. No weight at all (no reference accuracy gives the
    estimate): 1 everywhere, so nothing is listed.

    >>> wrong_side_chance(np.array([1.0, 1.0, 2.0]), np.array([0.2, 0.3, 0.3]))
    (array([0.25, 1.  , 1.  ]), array([1.  , 0.75, 0.75]))
    """
    weights = np.asarray(weights, dtype=np.float64)
    total = weights.sum()
    if not total > 0:
        return np.ones(truth.size), np.ones(truth.size)
    order = np.argsort(truth, kind="stable")
    ranked, cumulative = truth[order], np.cumsum(weights[order]) / total
    at_or_below = cumulative[np.searchsorted(ranked, truth, side="right") - 1]
    below = np.concatenate([[0.0], cumulative])[np.searchsorted(ranked, truth, side="left")]
    return np.minimum(at_or_below, 1.0), np.clip(1.0 - below, 0.0, 1.0)

