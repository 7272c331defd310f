"""Slow, independent reference implementations of the micro-benchmark selection methods.

This module is a test oracle for the fast, vectorised selection methods of ``mdad``. Every
function is a plain loop over items, models, medoids or strata that follows the paper's
reference code (GitHub gyauney/micro-benchmarking-reliability: ``microbenchmarks.py``,
``anchor_point_predictor.py``, ``tinybenchmarks_reimplemented.py``) and, for p-IRT and
gp-IRT, the tinyBenchmarks code (felipemaiapolo/tinyBenchmarks ``tinyBenchmarks/__init__.py``,
felipemaiapolo/efficbench ``experiments.py``, ``acc.py``, ``utils.py``). numpy is used only
for storage and small operations, plus the library calls the reference code itself makes
(``np.corrcoef``, ``kmedoids.fasterpam``, ``numpy.linalg.lstsq``, sklearn ``KMeans`` and
``pairwise_distances``, scipy ``minimize``). It does not import anything from ``mdad``.

Where the reference code breaks or is ambiguous, the project's rule is implemented and the
function's docstring says so. Project-wide choices:

* ``kmedoids.fasterpam`` is always called with ``n_cpu=1``. With its default ``n_cpu=-1`` the
  library switches to the parallel FasterPAM for matrices with 1,000 rows or more, whose
  result can depend on the machine's CPU count.
* An item is *constant* when all source values are exactly equal (``==``). ``np.corrcoef``
  returns NaN for such a column only sometimes (float rounding of the mean can leave
  ~1e-16 noise instead), so constancy is tested directly, never through NaN.
* IRT conventions are tinyBenchmarks' (see :func:`ref_item_curve`): discrimination is
  (n_items, D), difficulty is one number per item, and the logit of item j is
  ``sum_d clip(a_jd * theta_d - b_j, -30, 30)``, i.e. ``a_j . theta - D * b_j`` when nothing
  clips. A model fitted as ``sigmoid(a . theta - b')`` has ``b = b' / D`` here.
* A new model's ability is the MAP estimate under theta ~ N(0, I) (the reference uses
  the plain MLE, which diverges for all-correct or all-wrong targets), found with scipy
  BFGS from theta = 0, one target at a time, with the exact gradient.
"""

from __future__ import annotations

import math
import warnings

import kmedoids
import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, logit
from sklearn.cluster import KMeans
from sklearn.metrics.pairwise import pairwise_distances

#: Confidences are clipped into this range before the logit (Anchor Points predictor).
CONFIDENCE_CLIP = (1e-6, 1 - 1e-6)

#: Number of confidence strata of the stratified sampling method.
N_STRATA = 10

#: Seed of every k-means call in the reference code.
KMEANS_SEED = 42

#: tinyBenchmarks' per-dimension clip of the item logit.
LOGIT_CLIP = 30.0

#: tinyBenchmarks' guard inside the logs of the ability likelihood.
LOG_EPS = 1e-10


# --------------------------------------------------------------------------- helpers

def _is_constant(column: np.ndarray) -> bool:
    """True when every value of ``column`` equals the first one exactly."""
    first = column[0]
    for value in column[1:]:
        if value != first:
            return False
    return True


def _raw_corrcoef(data: np.ndarray) -> np.ndarray:
    """``np.corrcoef(data, rowvar=False)`` as a 2-D float array, warnings silenced."""
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        corr = np.corrcoef(data, rowvar=False)
    return np.array(np.atleast_2d(corr), dtype=np.float64)


def _fasterpam_medoids(distance: np.ndarray, n: int, random_state: int,
                       shuffled: bool = True) -> np.ndarray:
    """Medoid indices, in fasterpam's order, of the single-threaded seeded FasterPAM:
    its random start, and its candidates in an order Rust's generator shuffles, or
    (not `shuffled`) in index order."""
    distance = np.ascontiguousarray(distance, dtype=np.float64)
    if shuffled:
        result = kmedoids.fasterpam(distance, n, init="random", random_state=random_state,
                                    n_cpu=1)
    else:  # the library's own random start, given as medoids: no shuffle
        start = np.random.RandomState(random_state).choice(distance.shape[0], n, False)
        result = kmedoids.fasterpam(distance, start.astype(np.uintp), n_cpu=1)
    return np.array([int(m) for m in result.medoids], dtype=np.int64)


def _first_argmax(values: list[float]) -> int:
    best = 0
    for k in range(1, len(values)):
        if values[k] > values[best]:
            best = k
    return best


def _first_argmin(values: list[float]) -> int:
    best = 0
    for k in range(1, len(values)):
        if values[k] < values[best]:
            best = k
    return best


# --------------------------------------------------------------------------- Anchor Points

def ref_anchor_points(source_conf: np.ndarray, n: int, random_state: int,
                      shuffled: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Anchor Points (Vivek et al.), as ``microbenchmarks.py::anchor_points_weighted``.

    ``source_conf`` is (n_sources, n_items): the source models' confidence on each item's
    gold option. Item correlations over the sources come from ``np.corrcoef``; for items
    that are constant over the sources (where the reference code produces NaN and breaks)
    the project's rule applies: constant vs non-constant -> 0, two constants -> 1 if their
    values are equal else 0; the diagonal is 1. Distance = 1 - correlation; medoids =
    ``kmedoids.fasterpam(distance, n, init="random", random_state=random_state)``.

    Every item joins the medoid it correlates with most (first on ties), except a constant
    item with no constant medoid of the same value: it joins the medoid whose mean source
    confidence is closest to its value (first on ties). A medoid's weight is the share of
    items in its cluster (0 for an empty cluster).

    Returns (medoid item indices in fasterpam's order, weights aligned with them).
    """
    conf = np.asarray(source_conf, dtype=np.float64)
    n_items = conf.shape[1]

    constant = [_is_constant(conf[:, j]) for j in range(n_items)]
    corr = _raw_corrcoef(conf)
    for i in range(n_items):
        for j in range(n_items):
            if i == j:
                corr[i, j] = 1.0
            elif constant[i] and constant[j]:
                corr[i, j] = 1.0 if conf[0, i] == conf[0, j] else 0.0
            elif constant[i] or constant[j]:
                corr[i, j] = 0.0

    medoids = _fasterpam_medoids(1.0 - corr, n, random_state, shuffled)
    medoid_means = [float(np.mean(conf[:, m])) for m in medoids]

    counts = [0] * len(medoids)
    for item in range(n_items):
        value = conf[0, item]
        has_twin_medoid = any(constant[m] and conf[0, m] == value for m in medoids)
        if constant[item] and not has_twin_medoid:
            cluster = _first_argmin([abs(mean - value) for mean in medoid_means])
        else:
            cluster = _first_argmax([corr[m, item] for m in medoids])
        counts[cluster] += 1

    weights = np.array([count / n_items for count in counts], dtype=np.float64)
    return medoids, weights


def ref_anchor_predictor(source_conf: np.ndarray, target_conf: np.ndarray, n: int,
                         random_state: int, shuffled: bool = True) -> np.ndarray:
    """Anchor Points predictor, as ``anchor_point_predictor.py`` with one class.

    ``source_conf`` is (n_sources, n_items), ``target_conf`` (n_targets, n_items): the
    gold-option confidence. Both are clipped into [1e-6, 1 - 1e-6] and mapped to logits. Item
    correlations over the sources: ``np.corrcoef`` with NaN -> 0 (here: any pair involving an
    exactly constant item -> 0, which is where NaN belongs) and diagonal 1. Anchors =
    ``fasterpam(1 - |corr|, n, init="random", random_state)``; floaters = every other item,
    ascending.

    For every floater and anchor, y = m x + b is fitted by least squares over the sources
    (``numpy.linalg.lstsq``), with its residual sum of squares. Project fix: when the
    anchor is constant over the sources, m = 0, b = the floater's mean and the residual is
    the floater's total sum of squares (the reference stored residual 0 there). With exactly
    two sources and a non-constant anchor the fit is exact and lstsq reports no residual:
    0 is used, as in the reference. Each floater uses the anchor of smallest residual (first
    on ties). A target's floater is predicted correct when m * x_anchor + b > 0 in logit
    space (gold confidence above 0.5).

    Returns the estimate per target: the share of floaters predicted correct (NaN when
    there are no floaters).
    """
    low, high = CONFIDENCE_CLIP
    train = logit(np.clip(np.asarray(source_conf, dtype=np.float64), low, high))
    test = logit(np.clip(np.asarray(target_conf, dtype=np.float64), low, high))
    n_sources, n_items = train.shape

    constant = [_is_constant(train[:, j]) for j in range(n_items)]
    corr = _raw_corrcoef(train)
    for i in range(n_items):
        for j in range(n_items):
            if i == j:
                corr[i, j] = 1.0
            elif constant[i] or constant[j] or math.isnan(corr[i, j]):
                corr[i, j] = 0.0

    anchors = _fasterpam_medoids(1.0 - np.abs(corr), n, random_state, shuffled)
    anchor_set = {int(a) for a in anchors}
    floaters = [j for j in range(n_items) if j not in anchor_set]

    chosen: list[tuple[float, float, int]] = []  # (slope, intercept, anchor) per floater
    for floater in floaters:
        y = train[:, floater]
        fits: list[tuple[float, float, float]] = []  # (slope, intercept, residual) per anchor
        for anchor in anchors:
            x = train[:, anchor]
            if constant[anchor]:
                mean = sum(float(v) for v in y) / n_sources
                total = sum((float(v) - mean) ** 2 for v in y)
                fits.append((0.0, mean, total))
                continue
            design = np.vstack([x, np.ones(n_sources)]).T
            coef, residual = np.linalg.lstsq(design, y, rcond=None)[:2]
            rss = float(residual[0]) if residual.size else 0.0
            fits.append((float(coef[0]), float(coef[1]), rss))
        nearest = _first_argmin([fit[2] for fit in fits])
        chosen.append((fits[nearest][0], fits[nearest][1], int(anchors[nearest])))

    estimates = np.empty(test.shape[0], dtype=np.float64)
    for t in range(test.shape[0]):
        if not floaters:
            estimates[t] = np.nan
            continue
        n_correct = 0
        for slope, intercept, anchor in chosen:
            if slope * test[t, anchor] + intercept > 0:
                n_correct += 1
        estimates[t] = n_correct / len(floaters)
    return estimates


# --------------------------------------------------------------------------- stratified sampling

def ref_strata_allocation(source_conf: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Confidence strata and per-stratum sample sizes (``stratified_random_sampling``).

    The proxy of an item is the source models' mean gold-option confidence. Strata =
    ``KMeans(n_clusters=k, random_state=42, n_init="auto").fit_predict(proxies)`` with
    k = min(10, number of distinct proxy values): KMeans cannot make 10 clusters out of
    fewer distinct values (the reference always used 10). A stratum of size s out of N
    items gets min(round(n * (s / N)), s) items (``np.round``: half to even). Project fix:
    when those sum to more than n (the reference then drew more than n items), one item is
    taken away at a time from the stratum with the largest (allocated - n * s / N), first on
    ties, until the sum is n. A sum below n is left as is (the caller tops up at random).

    Returns (stratum label per item, allocation per stratum label 0..k-1).
    """
    conf = np.asarray(source_conf, dtype=np.float64)
    proxies = np.mean(np.transpose(conf), axis=1)
    n_items = proxies.shape[0]

    n_clusters = min(N_STRATA, len(np.unique(proxies)))
    kmeans = KMeans(n_clusters=n_clusters, random_state=KMEANS_SEED, n_init="auto")
    labels = np.array(kmeans.fit_predict(proxies.reshape(-1, 1)), dtype=np.int64)

    sizes = [0] * n_clusters
    for label in labels:
        sizes[int(label)] += 1
    shares = [n * (size / n_items) for size in sizes]
    allocation = [min(int(np.round(share)), size)
                  for share, size in zip(shares, sizes, strict=True)]

    while sum(allocation) > n:
        excess = [allocation[s] - shares[s] for s in range(n_clusters)]
        allocation[_first_argmax(excess)] -= 1

    return labels, np.array(allocation, dtype=np.int64)


def ref_horvitz_thompson(target_correct: np.ndarray, selected: np.ndarray, labels: np.ndarray,
                         allocation: np.ndarray, n: int) -> np.ndarray:
    """Horvitz-Thompson estimate of each target's accuracy on the pool.

    ``target_correct`` is (n_targets, n_items); ``selected`` the chosen item indices;
    ``labels``/``allocation`` as returned by :func:`ref_strata_allocation`. The inclusion
    probability of a selected item is allocation / size of its stratum, or n / N when that
    is 0 (an item topped up from a stratum that was allocated nothing). Estimate = sum over
    selected items of correct / probability, divided by the pool size N.
    """
    correct = np.asarray(target_correct, dtype=np.float64)
    n_items = len(labels)
    sizes: dict[int, int] = {}
    for label in labels:
        sizes[int(label)] = sizes.get(int(label), 0) + 1

    probabilities = []
    for item in selected:
        label = int(labels[int(item)])
        probability = int(allocation[label]) / sizes[label]
        if probability == 0:
            probability = n / n_items
        probabilities.append(probability)

    estimates = np.empty(correct.shape[0], dtype=np.float64)
    for t in range(correct.shape[0]):
        total = 0.0
        for item, probability in zip(selected, probabilities, strict=True):
            total += correct[t, int(item)] / probability
        estimates[t] = total / n_items
    return estimates


# --------------------------------------------------------------------------- tinyBenchmarks

def ref_tinybenchmarks_anchors(discrimination: np.ndarray, difficulty: np.ndarray,
                               n: int) -> tuple[np.ndarray, np.ndarray]:
    """tinyBenchmarks anchors, as ``tinybenchmarks_reimplemented.py`` (clustering='irt').

    Each item is embedded as X_j = (a_j1, ..., a_jD, b_j) (difficulty in tinyBenchmarks'
    convention, see :func:`ref_item_curve`). ``KMeans(n_clusters=n, n_init="auto",
    random_state=42)`` is fitted with uniform sample weights 1/N, as the reference does;
    anchor c = the item nearest centroid c (``pairwise_distances(...).argmin(axis=1)``;
    the same item can be the anchor of two clusters and is returned twice); weight c = the
    share of items whose label is c.

    Returns (anchor item per cluster, weight per cluster).
    """
    b = np.asarray(difficulty, dtype=np.float64).reshape(-1)
    n_items = b.shape[0]
    a = np.asarray(discrimination, dtype=np.float64).reshape(n_items, -1)
    features = np.column_stack([a, b])
    sample_weight = np.ones(n_items) / n_items

    kmeans = KMeans(n_clusters=n, n_init="auto", random_state=KMEANS_SEED)
    kmeans.fit(features, sample_weight=sample_weight)
    anchors = pairwise_distances(kmeans.cluster_centers_, features,
                                 metric="euclidean").argmin(axis=1)

    counts = [0] * n
    for label in kmeans.labels_:
        counts[int(label)] += 1
    weights = np.array([count / n_items for count in counts], dtype=np.float64)
    return np.array(anchors, dtype=np.int64), weights


def ref_item_curve(theta: np.ndarray, discrimination: np.ndarray,
                   difficulty: np.ndarray) -> np.ndarray:
    """tinyBenchmarks' ``item_curve`` for one ability vector, item by item.

    ``theta`` is (D,), ``discrimination`` (n_items, D), ``difficulty`` (n_items,). The
    reference computes ``sigmoid(clip(A * theta - B, -30, 30).sum(axis=1))`` with A of shape
    (1, D, N) and B of shape (1, 1, N) (scalar difficulty per item, from the py-irt fork
    felipemaiapolo/py-irt whose likelihood is ``sum_d (a_d theta_d - b)``), so

        P_j = sigmoid( sum_d clip(a_jd * theta_d - b_j, -30, 30) ),

    which is sigmoid(a_j . theta - D * b_j) when nothing clips. Returns P, shape (n_items,).
    """
    th = np.asarray(theta, dtype=np.float64).reshape(-1)
    b = np.asarray(difficulty, dtype=np.float64).reshape(-1)
    a = np.asarray(discrimination, dtype=np.float64).reshape(b.shape[0], th.shape[0])
    curve = np.empty(b.shape[0], dtype=np.float64)
    for j in range(b.shape[0]):
        z = 0.0
        for d in range(th.shape[0]):
            term = a[j, d] * th[d] - b[j]
            z += min(max(term, -LOGIT_CLIP), LOGIT_CLIP)
        curve[j] = float(expit(z))
    return curve


def ref_estimate_ability(responses: np.ndarray, items: np.ndarray, discrimination: np.ndarray,
                         difficulty: np.ndarray) -> np.ndarray:
    """MAP ability of one model from its responses on ``items`` (duplicates count twice).

    Minimises, with scipy BFGS from theta = 0 and the exact gradient,

        - sum_k [ y_k log(P_k + 1e-10) + (1 - y_k) log(1 - P_k + 1e-10) ] + |theta|^2 / 2,

    P_k = :func:`ref_item_curve` of item ``items[k]``; the likelihood and its 1e-10 guard are
    tinyBenchmarks' ``fit_theta``; the N(0, I) prior term is the project's (the reference
    is the plain MLE). Responses may be partial credit in [0, 1]. Returns theta, shape (D,).
    """
    y = np.asarray(responses, dtype=np.float64).reshape(-1)
    idx = [int(i) for i in np.asarray(items).reshape(-1)]
    b_all = np.asarray(difficulty, dtype=np.float64).reshape(-1)
    a_all = np.asarray(discrimination, dtype=np.float64).reshape(b_all.shape[0], -1)
    a = a_all[idx]
    b = b_all[idx]
    n_dims = a.shape[1]

    def terms(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raw = a * theta[None, :] - b[:, None]
        inside = (raw > -LOGIT_CLIP) & (raw < LOGIT_CLIP)
        z = np.clip(raw, -LOGIT_CLIP, LOGIT_CLIP).sum(axis=1)
        return expit(z), inside

    def objective(theta: np.ndarray) -> float:
        p, _ = terms(theta)
        log_lik = np.sum(y * np.log(p + LOG_EPS) + (1 - y) * np.log(1 - p + LOG_EPS))
        return float(-log_lik + 0.5 * theta @ theta)

    def gradient(theta: np.ndarray) -> np.ndarray:
        p, inside = terms(theta)
        slope = p * (1 - p)
        d_loglik_dz = y * slope / (p + LOG_EPS) - (1 - y) * slope / (1 - p + LOG_EPS)
        dz_dtheta = a * inside
        return -(d_loglik_dz[:, None] * dz_dtheta).sum(axis=0) + theta

    result = minimize(objective, np.zeros(n_dims), jac=gradient, method="BFGS",
                      options={"gtol": 1e-10, "maxiter": 10_000})
    return np.asarray(result.x, dtype=np.float64)


def ref_pirt(target_correct_on_anchors: np.ndarray, anchors: np.ndarray,
             discrimination: np.ndarray, difficulty: np.ndarray, n_items: int) -> np.ndarray:
    """p-IRT estimate of each target's accuracy on the pool of ``n_items`` items.

    ``target_correct_on_anchors`` is (n_targets, n_anchors), column k = item ``anchors[k]``
    (anchors may repeat, as tinyBenchmarks' do; a repeat counts twice everywhere, as in the
    reference). ``discrimination``/``difficulty`` cover all ``n_items`` items. Per target
    (tinyBenchmarks ``evaluate`` / ``estimating_performance.ipynb``):

        theta   = ref_estimate_ability(y, anchors, ...)
        lambda  = n_anchors / n_items
        data    = mean of y over the anchors (plain mean; efficbench's acc.py uses the
                  anchor-weighted sum here instead)
        irt     = mean of ref_item_curve(theta) over the items that are not anchors
                  (0 when every item is an anchor)
        p-IRT   = lambda * data + (1 - lambda) * irt
    """
    correct = np.atleast_2d(np.asarray(target_correct_on_anchors, dtype=np.float64))
    anchor_list = [int(i) for i in np.asarray(anchors).reshape(-1)]
    anchor_set = set(anchor_list)
    b = np.asarray(difficulty, dtype=np.float64).reshape(-1)
    a = np.asarray(discrimination, dtype=np.float64).reshape(b.shape[0], -1)
    unseen = [j for j in range(n_items) if j not in anchor_set]
    lam = len(anchor_list) / n_items

    estimates = np.empty(correct.shape[0], dtype=np.float64)
    for t in range(correct.shape[0]):
        y = correct[t]
        theta = ref_estimate_ability(y, np.array(anchor_list), a, b)
        data_part = sum(float(v) for v in y) / len(anchor_list)
        if unseen:
            curve = ref_item_curve(theta, a[unseen], b[unseen])
            irt_part = sum(float(p) for p in curve) / len(unseen)
        else:
            irt_part = 0.0
        estimates[t] = lam * data_part + (1 - lam) * irt_part
    return estimates


def ref_gpirt_variance(source_correct: np.ndarray) -> float:
    """gp-IRT's v: mean over source models of the variance (ddof 0) of their item scores.

    efficbench ``experiments.py``: ``np.var(scores_train[:, items], axis=1).mean()``.
    """
    scores = np.asarray(source_correct, dtype=np.float64)
    variances = []
    for row in scores:
        mean = sum(float(v) for v in row) / len(row)
        variances.append(sum((float(v) - mean) ** 2 for v in row) / len(row))
    return sum(variances) / len(variances)


def ref_gpirt_validation_models(n_sources: int) -> tuple[list[int], list[int]]:
    """efficbench's split of the source models: (validation = every 5th from 0, the rest).

    The IRT model that :func:`ref_gpirt_bias` needs is fitted on the second list only.
    """
    validation = list(range(0, n_sources, 5))
    training = [i for i in range(n_sources) if i not in validation]
    return validation, training


def ref_gpirt_bias(validation_correct: np.ndarray, discrimination: np.ndarray,
                   difficulty: np.ndarray) -> float:
    """gp-IRT's b: mean absolute error of IRT-predicted accuracy on held-out items.

    ``validation_correct`` is (n_validation, n_items): the validation source models (see
    :func:`ref_gpirt_validation_models`); ``discrimination``/``difficulty`` come from an IRT
    model fitted on the *other* source models only. For each validation model (efficbench
    ``experiments.py``): theta from the even-indexed items (0, 2, 4, ...), then
    |mean of ref_item_curve(theta) over the odd-indexed items - its mean score on them|.
    b = the mean of those errors (not squared; :func:`ref_gpirt_lambda` squares it).
    """
    scores = np.atleast_2d(np.asarray(validation_correct, dtype=np.float64))
    b_all = np.asarray(difficulty, dtype=np.float64).reshape(-1)
    a_all = np.asarray(discrimination, dtype=np.float64).reshape(b_all.shape[0], -1)
    n_items = scores.shape[1]
    seen = list(range(0, n_items, 2))
    unseen = list(range(1, n_items, 2))

    errors = []
    for y in scores:
        theta = ref_estimate_ability(y[seen], np.array(seen), a_all, b_all)
        curve = ref_item_curve(theta, a_all[unseen], b_all[unseen])
        predicted = sum(float(p) for p in curve) / len(unseen)
        observed = sum(float(y[j]) for j in unseen) / len(unseen)
        errors.append(abs(predicted - observed))
    return sum(errors) / len(errors)


def ref_gpirt_lambda(bias: float, variance: float, n: int, anchor_based: bool = True) -> float:
    """gp-IRT mixing weight, efficbench ``utils.get_lambda``: b^2 / (v_n + b^2).

    v_n = variance / (4 n) for anchor-based micro-benchmarks (Anchor Points, tinyBenchmarks'
    IRT clustering), variance / n for random sampling. 1.0 when both are 0 (the limit of the
    formula as b -> 0 with v_n = 0; the reference divides by zero).
    """
    spread = variance / (4 * n) if anchor_based else variance / n
    denominator = spread + bias ** 2
    if denominator == 0:
        return 1.0
    return bias ** 2 / denominator


def ref_gpirt(target_correct_on_anchors: np.ndarray, anchors: np.ndarray,
              anchor_weights: np.ndarray, discrimination: np.ndarray, difficulty: np.ndarray,
              n_items: int, bias: float, variance: float) -> np.ndarray:
    """gp-IRT estimate per target: lambda_g * anchor estimate + (1 - lambda_g) * p-IRT.

    Inputs as :func:`ref_pirt`, plus ``anchor_weights`` (one per anchor, the tinyBenchmarks
    cluster shares), ``bias`` = :func:`ref_gpirt_bias` and ``variance`` =
    :func:`ref_gpirt_variance`, both computed on the source models only. The anchor estimate
    is sum_k w_k y_k; lambda_g = :func:`ref_gpirt_lambda` (bias, variance, number of anchors,
    anchor-based).
    """
    correct = np.atleast_2d(np.asarray(target_correct_on_anchors, dtype=np.float64))
    weights = [float(w) for w in np.asarray(anchor_weights).reshape(-1)]
    n_anchors = len(weights)
    lam = ref_gpirt_lambda(bias, variance, n_anchors, anchor_based=True)
    pirt = ref_pirt(correct, anchors, discrimination, difficulty, n_items)

    estimates = np.empty(correct.shape[0], dtype=np.float64)
    for t in range(correct.shape[0]):
        anchor_estimate = sum(w * float(y) for w, y in zip(weights, correct[t], strict=True))
        estimates[t] = lam * anchor_estimate + (1 - lam) * pirt[t]
    return estimates


# --------------------------------------------------------------------------- self-check

def _self_check() -> None:
    rng = np.random.default_rng(0)
    n_sources, n_targets, n_items, dims = 40, 6, 80, 3

    # Synthetic 2PL world in tinyBenchmarks' convention.
    a_true = rng.normal(0.8, 0.4, size=(n_items, dims))
    b_true = rng.normal(0.0, 0.5, size=n_items)
    abilities = rng.normal(size=(n_sources + n_targets, dims))
    prob = np.array([ref_item_curve(th, a_true, b_true) for th in abilities])
    correct = (rng.random(prob.shape) < prob).astype(float)
    conf = np.clip(prob + rng.normal(0, 0.1, prob.shape), 0.0, 1.0)
    # two constant items with the same value, one with another value
    conf[:, 3] = 0.25
    conf[:, 7] = 0.25
    conf[:, 11] = 0.9
    src_conf, tgt_conf = conf[:n_sources], conf[n_sources:]
    src_corr, tgt_corr = correct[:n_sources], correct[n_sources:]

    # item curve: loop == vectorised tinyBenchmarks formula == a.theta - D b (no clipping)
    theta = rng.normal(size=dims)
    loop = ref_item_curve(theta, a_true, b_true)
    vec = expit(np.clip(a_true.T[None] * theta[None, :, None] - b_true[None, None, :],
                        -30, 30).sum(axis=1))[0]
    closed = expit(a_true @ theta - dims * b_true)
    assert np.allclose(loop, vec, atol=1e-14) and np.allclose(loop, closed, atol=1e-14)

    # Anchor Points
    medoids, weights = ref_anchor_points(src_conf, 8, random_state=1)
    assert len(set(medoids.tolist())) == 8 and abs(weights.sum() - 1) < 1e-12
    medoids2, weights2 = ref_anchor_points(src_conf, 8, random_state=1)
    assert np.array_equal(medoids, medoids2) and np.array_equal(weights, weights2)
    est_ap = (tgt_conf[:, medoids] * weights).sum(axis=1)
    print("anchor points   medoids", medoids.tolist(), "weights", np.round(weights, 3).tolist())
    print("                estimates", np.round(est_ap, 3).tolist())

    # Constant items without a constant medoid of their value join the closest-mean medoid:
    # two anti-correlated groups (means ~0.3 and ~0.7) pull both medoids away from them.
    latent = rng.normal(size=(30, 1))
    groups = np.hstack([np.clip(0.3 + 0.1 * latent + rng.normal(0, 0.02, (30, 20)), 0, 1),
                        np.clip(0.7 - 0.1 * latent + rng.normal(0, 0.02, (30, 20)), 0, 1),
                        np.full((30, 1), 0.25), np.full((30, 1), 0.25), np.full((30, 1), 0.9)])
    medoids_g, weights_g = ref_anchor_points(groups, 2, random_state=0)
    assert not {40, 41, 42} & set(medoids_g.tolist())
    low_group = 0 if medoids_g[0] < 20 else 1
    assert np.allclose(weights_g[low_group], 22 / 43) and np.allclose(weights_g.sum(), 1)

    # Anchor Points predictor (the second call makes constant items anchors for sure)
    est_pred = ref_anchor_predictor(src_conf, tgt_conf, 8, random_state=1)
    assert np.all((est_pred >= 0) & (est_pred <= 1))
    est_many = ref_anchor_predictor(src_conf[:, :14], tgt_conf[:, :14], 13, random_state=0)
    assert np.all((est_many == 0) | (est_many == 1))
    print("ap predictor    estimates", np.round(est_pred, 3).tolist())

    # Allocation that rounds above n: 10 strata of 3 items, n = 15 -> 1.5 each rounds to 2
    grouped = np.repeat(np.linspace(0.05, 0.95, 10), 3)[None, :] * np.ones((4, 1))
    _, over = ref_strata_allocation(grouped, 15)
    assert over.sum() == 15 and sorted(over.tolist()) == [1] * 5 + [2] * 5

    # Stratified sampling: allocation and an unbiasedness check by simulation
    labels, allocation = ref_strata_allocation(src_conf, 25)
    sizes = np.bincount(labels, minlength=len(allocation))
    assert allocation.sum() <= 25 and np.all(allocation <= sizes)
    draws = []
    for _ in range(3000):
        chosen = []
        for s in range(len(allocation)):
            members = np.flatnonzero(labels == s)
            chosen.extend(rng.choice(members, allocation[s], replace=False).tolist())
        draws.append(ref_horvitz_thompson(tgt_corr, np.array(chosen), labels, allocation, 25))
    covered = allocation[labels] > 0
    target_on_covered = tgt_corr[:, covered].sum(axis=1) / n_items
    assert np.allclose(np.mean(draws, axis=0), target_on_covered, atol=0.02)
    print("strata          sizes", sizes.tolist(), "allocation", allocation.tolist())

    # tinyBenchmarks anchors + IRT estimators (using the true parameters as "fitted" ones)
    anchors, aw = ref_tinybenchmarks_anchors(a_true, b_true, 12)
    assert len(anchors) == 12 and abs(aw.sum() - 1) < 1e-12
    y_anchor = tgt_corr[:, anchors]

    th_hat = ref_estimate_ability(y_anchor[0], anchors, a_true, b_true)
    numeric = minimize(lambda x: (-np.sum(
        y_anchor[0] * np.log(ref_item_curve(x, a_true[anchors], b_true[anchors]) + 1e-10)
        + (1 - y_anchor[0]) * np.log(1 - ref_item_curve(x, a_true[anchors], b_true[anchors])
                                     + 1e-10)) + 0.5 * x @ x), np.zeros(dims), method="BFGS").x
    assert np.allclose(th_hat, numeric, atol=1e-4), (th_hat, numeric)

    pirt = ref_pirt(y_anchor, anchors, a_true, b_true, n_items)
    full = ref_pirt(tgt_corr, np.arange(n_items), a_true, b_true, n_items)
    assert np.allclose(full, tgt_corr.mean(axis=1))  # all items seen: p-IRT = plain mean

    validation, training = ref_gpirt_validation_models(n_sources)
    bias = ref_gpirt_bias(src_corr[validation], a_true, b_true)
    variance = ref_gpirt_variance(src_corr)
    assert abs(variance - np.var(src_corr, axis=1).mean()) < 1e-12
    gpirt = ref_gpirt(y_anchor, anchors, aw, a_true, b_true, n_items, bias, variance)
    anchor_est = (y_anchor * aw).sum(axis=1)
    lam = ref_gpirt_lambda(bias, variance, len(anchors))
    assert np.allclose(gpirt, lam * anchor_est + (1 - lam) * pirt)
    assert np.allclose(ref_gpirt(y_anchor, anchors, aw, a_true, b_true, n_items, 0.0, variance),
                       pirt)
    assert np.allclose(ref_gpirt(y_anchor, anchors, aw, a_true, b_true, n_items, bias, 0.0),
                       anchor_est)
    print("tinyBenchmarks  anchors", anchors.tolist())
    print(f"                b={bias:.4f} v={variance:.4f} lambda={lam:.3f} "
          f"(validation {len(validation)}, training {len(training)})")
    print("  true      ", np.round(tgt_corr.mean(axis=1), 3).tolist())
    print("  anchor    ", np.round(anchor_est, 3).tolist())
    print("  p-IRT     ", np.round(pirt, 3).tolist())
    print("  gp-IRT    ", np.round(gpirt, 3).tolist())
    print("self-check passed")


if __name__ == "__main__":
    _self_check()
