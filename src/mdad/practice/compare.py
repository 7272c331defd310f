"""Whether two models' gap on a micro-benchmark is real.

`compare`'s rule (`RULE`), for one pair at 95%: model A is reliably above model B when,
on the items both answered, the estimated difference d = estimate(A) - estimate(B)
(the micro-benchmark's own estimator applied to each model's answers) is at least the
MDAD for that many items, its paired 95% interval excludes 0, and the exact two-sided
McNemar test of the items only one of them got right (a score above 0.5 counts as
right) gives p < 0.05: the interval is a normal approximation, which claims too much
from a few such items (5 of 10 that only A got right exclude 0 from it; the exact test
gives p = 0.0625). An MDAD not reached makes no one reliably above or below.

The paired interval is c +- 1.96 sqrt(V (N - n) / (N - 1)) with n items answered of a
pool of N. For linear estimators it is Bonett and Price's adjusted Wald interval
(2012), weighted: the n per-item differences a - b get two more, +1 and -1, each of the
mean weight, and V is the per-item (sandwich) variance of the weighted mean of the n + 2
(the plain mean gives var / (n + 2)). Theirs is centred on that mean; here (our own
choice, for the correction) c is d pulled toward it by the factor (N - n) / (N - 1):
all the way for a few items of a large pool, not at all on the whole pool, where d is
exact. The plain Wald interval (c = d, V from the n items alone)
claimed a width of 0 whenever the differences were all equal: one item, or two models
with the same answers. For Anchor Points' predictor c = d and V is the variance of the
per-anchor contributions; for the IRT estimators, the delete-one jackknife over
anchors; for a plugin's estimator, c = d and V = 2 error_sd^2 without correction (its
stored cross-validated error). Where those leave no spread to measure (the same
answers, equal contributions, no stored error), the interval is the plain mean's
adjusted one; the same answers always give d = 0. Intervals are clipped to [-1, 1].
It never uses a stored error twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from mdad.practice.estimators import (
    estimates_of,
    irt_jackknife,
    item_weights,
    predictor_shares,
    refuse_subset,
)
from mdad.practice.results import ItemScores, check_results, require_items

if TYPE_CHECKING:
    from mdad.practice.bundle import MicroBenchmarkFile

Z95 = 1.959963984540054

CONFIDENCE = 0.95

RULE = ("A is reliably above B when, on the items both answered, estimate(A) - "
        "estimate(B) is at least the MDAD for that many items, its paired 95% "
        "interval excludes 0, and the exact McNemar test of the items only one of "
        "them got right gives p < 0.05")

TOLERANCE = 1e-9  # float noise around the MDAD's bin edges


@dataclass(frozen=True)
class Verdicts:
    """The rule applied to one model against many, on the same items.

    Attributes
    ----------
    difference, low, high : float arrays of shape (n_others,): estimate(model) -
        estimate(other) and its paired 95% interval.
    reliable : bool array of shape (n_others,).
    """

    difference: np.ndarray
    low: np.ndarray
    high: np.ndarray
    reliable: np.ndarray


def verdicts_against(bundle: MicroBenchmarkFile, scores: np.ndarray, others: np.ndarray,
                     observed: np.ndarray, mdad: float | None,
                     reference: np.ndarray | None = None) -> Verdicts:
    """`RULE` for the model with `scores` (size,) against each row of `others`
    (n_others, size), on the `observed` items, with the arithmetic of
    `paired_difference` (which `compare` uses, so both always agree): one pair at a
    time, or for IRT estimators all at once from each model's jackknife estimates,
    the reference models' kept on the bundle when `reference` gives the rows' indices
    among them."""
    if bundle.estimator["kind"] == "irt":
        difference, low, high = _irt_pairs(bundle, scores, others, observed, reference)
    else:
        difference, low, high = np.empty((3, others.shape[0]))
        for k, other in enumerate(others):
            paired = paired_difference(bundle, scores, other, observed)
            difference[k], low[k], high[k] = paired.difference, paired.low, paired.high
    p_value = mcnemar_p(scores[observed], others[:, observed])
    return Verdicts(difference, low, high, is_reliable(difference, low, high, mdad, p_value))


def _irt_pairs(bundle: MicroBenchmarkFile, scores: np.ndarray, others: np.ndarray,
               observed: np.ndarray, reference: np.ndarray | None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`paired_difference`'s (difference, low, high) of an IRT estimator for the model
    against each row of `others`, each an array of shape (n_others,): the model's
    jackknife estimates are scored once, not once per pair."""
    from mdad.practice.estimators import irt_jackknife_estimates, jackknife_difference

    model = irt_jackknife_estimates(bundle, np.nan_to_num(scores)[None, :], observed)
    rows = (irt_jackknife_estimates(bundle, np.nan_to_num(others), observed)
            if reference is None else bundle.reference_jackknife(observed, reference))
    difference, variance = jackknife_difference(model, rows)
    n = int(observed.sum())
    fpc = max((bundle.pool_size - n) / max(bundle.pool_size - 1, 1), 0.0)
    same = ~np.any(np.nan_to_num(scores)[observed] != np.nan_to_num(others)[:, observed],
                   axis=1)
    # equal answers score equally in one pair's batch: no difference and no spread,
    # where two batches can leave last bits
    difference, variance = np.where(same, 0.0, difference), np.where(same, 0.0, variance)
    half = Z95 * np.sqrt(np.maximum(variance, 0.0) * fpc)
    low, high = np.maximum(difference - half, -1.0), np.minimum(difference + half, 1.0)
    for k in np.flatnonzero(~((half > 0) | (fpc == 0))):  # no spread: as the pair does
        paired = paired_difference(bundle, scores, others[k], observed)
        difference[k], low[k], high[k] = paired.difference, paired.low, paired.high
    return difference, low, high


def mcnemar_p(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """The exact two-sided McNemar p-value of `first` against `second`, scores of the
    same items on the last axis (shapes broadcast; a score above 0.5 is right): the
    binomial test at 1/2 of the items only one got right, 1 when there are none.
    Returns an array of the broadcast shape without the last axis."""
    from scipy.special import bdtr  # the binomial CDF; scipy.stats takes 0.8 s to import

    first_right, second_right = np.asarray(first) > 0.5, np.asarray(second) > 0.5
    only_first = np.sum(first_right & ~second_right, axis=-1)
    only_second = np.sum(second_right & ~first_right, axis=-1)
    fewer = np.minimum(only_first, only_second)
    return np.minimum(1.0, 2.0 * bdtr(fewer, only_first + only_second, 0.5))


def is_reliable(difference: np.ndarray, low: np.ndarray, high: np.ndarray,
                mdad: float | None, p_value: np.ndarray) -> np.ndarray:
    """`RULE`: |difference| >= mdad, the interval [low, high] excludes 0, and the
    McNemar `p_value` is below 1 - CONFIDENCE; never when the MDAD is not reached
    (None). Shapes broadcast."""
    difference, p_value = np.asarray(difference), np.asarray(p_value)
    if mdad is None:
        return np.zeros(np.broadcast(difference, low, high, p_value).shape, dtype=bool)
    return ((np.abs(difference) >= mdad - TOLERANCE) & excludes_zero(low, high)
            & (p_value < 1 - CONFIDENCE))


def excludes_zero(low: np.ndarray | float, high: np.ndarray | float) -> np.ndarray:
    return (np.asarray(low) > TOLERANCE) | (np.asarray(high) < -TOLERANCE)


@dataclass(frozen=True)
class PairedDifference:
    """estimate(first) - estimate(second) and its paired 95% interval, fractions in
    [-1, 1]; the interval need not be centred on `difference` (see the module
    docstring)."""

    difference: float
    low: float
    high: float


def paired_difference(bundle: MicroBenchmarkFile, first: np.ndarray, second: np.ndarray,
                      observed: np.ndarray) -> PairedDifference:
    """The paired difference of two models on the `observed` items (see the module
    docstring). `first`, `second`: (size,) scores (values outside `observed` are
    ignored). Equal answers on the observed items give a difference of exactly 0,
    whatever float noise the estimator would add; the interval has a nonzero width
    unless the items are the whole pool, and stays within [-1, 1].

    Raises
    ------
    DataError
        For an estimator that cannot work on a subset when some items are unobserved.
    """
    pair = np.nan_to_num(np.vstack([first, second]).astype(np.float64))
    n = int(observed.sum())
    fpc = max((bundle.pool_size - n) / max(bundle.pool_size - 1, 1), 0.0)
    kind = bundle.estimator["kind"]
    differences = pair[0, observed] - pair[1, observed]
    same = not differences.any()
    if kind == "linear":
        difference = float(np.subtract(*estimates_of(bundle, pair, observed)))
        return _adjusted(0.0 if same else difference, differences,
                         item_weights(bundle)[observed], fpc)
    if kind == "predictor":
        refuse_subset(bundle, observed)
        shares = predictor_shares(bundle, pair)
        contribution = shares[0] - shares[1]
        difference = float(contribution.sum())
        half = Z95 * np.sqrt(float(np.sum((contribution - difference / n) ** 2)) * fpc)
    elif kind == "irt":
        difference, variance = irt_jackknife(bundle, pair, observed)
        half = Z95 * np.sqrt(max(variance, 0.0) * fpc)
    else:  # a plugin's estimator: each estimate's stored cross-validated error
        difference = float(np.subtract(*estimates_of(bundle, pair, observed)))
        half = Z95 * np.sqrt(2.0) * (bundle.error_sd or 0.0)
    difference = 0.0 if same else difference
    if half > 0 or fpc == 0:
        return _clipped(difference, difference - half, difference + half)
    # no spread to measure (equal answers, equal contributions, no stored error): the
    # plain mean's adjusted interval, never a width of 0
    return _adjusted(difference, differences, np.ones(n), fpc)


def _adjusted(difference: float, differences: np.ndarray, weights: np.ndarray,
              fpc: float) -> PairedDifference:
    """`adjusted_paired_mean`'s interval, finite-population corrected: the pull toward
    its centre shrinks with the correction, to none on the whole pool (exact there)."""
    adjusted, variance = adjusted_paired_mean(differences, weights)
    centre = difference + (adjusted - difference) * fpc
    half = Z95 * np.sqrt(variance * fpc)
    return _clipped(difference, centre - half, centre + half)


def _clipped(difference: float, low: float, high: float) -> PairedDifference:
    """No two accuracies differ by more than 1."""
    return PairedDifference(difference, max(float(low), -1.0), min(float(high), 1.0))


def adjusted_paired_mean(differences: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
    """Bonett and Price's adjusted paired mean, weighted.

    Parameters
    ----------
    differences : float array of shape (n,), per-item score differences in [-1, 1].
    weights : float array of shape (n,), the estimator's item weights (any scale).

    Returns
    -------
    centre : the weighted mean of `differences` with two more items, +1 and -1, each of
        the mean weight (1 when n = 0).
    variance : the per-item (sandwich) variance of that mean, before any finite
        population correction; positive for every n >= 0, so a Wald interval from it
        never has a width of 0.

    With equal weights and 0/1 scores, centre +- 1.96 sqrt(variance) is Bonett and
    Price's (2012) adjusted Wald interval: centre (b + 1 - c - 1) / (n + 2), variance
    (p_b + p_c - centre^2) / (n + 2), b and c the items only the first, only the second
    got right, p_b = (b + 1) / (n + 2), p_c = (c + 1) / (n + 2). For fractional scores
    the two pseudo-items of +-1 are conservative: small per-item differences get a
    wider interval than the plain one.

    >>> centre, variance = adjusted_paired_mean(np.array([1.0]), np.array([1.0]))
    >>> round(centre * 3, 12), round(variance * 27, 12)  # 1/3 and 8/27, not 0
    (1.0, 8.0)
    """
    pseudo = float(np.mean(weights)) if weights.size else 1.0
    z = np.concatenate([np.asarray(differences, dtype=np.float64), [1.0, -1.0]])
    w = np.concatenate([np.asarray(weights, dtype=np.float64), [pseudo, pseudo]])
    total = w.sum()
    centre = float(np.dot(w, z) / total)
    return centre, float(np.sum((w * (z - centre)) ** 2) / total**2)


@dataclass(frozen=True)
class Footing:
    """What a verdict on models stands on, the same for `Estimate` and `Comparison`
    (both extend it): the items it used and the MDAD for that many.

    Attributes
    ----------
    confidence : the interval's and the verdicts' confidence level (0.95), for each
        verdict on its own.
    items_used, size : items answered and used, of the micro-benchmark's size.
    partial : True when fewer items were used than the micro-benchmark holds.
    mdad : the MDAD for `items_used` items, or None when not reached (then no model is
        reliably above or below; `max_gap` bounds it from below).
    mdad_reached : whether it was.
    max_gap : the largest |gap| between the pairs behind the MDAD (None when unknown).
    mdad_pairs, mdad_how : the model pairs behind the MDAD (None when the study that
        gave it does not say) and where it comes from (`MicroBenchmarkFile`).
    mdad_crossing_pairs : the pairs in the gap bin that sets it, for `items_used` items
        (0 when not reached, None when the file does not record them).
    """

    confidence: float
    items_used: int
    size: int
    partial: bool
    mdad: float | None
    mdad_reached: bool
    max_gap: float | None
    mdad_pairs: int | None
    mdad_how: str
    mdad_crossing_pairs: int | None

    @staticmethod
    def of(bundle: MicroBenchmarkFile, used: int) -> dict[str, Any]:
        """The footing of a verdict from `used` of `bundle`'s items, as the keyword
        arguments of an `Estimate` or a `Comparison`."""
        _, mdad = bundle.mdad_at(used)
        return {"confidence": CONFIDENCE, "items_used": used, "size": bundle.size,
                "partial": used < bundle.size, "mdad": mdad, "mdad_reached": mdad is not None,
                "max_gap": bundle.max_gap, "mdad_pairs": bundle.mdad_pairs,
                "mdad_how": bundle.mdad_how,
                "mdad_crossing_pairs": bundle.crossing_pairs_at(used)}


@dataclass(frozen=True)
class Comparison(Footing):
    """Two models on the same items (`items_used`: the items both answered).

    Attributes
    ----------
    first, second : the models' names.
    difference, low, high : estimate(A) - estimate(B) and its paired 95% interval.
    only_first, only_second : items right for A only, for B only (0/1 scores).
    p_value : the exact two-sided McNemar test of the discordant items.
    verdict : "reliable" under `RULE`, else "too close to call".
    winner : the reliably better model's name, or None when too close.
    reason : why it is too close ("" when reliable).
    rule : `RULE`.
    The rest: `Footing`.
    """

    first: str
    second: str
    difference: float
    low: float
    high: float
    only_first: int
    only_second: int
    p_value: float
    verdict: str
    winner: str | None
    reason: str
    rule: str


def compare_models(bundle: MicroBenchmarkFile, first: ItemScores, second: ItemScores, *,
                   allow_partial: bool = False) -> Comparison:
    """Compare two models on a micro-benchmark: is their gap real?

    The paired difference of the two models' estimates on the items both answered,
    judged by `RULE`: A is reliably above B when estimate(A) - estimate(B) is at least
    the MDAD for that many items, its paired 95% interval excludes 0, and the exact
    two-sided McNemar test of the items only one of them got right (a score above 0.5
    counts as right) gives p < 0.05. An MDAD not reached at that many items makes
    neither model reliably better.

    Parameters
    ----------
    bundle : MicroBenchmarkFile
        The saved micro-benchmark (``MicroBenchmarkFile.load(path)``): its items, its
        estimator and its MDAD curve.
    first, second : ItemScores
        The two models' scores on the file's items (`read_model_scores`): one score in
        [0, 1] per item, NaN for an item not answered.
    allow_partial : bool, default False
        Judge from the items both models answered when they share fewer than the
        micro-benchmark holds (its MDAD then read at that many items); without it, any
        missing item is refused.

    Returns
    -------
    Comparison
        The difference estimate(first) - estimate(second) and its paired 95% interval
        (accuracy fractions), the counts of items only one model got right, the McNemar
        p-value, the verdict (``"reliable"`` or ``"too close to call"``), the winner
        (None when too close) and the reason, with the items used and the MDAD for them
        (`Footing`).

    Raises
    ------
    ConfigError
        For a `bundle` or results of the wrong type.
    DataError
        For scores that are not the file's items' (`check_results`); when the two share
        fewer items than the micro-benchmark holds and `allow_partial` is False, or
        share none; or when they share a number of items the file has no MDAD for.
    """
    check_results(bundle, first, "first")
    check_results(bundle, second, "second")
    both = ~np.isnan(first.scores) & ~np.isnan(second.scores)
    require_items(bundle, both, allow_partial=allow_partial,
                  who=f"{first.model} and {second.model}")
    paired = paired_difference(bundle, first.scores, second.scores, both)
    difference, low, high = paired.difference, paired.low, paired.high
    a, b = first.scores[both], second.scores[both]
    only_first = int(np.sum((a > 0.5) & (b <= 0.5)))
    only_second = int(np.sum((b > 0.5) & (a <= 0.5)))
    footing = Footing.of(bundle, int(both.sum()))
    p_value = float(mcnemar_p(a, b))
    mdad = footing["mdad"]
    reliable = bool(is_reliable(difference, low, high, mdad, p_value))
    winner = (first.model if difference > 0 else second.model) if reliable else None
    return Comparison(
        **footing, first=first.model, second=second.model, difference=difference, low=low,
        high=high, only_first=only_first, only_second=only_second, p_value=p_value,
        verdict="reliable" if reliable else "too close to call", winner=winner,
        reason=_reason(difference, low, high, mdad, p_value), rule=RULE)


def _reason(difference: float, low: float, high: float, mdad: float | None,
            p_value: float) -> str:
    """Why a difference is too close to call ('' when it is reliable)."""
    if mdad is None:
        return "the MDAD is not reached at this size, so no gap is reliable"
    if abs(difference) < mdad - TOLERANCE:
        return "the difference is below the MDAD"
    if not excludes_zero(low, high):
        return "the paired 95% interval includes 0"
    if p_value >= 1 - CONFIDENCE:
        return (f"the exact McNemar test gives p = {p_value:.2g}, not below "
                f"{1 - CONFIDENCE:.2g}: too few items that only one of them got right")
    return ""
