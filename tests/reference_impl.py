"""Slow, independent reference implementation of the MDAD study (Yauney et al., ICLR 2026).

This module is a deliberately simple oracle for testing the fast, vectorised ``mdad``
package. Everything is written as plain Python loops over pairs, bins, items and
resamples; numpy is used only for storage, random number generation and
``np.quantile``. It does not import anything from ``mdad``.

Conventions
-----------
* A *bin* is ``math.floor(abs(d) * 200.0) / 200.0`` (resolution 0.005, half an
  accuracy point), exactly as the paper's reference code computes it, floating-point
  artefacts included (e.g. ``abs(0.3 - 0.2)`` lands in bin 0.095, not 0.1).
* *Agreement* is ``int(math.copysign(1, e) == math.copysign(1, d) and e != 0)``: a tie
  on the micro-benchmark is a disagreement; a reference gap of exactly ``+0.0`` has sign
  +1, so it "agrees" with any strictly positive estimated gap.
* Randomness always comes from a ``numpy.random.Generator`` passed in by the caller. The
  order in which random numbers are consumed is documented per function; for the random
  selection methods it is *not* meant to match ``Generator.choice`` (compare those
  statistically, not bitwise).
"""

from __future__ import annotations

import itertools
import math
from collections import namedtuple

import numpy as np

#: Multiplier used for binning reference gaps: ``1 / 0.005``.
BIN_MULTIPLIER = 200.0

#: Value reported when no bin reaches the threshold.
NO_CROSSING = 0.5

#: Quantile levels of the 95% bootstrap interval, written as the reference code writes them
#: (``(1 - 0.95) / 2`` is 0.025000000000000022 in floating point).
CI_LOW_Q = (1 - 0.95) / 2
CI_HIGH_Q = 1 - (1 - 0.95) / 2

AgreementRecord = namedtuple(
    "AgreementRecord", ["bin_seen", "agree_seen", "bin_unseen", "agree_unseen"]
)


# ---------------------------------------------------------------------------------------
# Pairwise agreement records
# ---------------------------------------------------------------------------------------


def gap_bin(d):
    """Bin of one reference gap.

    Parameters
    ----------
    d : float
        Reference accuracy gap (may be negative).

    Returns
    -------
    float
        ``math.floor(abs(d) * 200.0) / 200.0``.
    """
    return math.floor(abs(float(d)) * BIN_MULTIPLIER) / BIN_MULTIPLIER


def agreement(e, d):
    """Agreement of an estimated gap with a reference gap, as the reference code does it.

    Parameters
    ----------
    e : float
        Estimated gap ``est(A) - est(B)``.
    d : float
        Reference gap ``acc(A) - acc(B)``.

    Returns
    -------
    int
        1 if ``copysign(1, e) == copysign(1, d)`` and ``e != 0``, else 0.
    """
    e = float(e)
    d = float(d)
    return int(math.copysign(1, e) == math.copysign(1, d) and e != 0)


def agreement_records(seen_acc, unseen_acc, estimates):
    """All pairwise agreement records of one run.

    Parameters
    ----------
    seen_acc, unseen_acc, estimates : sequence of float, length T
        Per target model (in the run's order): accuracy on the seen pool, accuracy on the
        unseen pool, and the micro-benchmark estimate.

    Returns
    -------
    list of AgreementRecord
        One ``(bin_seen, agree_seen, bin_unseen, agree_unseen)`` namedtuple per pair
        ``(i, j)`` of ``itertools.combinations(range(T), 2)``, in that order.
    """
    n = len(estimates)
    if len(seen_acc) != n or len(unseen_acc) != n:
        raise ValueError("seen_acc, unseen_acc and estimates must have the same length")
    records = []
    for i, j in itertools.combinations(range(n), 2):
        d_seen = float(seen_acc[i]) - float(seen_acc[j])
        d_unseen = float(unseen_acc[i]) - float(unseen_acc[j])
        e = float(estimates[i]) - float(estimates[j])
        records.append(
            AgreementRecord(
                bin_seen=gap_bin(d_seen),
                agree_seen=agreement(e, d_seen),
                bin_unseen=gap_bin(d_unseen),
                agree_unseen=agreement(e, d_unseen),
            )
        )
    return records


# ---------------------------------------------------------------------------------------
# MDAD: first crossing of the per-bin agreement curve
# ---------------------------------------------------------------------------------------


def _group_by_bin(bins, agrees):
    """Dict ``bin value -> list of agreements`` (plain loop)."""
    if len(bins) != len(agrees):
        raise ValueError("bins and agrees must have the same length")
    groups = {}
    for b, a in zip(bins, agrees, strict=True):
        b = float(b)
        if b not in groups:
            groups[b] = []
        groups[b].append(int(a))
    return groups


def _mean(values):
    """Arithmetic mean of a non-empty list with a plain loop (``nan`` if empty)."""
    if len(values) == 0:
        return float("nan")
    total = 0
    for v in values:
        total += v
    return total / len(values)


def _bootstrap_interval(values, n_resamples, rng):
    """Percentile bootstrap interval of the mean of ``values``.

    Consumes exactly ``n_resamples`` calls ``rng.integers(0, m, size=m)`` (m = len(values));
    nothing if ``values`` is empty (then returns ``(nan, nan)``).
    """
    m = len(values)
    if m == 0:
        return float("nan"), float("nan")
    boot_means = []
    for _ in range(n_resamples):
        idx = rng.integers(0, m, size=m)
        total = 0
        for k in idx:
            total += values[int(k)]
        boot_means.append(total / m)
    low = float(np.quantile(boot_means, CI_LOW_Q))
    high = float(np.quantile(boot_means, CI_HIGH_Q))
    return low, high


def _walk_order(groups, code_quirks):
    """Bin values to visit, in order.

    Without quirks: the distinct bins, ascending. With ``code_quirks``: the reference code's
    literal behaviour, which floors the already-floored bin values a second time; for some
    values (0.145, 0.285, 0.29, 0.565, ...) this gives the next lower bin, so such a bin's
    own data is never visited and the lower bin (or an empty, absent bin) is visited instead.
    """
    distinct = sorted(groups.keys())
    if not code_quirks:
        return distinct
    return [math.floor(abs(x) * BIN_MULTIPLIER) / BIN_MULTIPLIER for x in distinct]


def first_crossing_point(bins, agrees, threshold=0.8, code_quirks=False):
    """Point MDAD: the first (smallest) bin whose mean agreement reaches the threshold.

    Parameters
    ----------
    bins : sequence of float
        Bin of every pair (pooled over runs), e.g. ``AgreementRecord.bin_seen``.
    agrees : sequence of int
        Agreement (0/1) of every pair.
    threshold : float
        Mean agreement required (paper: 0.8).
    code_quirks : bool
        If True, reproduce the reference code literally (double flooring of bin values,
        see ``_walk_order``; and its ``== 0.5`` "not yet found" sentinel, which lets a later
        bin overwrite a crossing found at exactly 0.5). Default False: the clean rule.

    Returns
    -------
    float
        The MDAD, or 0.5 if no bin reaches the threshold (also for empty input).
    """
    groups = _group_by_bin(bins, agrees)
    found = NO_CROSSING
    found_yet = False
    for x in _walk_order(groups, code_quirks):
        m = _mean(groups.get(x, []))
        if code_quirks:
            if m >= threshold and found == NO_CROSSING:
                found = x
        else:
            if m >= threshold and not found_yet:
                found = x
                found_yet = True
    return found


def first_crossing_mdad(bins, agrees, threshold=0.8, n_resamples=1000, rng=None, code_quirks=False):
    """Faithful MDAD with its bootstrap interval.

    Every visited bin (in ascending order, all of them, not stopping at a crossing) gets a
    percentile bootstrap of its mean agreement: ``n_resamples`` resamples with replacement,
    each drawn as ``rng.integers(0, m, size=m)``, then ``np.quantile`` (linear) at 2.5% and
    97.5%. ``mdad_low`` is the first bin whose *upper* quantile reaches the threshold,
    ``mdad_high`` the first bin whose *lower* quantile does (0.5 when none does).

    Parameters
    ----------
    bins, agrees : sequence
        As in `first_crossing_point`.
    threshold : float
        Mean agreement required.
    n_resamples : int
        Bootstrap resamples per bin (paper: 1000).
    rng : numpy.random.Generator or None
        Random source; ``None`` means ``np.random.default_rng()``.
    code_quirks : bool
        As in `first_crossing_point` (a bin visited twice is bootstrapped twice).

    Returns
    -------
    tuple of float
        ``(mdad, mdad_low, mdad_high)``.
    """
    if rng is None:
        rng = np.random.default_rng()
    groups = _group_by_bin(bins, agrees)
    point = NO_CROSSING
    low = NO_CROSSING
    high = NO_CROSSING
    point_found = False
    low_found = False
    high_found = False
    for x in _walk_order(groups, code_quirks):
        values = groups.get(x, [])
        m = _mean(values)
        q_low, q_high = _bootstrap_interval(values, n_resamples, rng)
        if code_quirks:
            if m >= threshold and point == NO_CROSSING:
                point = x
            if q_high >= threshold and low == NO_CROSSING:
                low = x
            if q_low >= threshold and high == NO_CROSSING:
                high = x
        else:
            if m >= threshold and not point_found:
                point = x
                point_found = True
            if q_high >= threshold and not low_found:
                low = x
                low_found = True
            if q_low >= threshold and not high_found:
                high = x
                high_found = True
    return point, low, high


# ---------------------------------------------------------------------------------------
# Kendall tau-b, MAE
# ---------------------------------------------------------------------------------------


def kendall_tau_b(x, y):
    """Kendall's tau-b by an explicit loop over all pairs.

    Parameters
    ----------
    x, y : sequence of float, same length

    Returns
    -------
    float
        ``(C - D) / sqrt((C + D + Tx) * (C + D + Ty))`` where C / D count concordant /
        discordant pairs, Tx pairs tied in x only and Ty pairs tied in y only (pairs tied in
        both count nowhere). ``nan`` if either factor of the denominator is 0.
    """
    n = len(x)
    if len(y) != n:
        raise ValueError("x and y must have the same length")
    concordant = 0
    discordant = 0
    ties_x_only = 0
    ties_y_only = 0
    for i, j in itertools.combinations(range(n), 2):
        dx = float(x[i]) - float(x[j])
        dy = float(y[i]) - float(y[j])
        if dx == 0 and dy == 0:
            continue
        if dx == 0:
            ties_x_only += 1
        elif dy == 0:
            ties_y_only += 1
        elif (dx > 0) == (dy > 0):
            concordant += 1
        else:
            discordant += 1
    factor_x = concordant + discordant + ties_x_only
    factor_y = concordant + discordant + ties_y_only
    if factor_x == 0 or factor_y == 0:
        return float("nan")
    return (concordant - discordant) / math.sqrt(factor_x * factor_y)


def mae_and_tau(estimates, seen_acc, unseen_acc):
    """Per-run estimation error and rank correlation.

    Parameters
    ----------
    estimates, seen_acc, unseen_acc : sequence of float, length T

    Returns
    -------
    dict
        ``mae_seen``, ``mae_unseen``: mean of ``|estimate - accuracy|`` over target models;
        ``tau_seen``, ``tau_unseen``: `kendall_tau_b` of estimates against accuracies.
    """
    n = len(estimates)
    if n == 0:
        raise ValueError("need at least one target model")
    abs_seen = 0.0
    abs_unseen = 0.0
    for i in range(n):
        abs_seen += abs(float(estimates[i]) - float(seen_acc[i]))
        abs_unseen += abs(float(estimates[i]) - float(unseen_acc[i]))
    return {
        "mae_seen": abs_seen / n,
        "mae_unseen": abs_unseen / n,
        "tau_seen": kendall_tau_b(estimates, seen_acc),
        "tau_unseen": kendall_tau_b(estimates, unseen_acc),
    }


# ---------------------------------------------------------------------------------------
# Random selection methods and the seen / unseen split
# ---------------------------------------------------------------------------------------


def _distinct_draws(pool, size, rng):
    """``size`` distinct elements of the list ``pool``, uniformly, by rejection sampling.

    Each attempt consumes one ``rng.integers(0, len(pool))``.
    """
    if size < 0 or size > len(pool):
        raise ValueError(f"cannot draw {size} distinct items from {len(pool)}")
    chosen_positions = []
    taken = set()
    while len(chosen_positions) < size:
        k = int(rng.integers(0, len(pool)))
        if k in taken:
            continue
        taken.add(k)
        chosen_positions.append(k)
    return [pool[k] for k in chosen_positions]


def _subtask_groups(labels):
    """Ordered list of ``(label, [indices])`` in order of first appearance."""
    order = []
    members = {}
    for idx, lab in enumerate(labels):
        if lab not in members:
            members[lab] = []
            order.append(lab)
        members[lab].append(idx)
    return [(lab, members[lab]) for lab in order]


def random_uniform_select(n_seen, size, rng):
    """Random (uniform): ``size`` distinct indices of ``range(n_seen)``.

    Parameters
    ----------
    n_seen : int
        Size of the seen pool.
    size : int
        Micro-benchmark size.
    rng : numpy.random.Generator

    Returns
    -------
    list of int
        Distinct indices into the seen pool, in draw order.
    """
    return _distinct_draws(list(range(n_seen)), size, rng)


def subtask_equal_select(subtask_of_seen_item, size, rng):
    """Random (subtask stratified, equal).

    With k subtasks, ``size // k`` items from every subtask, and one more item from each of
    ``size % k`` distinct, randomly chosen subtasks. Items are distinct within a subtask.

    Parameters
    ----------
    subtask_of_seen_item : sequence
        Subtask label of every item of the seen pool.
    size : int
        Micro-benchmark size.
    rng : numpy.random.Generator

    Returns
    -------
    list of int
        Indices into the seen pool, grouped by subtask (order of first appearance).
    """
    groups = _subtask_groups(list(subtask_of_seen_item))
    k = len(groups)
    if k == 0:
        raise ValueError("empty seen pool")
    base = size // k
    remainder = size % k
    counts = [base] * k
    extra_subtasks = _distinct_draws(list(range(k)), remainder, rng)
    for s in extra_subtasks:
        counts[s] += 1
    selected = []
    for (lab, members), count in zip(groups, counts, strict=True):
        if count > len(members):
            raise ValueError(f"subtask {lab!r} has {len(members)} seen items, need {count}")
        selected.extend(_distinct_draws(members, count, rng))
    return selected


def subtask_proportional_probabilities(subtask_of_seen_item):
    """Random (subtask stratified, proportional): per-item selection probabilities.

    Parameters
    ----------
    subtask_of_seen_item : sequence
        Subtask label of every item of the seen pool.

    Returns
    -------
    numpy.ndarray
        ``p[i]`` proportional to ``1 / (number of seen items in item i's subtask)``,
        normalised to sum to 1 (so every subtask gets total mass ``1 / k``).
    """
    labels = list(subtask_of_seen_item)
    counts = {}
    for lab in labels:
        counts[lab] = counts.get(lab, 0) + 1
    weights = []
    for lab in labels:
        weights.append(1.0 / counts[lab])
    total = 0.0
    for w in weights:
        total += w
    return np.array([w / total for w in weights], dtype=float)


def subtask_proportional_select(subtask_of_seen_item, size, rng):
    """Draw ``size`` seen items without replacement with `subtask_proportional_probabilities`.

    Successive sampling: each draw picks among the not-yet-chosen items with probability
    proportional to their weight (one ``rng.random()`` per draw). This is the distribution of
    ``Generator.choice(n, size, replace=False, p=p)``, not its random stream.

    Returns
    -------
    list of int
        Indices into the seen pool, in draw order.
    """
    p = subtask_proportional_probabilities(subtask_of_seen_item)
    n = len(p)
    if size > n:
        raise ValueError(f"cannot draw {size} distinct items from {n}")
    available = list(range(n))
    chosen = []
    for _ in range(size):
        total = 0.0
        for idx in available:
            total += p[idx]
        u = rng.random() * total
        cumulative = 0.0
        pick_position = len(available) - 1
        for position, idx in enumerate(available):
            cumulative += p[idx]
            if u < cumulative:
                pick_position = position
                break
        chosen.append(available.pop(pick_position))
    return chosen


def seen_unseen_split(subtask_of_item, rng):
    """Split items into seen / unseen pools inside every subtask.

    For every subtask in order of first appearance: its item indices (ascending) are
    shuffled with one ``rng.permutation(len(subtask))`` call; the first ``floor(len / 2)``
    go to seen, the rest to unseen.

    Parameters
    ----------
    subtask_of_item : sequence
        Subtask label of every item of the benchmark.
    rng : numpy.random.Generator

    Returns
    -------
    tuple of list of int
        ``(seen_indices, unseen_indices)``, concatenated subtask by subtask.
    """
    seen = []
    unseen = []
    for _lab, members in _subtask_groups(list(subtask_of_item)):
        order = rng.permutation(len(members))
        shuffled = [members[int(k)] for k in order]
        half = len(shuffled) // 2
        seen.extend(shuffled[:half])
        unseen.extend(shuffled[half:])
    return seen, unseen


# ---------------------------------------------------------------------------------------
# End-to-end slow study, uniform random selection only
# ---------------------------------------------------------------------------------------


def _accuracy(row, items):
    """Mean of ``row[i]`` over ``items`` with a plain loop."""
    total = 0
    for i in items:
        total += row[i]
    return total / len(items)


def simulate_study_random_uniform(
    correctness, n_runs, n_targets, n_sources, sizes, threshold=0.8, rng=None, return_records=False
):
    """The paper's protocol restricted to uniform random selection, slowly.

    Per run: draw ``n_targets`` distinct target models uniformly, then ``n_sources`` distinct
    source models from the remaining ones (unused by random selection); split the items
    (one subtask) into seen / unseen halves with `seen_unseen_split`; for every size, select
    items with `random_uniform_select` from the seen pool and estimate every target's score
    as its mean correctness on them; build `agreement_records`. Records are pooled over runs
    per (size, split) and the point MDAD is `first_crossing_point`.

    Parameters
    ----------
    correctness : array-like, shape (n_models, n_items)
        0/1 correctness matrix (models x items).
    n_runs, n_targets, n_sources : int
    sizes : sequence of int
    threshold : float
    rng : numpy.random.Generator or None
    return_records : bool
        If True, also return the pooled records ``{(size, split): (bins, agrees)}``.

    Returns
    -------
    dict or tuple
        ``{(size, "seen" | "unseen"): mdad}``; with ``return_records`` a tuple
        ``(mdads, records)``.
    """
    if rng is None:
        rng = np.random.default_rng()
    matrix = [[int(v) for v in row] for row in np.asarray(correctness).tolist()]
    n_models = len(matrix)
    n_items = len(matrix[0])
    if n_targets + n_sources > n_models:
        raise ValueError("not enough models for targets plus sources")

    pooled = {}
    for size in sizes:
        for split in ("seen", "unseen"):
            pooled[(size, split)] = ([], [])

    single_subtask = [0] * n_items
    for _run in range(n_runs):
        targets = _distinct_draws(list(range(n_models)), n_targets, rng)
        target_set = set(targets)
        rest = [m for m in range(n_models) if m not in target_set]
        _sources = _distinct_draws(rest, n_sources, rng)
        seen, unseen = seen_unseen_split(single_subtask, rng)
        seen_acc = [_accuracy(matrix[t], seen) for t in targets]
        unseen_acc = [_accuracy(matrix[t], unseen) for t in targets]
        for size in sizes:
            picked = random_uniform_select(len(seen), size, rng)
            picked_items = [seen[k] for k in picked]
            estimates = [_accuracy(matrix[t], picked_items) for t in targets]
            for rec in agreement_records(seen_acc, unseen_acc, estimates):
                pooled[(size, "seen")][0].append(rec.bin_seen)
                pooled[(size, "seen")][1].append(rec.agree_seen)
                pooled[(size, "unseen")][0].append(rec.bin_unseen)
                pooled[(size, "unseen")][1].append(rec.agree_unseen)

    mdads = {}
    for key, (bins, agrees) in pooled.items():
        mdads[key] = first_crossing_point(bins, agrees, threshold)
    if return_records:
        return mdads, pooled
    return mdads
