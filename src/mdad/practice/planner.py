"""Analytic MDAD of uniform (and subtask-stratified) random micro-benchmarks.

For two models A and B on a pool of N items, let a items be right for A only and b
for B only. A uniform sample of n items without replacement counts X of the first and
Y of the second; the estimated gap is (X - Y) / n and the pair is ranked correctly
when X - Y has the sign of a - b (a tie is a disagreement, as in the paper). With
Z the per-item difference (+1, -1 or 0), X - Y is a sum of n draws of Z without
replacement, so

    E[X - Y] = n (a - b) / N,
    Var[X - Y] = n (p_a + p_b - (p_a - p_b)^2) (N - n) / (N - 1),

with p_a = a / N, p_b = b / N, the finite population correction included. The
probability of a correct ranking is taken from the normal approximation with a
continuity correction (X - Y >= 1 for a > b). `exact_agreement` computes it exactly
from the multivariate hypergeometric law, for checking; the approximation is exact
in the limit of large n and N - n, and tests bound its error on real data.

MDAD then follows the paper's rule on the pairs' probabilities: the first 0.5-point
bin of |true gap| whose mean probability reaches the threshold. When no bin does, the
MDAD is censored: not reached within the observed gaps (larger than the largest gap
between the pairs), never a number.

Two references (`AGAINST`): "full" ranks pairs as the whole pool does (finite
population correction over its N items, above); "universe" treats the pool as a sample
of its task, each item of the micro-benchmark drawn with replacement from an infinite
population with the pair's per-item probabilities p_a, p_b (no correction), so that
even the whole pool (n = N) has an MDAD: the gap the benchmark itself resolves.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from mdad.errors import ConfigError, DataError, check_open_unit, check_type, check_whole
from mdad.grouping import checked_codes
from mdad.metrics.mdad import DEFAULT_THRESHOLD
from mdad.metrics.pairs import bin_edges, gap_bins

# What an MDAD is measured against: the whole pool, or the task the pool samples.
AGAINST = ("full", "universe")


@dataclass(frozen=True, eq=False)
class PairStructure:
    """Disagreement counts of pairs of models, per subtask.

    Attributes
    ----------
    only_first, only_second : int arrays of shape (n_pairs, n_subtasks)
        Items right for the pair's first model only, and for its second only.
    subtask_sizes : int array of shape (n_subtasks,)
    gap : float array of shape (n_pairs,), the pairs' accuracy gap on the pool.
    """

    only_first: np.ndarray
    only_second: np.ndarray
    subtask_sizes: np.ndarray
    gap: np.ndarray


def pair_structure(correctness: np.ndarray, subtask_codes: np.ndarray,
                   pairs: tuple[np.ndarray, np.ndarray] | None = None) -> PairStructure:
    """Disagreement counts of every pair (i < j) of models, or of the given `pairs`.

    For each pair and subtask, how many items only the first model got right and how
    many only the second did (a score above 0.5 counts as right), with the pair's
    accuracy gap on the pool: what `analytic_mdad` and `size_for_gap` read.

    Parameters
    ----------
    correctness : numpy.ndarray
        Scores of shape (n_models, n_items), in [0, 1] (0/1, or partial credit read
        as right above 0.5); no NaN.
    subtask_codes : numpy.ndarray
        Int array of shape (n_items,): each item's subtask code, >= 0.
    pairs : tuple of (numpy.ndarray, numpy.ndarray) or None, default None
        (first, second) model index arrays of one shape; None: all pairs i < j.

    Returns
    -------
    PairStructure
        `only_first` and `only_second`, int arrays of shape (n_pairs, n_subtasks); the
        items per subtask, `subtask_sizes` (n_subtasks,); and the pairs' accuracy gap
        on the pool (first minus second, fractions), `gap` (n_pairs,).

    Raises
    ------
    DataError
        For correctness that is not a 2-D array of scores in [0, 1], codes that are
        not one code >= 0 per item, or pairs outside the models.
    """
    scores = np.asarray(correctness)
    codes = np.asarray(subtask_codes)
    if (scores.ndim != 2 or scores.dtype.kind not in "buif" or not scores.size
            or not ((scores >= 0) & (scores <= 1)).all()):  # NaN fails too
        raise DataError("correctness must be a non-empty 2-D (models, items) array of scores "
                        "in [0, 1]",
                        parameters=("correctness",))
    subtask_codes = checked_codes(codes, scores.shape[1])
    values = (scores > 0.5).astype(np.float32)
    if pairs is None:
        pairs = np.triu_indices(values.shape[0], k=1)
    if not isinstance(pairs, tuple | list | np.ndarray) or len(pairs) != 2:
        raise DataError("pairs must be (first, second): two arrays of model indices, or "
                        "one array of shape (2, n_pairs)",
                        parameters=("pairs",))
    first, second = (np.asarray(p) for p in pairs)
    if (first.shape != second.shape or first.dtype.kind not in "iu"
            or second.dtype.kind not in "iu") or ((first < 0) | (first >= values.shape[0])
                                       | (second < 0) | (second >= values.shape[0])).any():
        raise DataError(f"pairs must be two arrays of one shape of model indices in "
                        f"0..{values.shape[0] - 1}", parameters=("pairs",))
    n_subtasks = int(subtask_codes.max()) + 1
    # right counts per subtask, and both-right counts per pair and subtask from each
    # subtask's models x models product: float32 counts are exact below 2^24, and no
    # pairs x items array is made (at 88k pairs x 5,761 items, gigabytes of page faults)
    from threadpoolctl import threadpool_limits

    right = np.empty((values.shape[0], n_subtasks), dtype=np.float32)
    both = np.empty((first.size, n_subtasks), dtype=np.float64)
    # one BLAS thread: small products, and OpenBLAS's threads hang where memory is
    # short (an address-space limit) instead of failing
    with threadpool_limits(limits=1, user_api="blas"):
        for code in range(n_subtasks):
            columns = values[:, subtask_codes == code]
            right[:, code] = columns.sum(axis=1)
            both[:, code] = (columns @ columns.T)[first, second]
    only_first = np.rint(right[first] - both).astype(np.int64)
    only_second = np.rint(right[second] - both).astype(np.int64)
    sizes = np.bincount(subtask_codes, minlength=n_subtasks)
    gap = (only_first - only_second).sum(axis=1) / sizes.sum()
    return PairStructure(only_first, only_second, sizes, gap)


def allocation(subtask_sizes: np.ndarray, size: int, stratified: bool) -> np.ndarray:
    """Expected items per subtask: proportional to subtask size for uniform sampling,
    size / k each (remainder spread evenly) for subtask-equal sampling."""
    if stratified:
        return np.full(subtask_sizes.size, size / subtask_sizes.size)
    return size * subtask_sizes / subtask_sizes.sum()


def agreement_probability(structure: PairStructure, size: int, *,
                          stratified: bool = False, against: str = "full") -> np.ndarray:
    """P(the micro-benchmark ranks the pair as the pool does), shape (n_pairs,).

    Uniform sampling is one stratum; subtask-equal sampling draws size / k items from
    each subtask (a fractional share when k does not divide the size), each stratum
    with its own finite population correction (none with ``against="universe"``),
    and weighs every item equally in the plain mean. Pairs with no gap get 0 (any
    ranking of equal models is arbitrary).
    """
    from scipy.special import ndtr

    _check_options(structure, stratified, against)
    check_whole(size, "size", maximum=int(structure.subtask_sizes.sum()))
    sizes = structure.subtask_sizes.astype(np.float64)
    if not stratified:
        sizes = np.array([sizes.sum()])
        a = structure.only_first.sum(axis=1, keepdims=True).astype(np.float64)
        b = structure.only_second.sum(axis=1, keepdims=True).astype(np.float64)
    else:
        a = structure.only_first.astype(np.float64)
        b = structure.only_second.astype(np.float64)
    draws = allocation(sizes, size, stratified)
    p_a, p_b = a / sizes, b / sizes
    if against == "universe":
        correction = np.ones_like(sizes)
    else:
        correction = np.where(sizes > 1, (sizes - draws) / np.maximum(sizes - 1, 1), 0.0)
    mean = (draws * (p_a - p_b)).sum(axis=1)
    variance = (draws * (p_a + p_b - (p_a - p_b) ** 2) * correction).sum(axis=1)
    sign = np.sign(structure.gap)
    # P(sign * (X - Y) >= 1/2): the continuity-corrected normal tail.
    spread = np.sqrt(np.maximum(variance, 1e-300))
    probability = ndtr((sign * mean - 0.5) / spread)
    exact_zero_variance = variance <= 0
    probability[exact_zero_variance] = (sign * mean >= 0.5)[exact_zero_variance]
    probability[sign == 0] = 0.0
    return probability


def exact_agreement(a: int, b: int, n_items: int, size: int) -> float:
    """The exact probability that a uniform sample of `size` of `n_items` items has
    more items right for the leading model only than for the other (a > b), or the
    reverse (a < b): a sum over the multivariate hypergeometric law."""
    from scipy.stats import hypergeom

    lead, trail = (a, b) if a >= b else (b, a)
    if lead == trail:
        return 0.0
    x = np.arange(0, min(lead, size) + 1)
    p_x = hypergeom.pmf(x, n_items, lead, size)
    # given x draws of the lead kind, the trailing count among the other n - x draws
    # (x values the law cannot take have p_x = 0 and an undefined conditional)
    possible = p_x > 0
    p_less = hypergeom.cdf(x[possible] - 1, n_items - lead, trail, size - x[possible])
    return float(np.sum(p_x[possible] * p_less))


def _check_options(structure: PairStructure, stratified: bool, against: str) -> None:
    """Refuse a `structure` that is not a `PairStructure`, a `stratified` that is not a
    bool, and an `against` that is not full or universe."""
    check_type(structure, PairStructure, "structure",
               "a PairStructure (pair_structure(correctness, subtask_codes))")
    check_type(stratified, bool, "stratified", "True or False")
    if against not in AGAINST:
        raise ConfigError(f"against must be full or universe; got {against!r}",
                          parameters=("against",))


@dataclass(frozen=True)
class AnalyticMdad:
    """An analytic MDAD, censored when not reached.

    Attributes
    ----------
    value : the MDAD in accuracy fractions, or None when no gap bin reaches the
        threshold (not reached within the observed gaps: it exceeds `max_gap`).
    max_gap : the largest |gap| between the pairs (0.0 with no pair).
    pairs : how many model pairs it is computed from.
    differing : how many of them have a nonzero gap; with none, MDAD cannot be
        measured at all.
    crossing_pairs : pairs in the gap bin that sets `value` (0 when not reached): a
        value set by a bin of a handful of pairs rests on them alone.
    """

    value: float | None
    max_gap: float
    pairs: int
    differing: int
    crossing_pairs: int

    @property
    def reached(self) -> bool:
        return self.value is not None


def analytic_mdad(structure: PairStructure, size: int, *, threshold: float = DEFAULT_THRESHOLD,
                  stratified: bool = False, against: str = "full") -> AnalyticMdad:
    """The analytic MDAD of `size`-item random micro-benchmarks over the pairs of `structure`.

    The paper's first-crossing MDAD (accuracy fraction), from the pairs' agreement
    probabilities (`agreement_probability`, the normal approximation with continuity
    correction): the first 0.005-wide bin of |gap| whose mean probability reaches
    `threshold`. No sampling: the same structure and size give the same MDAD.

    Parameters
    ----------
    structure : PairStructure
        The disagreement counts of the model pairs (`pair_structure`).
    size : int
        Items in the micro-benchmark, in 1..the pool's items.
    threshold : float, default 0.8
        The agreement probability that defines MDAD, in (0, 1).
    stratified : bool, default False
        False: uniform random sampling. True: subtask-equal sampling, size / k items
        from each of the k subtasks, each with its own finite population correction.
    against : str, default "full"
        ``"full"``: pairs are ranked as the whole pool ranks them (finite population
        correction). ``"universe"``: the pool is a sample of its task, items drawn with
        replacement (no correction), so even the whole pool has an MDAD.

    Returns
    -------
    AnalyticMdad
        The MDAD (`value`, a fraction), the largest |gap| between the pairs, how many
        pairs it is computed from and how many differ, and the pairs in the bin that
        sets it. Not reached (`value` None, then larger than `max_gap`) when no
        non-empty bin's mean probability reaches `threshold`, which is always the case
        when no pair differs (every probability is 0) or there is no pair.

    Raises
    ------
    ConfigError
        For a `structure` that is not a `PairStructure`, a `stratified` that is not a
        bool, an `against` other than full or universe, a threshold outside (0, 1), or
        a size outside 1..the pool's items.

    See Also
    --------
    size_for_gap : the smallest size whose analytic MDAD is at most a gap.
    """
    _check_options(structure, stratified, against)
    check_open_unit(threshold, "threshold")
    check_whole(size, "size", maximum=int(structure.subtask_sizes.sum()))
    gaps = np.abs(structure.gap)
    max_gap = float(gaps.max()) if gaps.size else 0.0
    differing = int(np.count_nonzero(gaps))
    if gaps.size == 0:
        return AnalyticMdad(None, max_gap, 0, 0, 0)
    probability = agreement_probability(structure, size, stratified=stratified,
                                        against=against)
    bins = gap_bins(structure.gap)
    counts = np.bincount(bins)
    sums = np.bincount(bins, weights=probability)
    nonempty = counts > 0
    mean = np.where(nonempty, sums / np.maximum(counts, 1), 0.0)
    reached = np.flatnonzero(nonempty & (mean >= threshold))
    if not reached.size:
        return AnalyticMdad(None, max_gap, int(gaps.size), differing, 0)
    return AnalyticMdad(float(bin_edges(reached[0])), max_gap, int(gaps.size), differing,
                        int(counts[reached[0]]))


def mdad_curve(structure: PairStructure, sizes: np.ndarray, *, threshold: float = DEFAULT_THRESHOLD,
               stratified: bool = False, against: str = "full") -> list[AnalyticMdad]:
    """`analytic_mdad` at each of `sizes` (whole numbers, each checked as its `size`)."""
    return [analytic_mdad(structure, n, threshold=threshold, stratified=stratified,
                          against=against) for n in np.asarray(sizes).ravel().tolist()]


def at_most(value: float | None, gap: float) -> bool:
    """A (possibly censored) MDAD is at most `gap`: never when not reached."""
    return value is not None and value <= gap + 1e-12


@dataclass(frozen=True)
class Plan:
    """The answer of `mdad plan`.

    Attributes
    ----------
    method : the selection method the answer is for.
    size : items in the micro-benchmark (None when no size reaches `gap`).
    mdad : its MDAD in accuracy fractions; None when not reached within the observed
        gaps (it is then larger than `max_gap`), never a number.
    reached : whether `mdad` was reached.
    max_gap : the largest |gap| between the pairs the MDAD is computed from (None when
        a study's mdad.csv does not say).
    pairs : how many model pairs the MDAD is computed from (None when a study's
        mdad.csv does not say).
    gap : the gap asked for (None when a size was given).
    threshold : the agreement probability that defines MDAD.
    how : "analytic" or "interpolated".
    against : what the MDAD is measured against: "full" (the whole benchmark, finite
        population correction) or "universe" (the task the benchmark samples); a
        study stands for them by its seen and unseen split (`split`).
    settled_share : share of the given target models' comparisons with |gap| >= mdad
        (0.0 when the MDAD is not reached; None when it cannot be measured or without
        target models).
    target_pairs : how many comparisons of target models `settled_share` is over
        (None without target models).
    crossing_pairs : pairs in the gap bin that sets `mdad` (analytic only; 0 when not
        reached; None from a study, whose rows carry `thin` instead).
    differing_pairs : pairs with a nonzero gap (analytic only): 0 means MDAD cannot be
        measured on this data.
    split : the study split read ("seen" or "unseen") when interpolated, else None.
    thin : interpolated from a study row that the study itself flags: its MDAD rests on
        few pairs, or almost no target pair differs (`mdad.study.trust`).
    measurable : False when no MDAD can be measured: from a study, a row (or a
        neighbour it is interpolated from) where too few target pairs differ, the rows
        its notice names; analytically, no pair of models differs. `mdad` is then None
        and `settled_share` None: no number stands for it.
    study_dataset : the dataset the study ran on (config.json's name), when
        interpolated.
    study_data_note : when the study ran on another version of the data and that was
        allowed, what differs (None otherwise).
    """

    method: str
    size: int | None
    mdad: float | None
    reached: bool
    max_gap: float | None
    pairs: int | None
    gap: float | None
    threshold: float
    how: str
    against: str
    settled_share: float | None = None
    target_pairs: int | None = None
    differing_pairs: int | None = None
    crossing_pairs: int | None = None
    split: str | None = None
    thin: bool = False
    measurable: bool = True
    study_dataset: str | None = None
    study_data_note: str | None = None


def size_for_gap(structure: PairStructure, gap: float, *, threshold: float = DEFAULT_THRESHOLD,
                 stratified: bool = False, max_size: int | None = None,
                 against: str = "full") -> tuple[int, AnalyticMdad]:
    """The smallest size whose analytic MDAD is at most `gap`, and that MDAD.

    A bisection over sizes with `analytic_mdad`: MDAD falls with size, and an
    unreached MDAD is above every gap. When no size up to `max_size` reaches `gap`,
    the answer is that largest size with its MDAD (possibly not reached).

    Parameters
    ----------
    structure : PairStructure
        The disagreement counts of the model pairs (`pair_structure`).
    gap : float
        The accuracy gap to resolve, a fraction in (0, 1) (0.02 is 2 points).
    threshold : float, default 0.8
        The agreement probability that defines MDAD, in (0, 1).
    stratified : bool, default False
        As in `analytic_mdad`: subtask-equal rather than uniform sampling.
    max_size : int or None, default None
        The largest size to consider, in 1..the pool's items; None: the whole pool.
    against : str, default "full"
        As in `analytic_mdad`: ``"full"`` or ``"universe"``.

    Returns
    -------
    size : int
        The smallest size whose MDAD is at most `gap`; when none is, the largest size
        considered.
    mdad : AnalyticMdad
        That size's analytic MDAD (`value` a fraction, None when not reached). Check
        it against `gap` to tell the two cases apart.

    Raises
    ------
    ConfigError
        For a gap outside (0, 1), and as `analytic_mdad` does (a `max_size` outside
        1..the pool's items too).
    """
    _check_options(structure, stratified, against)
    if not isinstance(gap, numbers.Real) or not 0.0 < gap < 1.0:
        raise ConfigError(f"gap must be in (0, 1) (a fraction: 0.02 is 2 points); got {gap}",
                          parameters=("gap",))
    check_open_unit(threshold, "threshold")
    pool = int(structure.subtask_sizes.sum())
    if max_size is not None:
        check_whole(max_size, "max_size", maximum=pool)
    top = max_size or pool
    options = {"threshold": threshold, "stratified": stratified, "against": against}
    best = analytic_mdad(structure, top, **options)
    if not at_most(best.value, gap):
        return top, best
    low, high = 1, top
    while low < high:
        middle = (low + high) // 2
        if at_most(analytic_mdad(structure, middle, **options).value, gap):
            high = middle
        else:
            low = middle + 1
    return low, analytic_mdad(structure, low, **options)
