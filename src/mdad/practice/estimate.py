"""A new model's results on a saved micro-benchmark: its estimated full score, which
models it is reliably above or below, and whether two models' gap is real.

`estimate`'s 95% interval of the full accuracy holds at every true accuracy, not only
on average (`accuracy_interval`): exact for uniform random sampling, a Neyman belt
calibrated on held-out models for every other method (`mdad.practice.calibration`).

`compare`'s rule (`RULE`), for one pair at 95%: model A is reliably above model B when,
on the items both answered, the estimated difference d = estimate(A) - estimate(B)
(the micro-benchmark's own estimator applied to each model's answers) is at least the
MDAD for that many items, its paired 95% interval excludes 0, and the exact two-sided
McNemar test of the items only one of them got right (a score above 0.5 counts as
right) gives p < 0.05: the interval is a normal approximation, which claims too much
from a few such items (5 of 10 that only A got right exclude 0 from it; the exact test
gives p = 0.0625). An MDAD not reached makes no one reliably above or below.

`estimate`'s lists (`LIST_RULE`) must hold as lists: a user reads them whole. A
reference model, whose full accuracy the file stores, is listed when that accuracy lies
outside the new model's 99.9% interval, the estimate is at least the MDAD from it, and
`RULE` applied to the two models' answers names the same winner (through the very
function `compare` uses). One event makes a list wrong, the interval missing on its
side, so its false discovery rate is at most that chance.

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

import hashlib
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from mdad.errors import ConfigError, DataError
from mdad.practice.answers import read_answers_csv

if TYPE_CHECKING:
    from mdad.practice.bundle import MicroBenchmarkFile

Z95 = 1.959963984540054
CONFIDENCE = 0.95
RULE = ("A is reliably above B when, on the items both answered, estimate(A) - "
        "estimate(B) is at least the MDAD for that many items, its paired 95% "
        "interval excludes 0, and the exact McNemar test of the items only one of "
        "them got right gives p < 0.05")
FOREIGN_SHARE = 0.1  # of a result's items not the dataset's, beyond which it is refused
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
_TOLERANCE = 1e-9  # float noise around the MDAD's bin edges


@dataclass(frozen=True)
class ItemScores:
    """One model's scores on the micro-benchmark's items, and what did not match.

    Attributes
    ----------
    scores : float array of shape (size,), NaN for an item the results lack.
    missing : the micro-benchmark's items the results lack.
    extra : items in the results that are not in the micro-benchmark (ignored).
    sha256 : the fingerprint of the result files read, and only those: as
        `mdad.data.files.files_sha256` of them, relative to the results' folder ("" when
        not read from files).
    result_items : every item id the results hold (of the tasks read).
    notes : what the reader said (mixed lm-eval settings, allowed).
    """

    model: str
    scores: np.ndarray
    missing: list[str]
    extra: int
    sha256: str = ""
    result_items: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def check_metric(bundle: MicroBenchmarkFile, metric: str | None, *,
                 allow_other_metric: bool = False) -> None:
    """Refuse a `metric` other than the one the micro-benchmark was built on.

    Raises
    ------
    ConfigError
        When `metric` differs from ``bundle.lm_eval_metric`` and `allow_other_metric`
        is False.
    """
    if metric is not None and metric != bundle.lm_eval_metric and not allow_other_metric:
        built_on = bundle.lm_eval_metric
        raise ConfigError(f"metric {metric}: the micro-benchmark was built on {built_on}; "
                          f"its MDAD and estimator hold for {built_on} only (pass "
                          "allow_other_metric to use it anyway)",
                          parameters=("metric", "allow_other_metric"))


def read_model_scores(path: Path, bundle: MicroBenchmarkFile, *, metric: str | None = None,
                      allow_other_metric: bool = False,
                      allow_mixed_settings: bool = False) -> ItemScores:
    """One model's scores on the micro-benchmark's items, read from its per-item
    results: an lm-eval ``--log_samples`` folder or file, or a CSV with columns
    ``item_id`` and ``correct``.

    Not `mdad.data.read_results`, which reads many models' results into a
    `ResponseMatrix`: this reads one model's, matched to `bundle`'s items.

    Raises
    ------
    ConfigError
        For a `metric` other than the micro-benchmark's, unless `allow_other_metric`.
    DataError
        For a file with several models, duplicated items, no item of the
        micro-benchmark at all, or items that are not the dataset's (results for another
        task or dataset); lm-eval runs of mixed n-shot unless `allow_mixed_settings`.
    """
    check_metric(bundle, metric, allow_other_metric=allow_other_metric)
    scores = read_item_scores(path, bundle.items, bundle.lm_eval_items,
                              metric=metric or bundle.lm_eval_metric, dataset=bundle.dataset,
                              allow_mixed_settings=allow_mixed_settings)
    check_dataset_items(bundle, scores, path)
    return scores


def check_dataset_items(bundle: MicroBenchmarkFile, scores: ItemScores, path: Path) -> None:
    """Refuse results of which more than `FOREIGN_SHARE` of the items are not the
    dataset's (answers to another benchmark whose item ids overlap, e.g. MMLU-Pro's
    numbers given for GPQA). A file older than format /4 does not record the dataset's
    items: not checked.

    Raises
    ------
    DataError
        Naming how many of the results' items are foreign and one of them.
    """
    from mdad.practice.bundle_format import in_compact

    if bundle.dataset_item_ids is None or not scores.result_items:
        return
    ids = scores.result_items
    if bundle.lm_eval_items is not None and all("/" in i for i in ids) and not all(
            "/" in i for i in bundle.items):
        ids = [i.rsplit("/", 1)[1] for i in ids]  # task/doc names of a doc-numbered dataset
    foreign = [i for i, known in zip(ids, in_compact(bundle.dataset_item_ids, ids),
                                     strict=True) if not known]
    # a stray id or two among a dataset's answers is ignored (and counted as extra);
    # more is answers to another benchmark whose ids overlap this one's
    if len(foreign) > FOREIGN_SHARE * len(ids):
        raise DataError(f"{path}: {len(foreign)} of its {len(ids)} items are not items of "
                        f"{bundle.dataset} (e.g. {foreign[0]!r}): answers to another "
                        f"benchmark? pass this model's answers to {bundle.dataset}")


def read_item_scores(path: Path, items: list[str], lm_eval_items: list[str] | None, *,
                     metric: str, dataset: str, what: str = "micro-benchmark",
                     tasks: Collection[str] | None = None,
                     allow_none: bool = False,
                     allow_mixed_settings: bool = False) -> ItemScores:
    """One model's scores on `items` (their ``task/doc_id`` names are `lm_eval_items`,
    None when the dataset has no lm-eval mapping), read from an lm-eval
    ``--log_samples`` folder or file (with `metric`) or a CSV ``item_id,correct``.

    Of lm-eval results, the sample files of `tasks` are read (default: the items' own
    tasks; an adaptive test passes all of its tasks, so that the same folder is read,
    and fingerprinted, alike whichever batch is pending), never another task's, nor
    any other file. The returned `sha256` covers exactly the files read: of a CSV, the
    very bytes parsed (hashed as they are read); of lm-eval files too, as the loader
    parses them.

    Raises
    ------
    DataError
        For a file with several models, duplicated items, or none of `items` (unless
        `allow_none`: then every item is `missing`); for lm-eval records that hold
        only ``exact_match`` where `metric` is ``acc`` or ``acc_norm`` (never scored by
        another metric than the one asked).
    """
    path = Path(path)
    if path.suffix.lower() == ".csv":
        digest = hashlib.sha256()
        model, values = path.stem, read_answers_csv(path, feed=digest.update)
        notes = []
        # `files_sha256([path], path.parent)` of the bytes parsed, not of a second reading
        sha256 = hashlib.sha256(f"{path.name}\0{digest.hexdigest()}\n".encode()).hexdigest()
        wanted = items
    else:
        from mdad.data.lm_eval import load_lm_eval_samples

        if lm_eval_items is None:
            raise DataError(f"{path}: lm-eval results, but the {what}'s dataset {dataset} has "
                            "no lm-eval task mapping; pass a CSV")
        wanted = lm_eval_items
        # only these tasks: results of another task say so by name; no other metric
        # stands in for `metric` (exact_match for acc_norm), which the MDAD and the fit
        # were not measured on
        matrix = load_lm_eval_samples(
            path, metric=metric, fallback_metric=False,
            tasks={item.rsplit("/", 1)[0] for item in wanted} if tasks is None else tasks,
            allow_mixed_settings=allow_mixed_settings)
        notes = list(matrix.notes)
        if matrix.n_models != 1:
            raise DataError(f"{path}: holds results of {matrix.n_models} models; pass one "
                            "model's folder or file")
        model, sha256 = str(matrix.model_names[0]), matrix.sha256 or ""
        values = {str(i): float(v) for i, v in zip(matrix.item_ids, matrix.correctness[0],
                                                  strict=True) if not np.isnan(v)}
    found = [item for item in wanted if item in values]
    if not found and not allow_none:
        example = next(iter(values), "none")
        raise DataError(f"{path}: none of the {what}'s {len(wanted)} items are in "
                        f"these results (e.g. {wanted[0]!r}, results have {example!r}); "
                        "are they for another task or dataset?")
    scores = np.array([values.get(item, np.nan) for item in wanted])
    missing = [item for item, s in zip(items, scores, strict=True) if np.isnan(s)]
    return ItemScores(model, scores, missing, len(set(values) - set(wanted)), sha256,
                      list(values), notes)


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


@dataclass(frozen=True)
class Estimate:
    """A model's estimated full-benchmark accuracy and where it stands.

    Attributes
    ----------
    accuracy, low, high : the estimate and its 95% interval (fractions).
    confidence : the interval's and the verdicts' confidence level (0.95), for each
        verdict on its own, not for all of them at once.
    items_used, size : items answered and used, of the micro-benchmark's size.
    partial : True when fewer items were used than the micro-benchmark holds.
    mdad : the MDAD for `items_used` items, or None when not reached (then no model
        is reliably above or below; `max_gap` bounds it from below).
    mdad_pairs, mdad_how : the model pairs behind the MDAD (None when the study that
        gave it does not say) and where it comes from (`MicroBenchmarkFile`).
    mdad_crossing_pairs : the pairs in the gap bin that sets it, for `items_used`
        items (0 when not reached, None when the file does not record them).
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
    """

    model: str
    accuracy: float
    low: float
    high: float
    confidence: float
    items_used: int
    size: int
    partial: bool
    missing: list[str]
    extra: int
    mdad: float | None
    mdad_reached: bool
    max_gap: float | None
    mdad_pairs: int | None
    mdad_how: str
    mdad_crossing_pairs: int | None
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


def require_items(bundle: MicroBenchmarkFile, observed: np.ndarray, *, allow_partial: bool,
                  who: str) -> None:
    """Refuse results answering fewer items than the micro-benchmark holds, unless
    `allow_partial`; refuse none at all, and a size the file has no MDAD for.

    Raises
    ------
    DataError
        With one line saying how many items are missing.
    """
    used = int(observed.sum())
    if used == 0:
        raise DataError(f"{who}: no item of the micro-benchmark was answered")
    if used < bundle.size and not allow_partial:
        raise DataError(f"{who}: {bundle.size - used} of the micro-benchmark's {bundle.size} "
                        f"items are missing; run them, or pass allow_partial to judge "
                        f"from the {used} answered items only", parameters=("allow_partial",))
    if used < bundle.size and not bundle.mdad_at(used)[0]:
        raise DataError(f"{who}: the micro-benchmark has no MDAD for {used} items (its "
                        f"curve covers {bundle.mdad_curve_sizes[0]}.."
                        f"{bundle.mdad_curve_sizes[-1]} items); cannot judge from them")


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
    value = float(_estimates(bundle, np.nan_to_num(results.scores)[None, :], observed)[0])
    interval = accuracy_interval(bundle, value, used)
    _, mdad = bundle.mdad_at(used)
    strict = accuracy_interval(bundle, value, used, LIST_CONFIDENCE)
    # an estimate no reference model's accuracy gives is read by the belt's extrapolation,
    # whose far tails no held-out model tested: no list-level claim rests on it
    withheld = interval.unexplained or interval.beyond
    ahead, behind = _listed(bundle, results.scores, observed, value, mdad,
                            None if withheld else strict)
    names = np.asarray(bundle.reference_models)
    judged = ~(ahead | behind) & (not withheld)  # withheld: no model is judged at all
    return Estimate(
        model=results.model, accuracy=value, low=interval.low, high=interval.high,
        confidence=CONFIDENCE, items_used=used, size=bundle.size, partial=used < bundle.size,
        missing=results.missing, extra=results.extra, mdad=mdad,
        mdad_reached=mdad is not None, max_gap=bundle.max_gap,
        mdad_pairs=bundle.mdad_pairs, mdad_how=bundle.mdad_how,
        mdad_crossing_pairs=bundle.crossing_pairs_at(used), above=names[ahead].tolist(),
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
    clears = np.abs(value - truth) >= mdad - _TOLERANCE
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
        from mdad.practice.bundle_format import FORMAT
        from mdad.practice.calibration import MIN_MODELS

        why = (f"a format {bundle.format} file: select again for an interval calibrated "
               "at every accuracy" if bundle.format != FORMAT else
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
                            f"models at every accuracy{scaled}",
                            bool(calibration.beyond(value, scale)),
                            bool(calibration.unexplained(value, scale)),
                            low_censored=bool(low_censored), high_censored=bool(high_censored))


def verdicts_against(bundle: MicroBenchmarkFile, scores: np.ndarray, others: np.ndarray,
                     observed: np.ndarray, mdad: float | None) -> Verdicts:
    """`RULE` for the model with `scores` (size,) against each row of `others`
    (n_others, size), on the `observed` items, one pair at a time through
    `paired_difference` (the arithmetic `compare` does, so both always agree)."""
    difference, low, high = np.empty((3, others.shape[0]))
    for k, other in enumerate(others):
        paired = paired_difference(bundle, scores, other, observed)
        difference[k], low[k], high[k] = paired.difference, paired.low, paired.high
    p_value = mcnemar_p(scores[observed], others[:, observed])
    return Verdicts(difference, low, high, is_reliable(difference, low, high, mdad, p_value))


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
    return ((np.abs(difference) >= mdad - _TOLERANCE) & _excludes_zero(low, high)
            & (p_value < 1 - CONFIDENCE))


def _excludes_zero(low: np.ndarray | float, high: np.ndarray | float) -> np.ndarray:
    return (np.asarray(low) > _TOLERANCE) | (np.asarray(high) < -_TOLERANCE)


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
        difference = float(np.subtract(*_estimates(bundle, pair, observed)))
        return _adjusted(0.0 if same else difference, differences,
                         _weights(bundle)[observed], fpc)
    if kind == "predictor":
        _refuse_subset(bundle, observed)
        shares = _predictor_shares(bundle, pair)
        contribution = shares[0] - shares[1]
        difference = float(contribution.sum())
        half = Z95 * np.sqrt(float(np.sum((contribution - difference / n) ** 2)) * fpc)
    elif kind == "irt":
        difference, variance = _irt_jackknife(bundle, pair, observed)
        half = Z95 * np.sqrt(max(variance, 0.0) * fpc)
    else:  # a plugin's estimator: each estimate's stored cross-validated error
        difference = float(np.subtract(*_estimates(bundle, pair, observed)))
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


def _weights(bundle: MicroBenchmarkFile) -> np.ndarray:
    weights = bundle.estimator.get("weights")
    return (np.ones(bundle.size) if weights is None
            else np.asarray(weights, dtype=np.float64))


def _refuse_subset(bundle: MicroBenchmarkFile, observed: np.ndarray) -> None:
    if not observed.all():
        raise DataError(f"{bundle.method}'s estimator predicts the other items from every "
                        f"anchor and cannot work on a subset; the results lack "
                        f"{int((~observed).sum())} of its {bundle.size} items")


def _predictor_shares(bundle: MicroBenchmarkFile, scores: np.ndarray) -> np.ndarray:
    """Anchor Points' predictor as a sum over anchors: share of the floaters predicted
    correct through each anchor, shape (n_models, size); rows sum to the estimate."""
    nearest = np.asarray(bundle.estimator["nearest"], dtype=np.int64)
    slope = np.asarray(bundle.estimator["slope"], dtype=np.float64)
    intercept = np.asarray(bundle.estimator["intercept"], dtype=np.float64)
    from scipy.special import logit

    from mdad.selection.anchor_points import _CLIP as clip  # the predictor's own clipping

    anchors = logit(np.clip(scores, clip, 1 - clip))
    correct = (anchors[:, nearest] * slope + intercept > 0).astype(np.float64)
    one_hot = np.zeros((nearest.size, scores.shape[1]))
    one_hot[np.arange(nearest.size), nearest] = 1.0
    return correct @ one_hot / max(nearest.size, 1)


def _irt_estimates(bundle: MicroBenchmarkFile, scores: np.ndarray,
                   observed: np.ndarray) -> np.ndarray:
    """p-IRT / gp-IRT of each row of `scores` (n_rows, size) fitted on its own
    `observed` anchors (bool, same shape): unobserved anchors join the items the IRT
    model predicts, and gp-IRT's anchor weights are renormalised over the observed."""
    from mdad.irt.model import item_curve, map_ability

    estimator = bundle.estimator
    a = np.vstack([np.asarray(estimator["discrimination"], dtype=np.float64),
                   np.asarray(estimator["others_discrimination"],
                              dtype=np.float64).reshape(-1, len(estimator["discrimination"][0]))])
    b = np.concatenate([np.asarray(estimator["difficulty"], dtype=np.float64),
                        np.asarray(estimator["others_difficulty"], dtype=np.float64)])
    size = scores.shape[1]
    responses = np.where(observed, scores, np.nan)
    padded = np.full((scores.shape[0], b.size), np.nan)
    padded[:, :size] = responses
    ability = map_ability(responses, a[:size], b[:size])  # others are all unobserved
    predicted = item_curve(ability, a, b)
    known = ~np.isnan(padded)
    pirt = np.where(known, np.nan_to_num(padded), predicted).mean(axis=1)
    weight = float(estimator.get("gp_weight") or 0.0)
    if weight == 0.0:
        return pirt
    weights = np.where(observed, _weights(bundle), 0.0)
    anchor = np.sum(weights * np.nan_to_num(responses), axis=1) / weights.sum(axis=1)
    return weight * anchor + (1 - weight) * pirt


def _irt_jackknife(bundle: MicroBenchmarkFile, pair: np.ndarray,
                   observed: np.ndarray) -> tuple[float, float]:
    """The IRT estimators' difference of the two rows of `pair` on the observed anchors,
    and its delete-one jackknife variance over those anchors."""
    kept = np.flatnonzero(observed)
    masks = np.repeat(observed[None, :], kept.size + 1, axis=0)
    masks[np.arange(1, kept.size + 1), kept] = False  # row k + 1 leaves anchor k out
    rows = np.repeat(pair, kept.size + 1, axis=0)  # first model's rows, then the second's
    estimates = _irt_estimates(bundle, rows, np.vstack([masks, masks]))
    differences = estimates[: kept.size + 1] - estimates[kept.size + 1:]
    if kept.size < 2:
        return float(differences[0]), np.inf
    left_out = differences[1:]
    variance = (kept.size - 1) / kept.size * np.sum((left_out - left_out.mean()) ** 2)
    return float(differences[0]), float(variance)


def _estimates(bundle: MicroBenchmarkFile, scores: np.ndarray,
               observed: np.ndarray) -> np.ndarray:
    """The micro-benchmark's estimate for each row of `scores` (n_models, size) from the
    `observed` items only: linear estimators re-weighted over them, IRT estimators
    re-fitted on them, Anchor Points' predictor refuses a subset."""
    kind = bundle.estimator["kind"]
    if kind == "linear":
        weights = _weights(bundle)[observed]
        return scores[:, observed] @ weights / weights.sum()
    if kind == "predictor":
        _refuse_subset(bundle, observed)
        return _predictor_shares(bundle, scores).sum(axis=1)
    if kind == "irt":
        return _irt_estimates(bundle, scores, np.broadcast_to(observed, scores.shape))
    # another method's own estimator (a plugin's): as its class loads it, all items only
    _refuse_subset(bundle, observed)
    return bundle.to_microbenchmark().estimate(scores)


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


@dataclass(frozen=True)
class Comparison:
    """Two models on the same items.

    Attributes
    ----------
    difference, low, high : estimate(A) - estimate(B) and its paired 95% interval.
    confidence : the interval's confidence level (0.95).
    items_used, size, partial : items both answered, of the micro-benchmark's size.
    only_first, only_second : items right for A only, for B only (0/1 scores).
    p_value : the exact two-sided McNemar test of the discordant items.
    mdad : the MDAD for `items_used` items, None when not reached.
    mdad_pairs, mdad_how, mdad_crossing_pairs : as in `Estimate`.
    verdict : "reliable" under `RULE`, else "too close to call".
    winner : the reliably better model's name, or None when too close.
    reason : why it is too close ("" when reliable).
    """

    first: str
    second: str
    difference: float
    low: float
    high: float
    confidence: float
    items_used: int
    size: int
    partial: bool
    only_first: int
    only_second: int
    p_value: float
    mdad: float | None
    mdad_reached: bool
    max_gap: float | None
    mdad_pairs: int | None
    mdad_how: str
    mdad_crossing_pairs: int | None
    verdict: str
    winner: str | None
    reason: str
    rule: str


def compare_models(bundle: MicroBenchmarkFile, first: ItemScores, second: ItemScores, *,
                   allow_partial: bool = False) -> Comparison:
    """The paired difference of two models on the items both answered, judged by
    `RULE`.

    Raises
    ------
    DataError
        When the two share fewer items than the micro-benchmark holds and
        `allow_partial` is False, or share none.
    """
    both = ~np.isnan(first.scores) & ~np.isnan(second.scores)
    require_items(bundle, both, allow_partial=allow_partial,
                  who=f"{first.model} and {second.model}")
    paired = paired_difference(bundle, first.scores, second.scores, both)
    difference, low, high = paired.difference, paired.low, paired.high
    a, b = first.scores[both], second.scores[both]
    only_first = int(np.sum((a > 0.5) & (b <= 0.5)))
    only_second = int(np.sum((b > 0.5) & (a <= 0.5)))
    n = int(both.sum())
    p_value = float(mcnemar_p(a, b))
    _, mdad = bundle.mdad_at(n)
    reliable = bool(is_reliable(difference, low, high, mdad, p_value))
    winner = (first.model if difference > 0 else second.model) if reliable else None
    return Comparison(first.model, second.model, difference, low, high,
                      CONFIDENCE, n, bundle.size, n < bundle.size,
                      only_first, only_second, p_value, mdad, mdad is not None,
                      bundle.max_gap, bundle.mdad_pairs, bundle.mdad_how,
                      bundle.crossing_pairs_at(n), "reliable" if reliable else "too close to call",
                      winner, _reason(difference, low, high, mdad, p_value), RULE)


def _reason(difference: float, low: float, high: float, mdad: float | None,
            p_value: float) -> str:
    """Why a difference is too close to call ('' when it is reliable)."""
    if mdad is None:
        return "the MDAD is not reached at this size, so no gap is reliable"
    if abs(difference) < mdad - _TOLERANCE:
        return "the difference is below the MDAD"
    if not _excludes_zero(low, high):
        return "the paired 95% interval includes 0"
    if p_value >= 1 - CONFIDENCE:
        return (f"the exact McNemar test gives p = {p_value:.2g}, not below "
                f"{1 - CONFIDENCE:.2g}: too few items that only one of them got right")
    return ""
