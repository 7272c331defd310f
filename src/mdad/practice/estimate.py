"""A new model's results on a saved micro-benchmark: its estimated full score, which
models it is reliably above or below, and whether two models' gap is real."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import binomtest

from mdad.errors import DataError
from mdad.practice.bundle import MicroBenchmarkFile

Z95 = 1.959963984540054


@dataclass(frozen=True)
class ItemScores:
    """One model's scores on the micro-benchmark's items, and what did not match.

    Attributes
    ----------
    scores : float array of shape (size,), NaN for an item the results lack.
    missing : the micro-benchmark's items the results lack.
    extra : items in the results that are not in the micro-benchmark (ignored).
    """

    model: str
    scores: np.ndarray
    missing: list[str]
    extra: int


def read_results(path: Path, bundle: MicroBenchmarkFile, *, metric: str | None = None
                 ) -> ItemScores:
    """One model's per-item results: an lm-eval ``--log_samples`` folder or file, or a
    CSV with columns ``item_id`` and ``correct``.

    Raises
    ------
    DataError
        For a file with several models, duplicated items, or no item of the
        micro-benchmark at all (results for another task or dataset).
    """
    path = Path(path)
    if path.suffix.lower() == ".csv":
        model, values = path.stem, _read_csv(path)
        wanted = bundle.items
    else:
        from mdad.data.lm_eval import load_lm_eval_samples

        matrix = load_lm_eval_samples(path, metric=metric or bundle.lm_eval_metric)
        if matrix.n_models != 1:
            raise DataError(f"{path}: holds results of {matrix.n_models} models; pass one "
                            "model's folder or file")
        model = str(matrix.model_names[0])
        values = {str(i): float(v) for i, v in zip(matrix.item_ids, matrix.correctness[0],
                                                  strict=True) if not np.isnan(v)}
        if bundle.lm_eval_items is None:
            raise DataError(f"{path}: lm-eval results, but the micro-benchmark's dataset "
                            f"{bundle.dataset} has no lm-eval task mapping; pass a CSV")
        wanted = bundle.lm_eval_items
    found = [item for item in wanted if item in values]
    if not found:
        example = next(iter(values), "none")
        raise DataError(f"{path}: none of the micro-benchmark's {len(wanted)} items are in "
                        f"these results (e.g. {wanted[0]!r}, results have {example!r}); "
                        "are they for another task or dataset?")
    scores = np.array([values.get(item, np.nan) for item in wanted])
    missing = [item for item, s in zip(bundle.items, scores, strict=True) if np.isnan(s)]
    return ItemScores(model, scores, missing, len(set(values) - set(wanted)))


def _read_csv(path: Path) -> dict[str, float]:
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.reader(handle))
    except OSError as exc:
        raise DataError(f"{path}: cannot read it ({exc.strerror})") from None
    if not rows or [c.strip() for c in rows[0][:2]] != ["item_id", "correct"]:
        raise DataError(f"{path}: the first line must be the header item_id,correct")
    values: dict[str, float] = {}
    for line, row in enumerate(rows[1:], start=2):
        if len(row) < 2:
            raise DataError(f"{path}, line {line}: expected item_id,correct")
        item = row[0].strip()
        try:
            value = float(row[1])
        except ValueError:
            raise DataError(f"{path}, line {line}, column correct: {row[1]!r} is not a "
                            "number in [0, 1]") from None
        if not 0.0 <= value <= 1.0:
            raise DataError(f"{path}, line {line}, column correct: {value} is not in [0, 1]")
        if item in values:
            raise DataError(f"{path}, line {line}: item {item!r} appears twice")
        values[item] = value
    return values


@dataclass(frozen=True)
class Estimate:
    """A model's estimated full-benchmark accuracy and where it stands.

    Attributes
    ----------
    accuracy, low, high : the estimate and its 95% interval (fractions).
    above, below, too_close : reference models this model is reliably above, below
        (the gap to their pool accuracy is at least the MDAD), or too close to call.
    """

    model: str
    accuracy: float
    low: float
    high: float
    items_used: int
    missing: list[str]
    extra: int
    mdad: float
    mdad_how: str
    above: list[str]
    below: list[str]
    too_close: list[str]


def estimate_score(bundle: MicroBenchmarkFile, results: ItemScores) -> Estimate:
    """Estimate `results`' model's full accuracy from the micro-benchmark.

    The 95% interval: for uniform random sampling, the normal interval of a mean of
    n of N items drawn without replacement (finite population correction); for every
    other method, +-1.96 times the cross-validated error stored in the file. Items
    the results lack are left out (plain means and weights over the rest).
    """
    observed = ~np.isnan(results.scores)
    value = float(_estimates(bundle, results.scores[None, :], observed)[0])
    used = int(observed.sum())
    if bundle.error_sd is None:
        low, high = _wilson(value, used, bundle.pool_size)
    else:
        low = max(value - Z95 * bundle.error_sd, 0.0)
        high = min(value + Z95 * bundle.error_sd, 1.0)
    reference = np.asarray(bundle.reference_accuracy)
    names = np.asarray(bundle.reference_models)
    gap = value - reference
    return Estimate(
        model=results.model, accuracy=value, low=low, high=high, items_used=used,
        missing=results.missing, extra=results.extra, mdad=bundle.mdad,
        mdad_how=bundle.mdad_how, above=names[gap >= bundle.mdad].tolist(),
        below=names[-gap >= bundle.mdad].tolist(),
        too_close=names[np.abs(gap) < bundle.mdad].tolist())


def _estimates(bundle: MicroBenchmarkFile, scores: np.ndarray,
               observed: np.ndarray) -> np.ndarray:
    """The micro-benchmark's estimate for each row of `scores` (n_models, size) from the
    `observed` items only: plain means and weights are taken over them; estimators
    that need every item refuse."""
    micro = bundle.to_microbenchmark()
    if observed.all():
        return micro.estimate(scores)
    if bundle.estimator["kind"] != "linear":
        raise DataError(f"{bundle.method}'s estimator needs every item; the results lack "
                        f"{int((~observed).sum())} of them")
    weights = (np.ones(observed.size) if micro.weights is None
               else np.asarray(micro.weights, dtype=np.float64))[observed]
    return scores[:, observed] @ weights / weights.sum()


def _wilson(value: float, n: int, pool: int) -> tuple[float, float]:
    """The 95% Wilson score interval of a mean of n 0/1 scores drawn without
    replacement from `pool` items: the sample size is inflated by the finite
    population correction (n / fpc), which shrinks the interval as n nears the pool."""
    fpc = (pool - n) / max(pool - 1, 1)
    if fpc <= 0:
        return value, value
    effective = n / fpc
    z2 = Z95**2
    centre = (value + z2 / (2 * effective)) / (1 + z2 / effective)
    half = Z95 * np.sqrt(value * (1 - value) / effective + z2 / (4 * effective**2)) / (
        1 + z2 / effective)
    return max(centre - half, 0.0), min(centre + half, 1.0)


@dataclass(frozen=True)
class Comparison:
    """Two models on the same items.

    Attributes
    ----------
    difference, low, high : estimate(A) - estimate(B) and its 95% interval.
    only_first, only_second : items right for A only, for B only (0/1 scores).
    p_value : the exact two-sided McNemar test of the discordant items.
    verdict : "reliable" when |difference| >= the MDAD and the interval excludes 0,
        else "too close to call".
    """

    first: str
    second: str
    difference: float
    low: float
    high: float
    items_used: int
    only_first: int
    only_second: int
    p_value: float
    mdad: float
    verdict: str


def compare_models(bundle: MicroBenchmarkFile, first: ItemScores,
                   second: ItemScores) -> Comparison:
    """The paired difference of two models on the items both have results for."""
    both = ~np.isnan(first.scores) & ~np.isnan(second.scores)
    if not both.any():
        raise DataError("the two results share no item of the micro-benchmark")
    a, b = first.scores[both], second.scores[both]
    estimates = _estimates(bundle, np.vstack([np.where(both, first.scores, 0.0),
                                              np.where(both, second.scores, 0.0)]), both)
    difference = float(estimates[0] - estimates[1])
    only_first = int(np.sum((a > 0.5) & (b <= 0.5)))
    only_second = int(np.sum((b > 0.5) & (a <= 0.5)))
    n = int(both.sum())
    if bundle.error_sd is None:
        per_item = a - b
        fpc = (bundle.pool_size - n) / max(bundle.pool_size - 1, 1)
        half = Z95 * np.sqrt(per_item.var() / n * fpc)
    else:
        half = Z95 * np.sqrt(2.0) * bundle.error_sd
    discordant = only_first + only_second
    p_value = 1.0 if discordant == 0 else float(
        binomtest(only_first, discordant, 0.5).pvalue)
    low, high = difference - half, difference + half
    reliable = abs(difference) >= bundle.mdad and (low > 0 or high < 0)
    return Comparison(first.model, second.model, difference, low, high, n, only_first,
                      only_second, p_value, bundle.mdad,
                      "reliable" if reliable else "too close to call")
