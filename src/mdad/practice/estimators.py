"""The micro-benchmark's estimate of each model's full accuracy from the items it
answered, for every kind of saved estimator: linear weights (re-weighted over a subset),
Anchor Points' predictor (all items only), IRT (re-fitted on the answered anchors), and
a plugin method's own."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from mdad.errors import DataError
from mdad.selection.base import weighted_sum

if TYPE_CHECKING:
    from mdad.practice.bundle import MicroBenchmarkFile


def item_weights(bundle: MicroBenchmarkFile) -> np.ndarray:
    weights = bundle.estimator.get("weights")
    return (np.ones(bundle.size) if weights is None
            else np.asarray(weights, dtype=np.float64))


def refuse_subset(bundle: MicroBenchmarkFile, observed: np.ndarray) -> None:
    if not observed.all():
        raise DataError(f"{bundle.method}'s estimator predicts the other items from every "
                        f"anchor and cannot work on a subset; the results lack "
                        f"{int((~observed).sum())} of its {bundle.size} items")


def predictor_shares(bundle: MicroBenchmarkFile, scores: np.ndarray) -> np.ndarray:
    """Anchor Points' predictor as a sum over anchors: share of the floaters predicted
    correct through each anchor, shape (n_models, size); rows sum to the estimate."""
    nearest = np.asarray(bundle.estimator["nearest"], dtype=np.int64)
    slope = np.asarray(bundle.estimator["slope"], dtype=np.float64)
    intercept = np.asarray(bundle.estimator["intercept"], dtype=np.float64)
    from mdad.selection.anchor_points import clipped_logit  # the predictor's own

    anchors = clipped_logit(scores)
    correct = (anchors[:, nearest] * slope + intercept > 0).astype(np.float64)
    one_hot = np.zeros((nearest.size, scores.shape[1]))
    one_hot[np.arange(nearest.size), nearest] = 1.0
    return correct @ one_hot / max(nearest.size, 1)


def irt_estimates(bundle: MicroBenchmarkFile, scores: np.ndarray,
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
    weights = np.where(observed, item_weights(bundle), 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):  # no anchor observed: NaN
        anchor = np.sum(weights * np.nan_to_num(responses), axis=1) / weights.sum(axis=1)
    return weight * anchor + (1 - weight) * pirt


# predicted cells (rows x items) the jackknife scores at once: 160 MB of float64
_JACKKNIFE_CELLS = 20_000_000


def irt_jackknife_estimates(bundle: MicroBenchmarkFile, rows: np.ndarray,
                            observed: np.ndarray) -> np.ndarray:
    """Each row's IRT estimate (`irt_estimates`) on the observed anchors, then with
    each observed anchor left out in turn.

    Parameters
    ----------
    rows : float array of shape (n_rows, size), scores (NaN-free).
    observed : bool array of shape (size,).

    Returns
    -------
    float array of shape (n_rows, k + 1), k the observed anchors: column 0 on all of
    them, column j + 1 without the j-th. A row's values do not depend on the other
    rows (their abilities are fitted apart; only the last bits of a batched fit can).
    """
    kept = np.flatnonzero(observed)
    masks = np.repeat(observed[None, :], kept.size + 1, axis=0)
    masks[np.arange(1, kept.size + 1), kept] = False  # row j + 1 leaves anchor j out
    n_items = len(bundle.estimator["difficulty"]) + len(bundle.estimator["others_difficulty"])
    block = max(1, _JACKKNIFE_CELLS // ((kept.size + 1) * n_items))
    out = np.empty((rows.shape[0], kept.size + 1))
    for start in range(0, rows.shape[0], block):
        part = rows[start:start + block]
        estimates = irt_estimates(bundle, np.repeat(part, kept.size + 1, axis=0),
                                  np.tile(masks, (part.shape[0], 1)))
        out[start:start + block] = estimates.reshape(part.shape[0], kept.size + 1)
    return out


def jackknife_difference(first: np.ndarray, second: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray]:
    """The difference of two models' estimates and its delete-one jackknife variance,
    from their `irt_jackknife_estimates` rows (shapes (..., k + 1) that broadcast):
    arrays of the broadcast shape without the last axis; the variance is inf for
    fewer than 2 anchors."""
    differences = np.asarray(first) - np.asarray(second)
    k = differences.shape[-1] - 1
    if k < 2:
        return differences[..., 0], np.full(differences.shape[:-1], np.inf)
    left_out = differences[..., 1:]
    centred = left_out - left_out.mean(axis=-1, keepdims=True)
    return differences[..., 0], (k - 1) / k * np.sum(centred**2, axis=-1)


def irt_jackknife(bundle: MicroBenchmarkFile, pair: np.ndarray,
                   observed: np.ndarray) -> tuple[float, float]:
    """The IRT estimators' difference of the two rows of `pair` on the observed anchors,
    and its delete-one jackknife variance over those anchors."""
    first, second = irt_jackknife_estimates(bundle, pair, observed)
    difference, variance = jackknife_difference(first, second)
    return float(difference), float(variance)


def estimates_of(bundle: MicroBenchmarkFile, scores: np.ndarray,
               observed: np.ndarray) -> np.ndarray:
    """The micro-benchmark's estimate for each row of `scores` (n_models, size) from the
    `observed` items only: linear estimators re-weighted over them, IRT estimators
    re-fitted on them, Anchor Points' predictor refuses a subset."""
    kind = bundle.estimator["kind"]
    if kind == "linear":
        weights = item_weights(bundle)[observed]
        return weighted_sum(scores[:, observed], weights) / weights.sum()
    if kind == "predictor":
        refuse_subset(bundle, observed)
        return predictor_shares(bundle, scores).sum(axis=1)
    if kind == "irt":
        return irt_estimates(bundle, scores, np.broadcast_to(observed, scores.shape))
    # another method's own estimator (a plugin's): as its class loads it, all items only
    refuse_subset(bundle, observed)
    return bundle.to_microbenchmark().estimate(scores)
