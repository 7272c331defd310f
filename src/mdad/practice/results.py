"""A model's results for a saved micro-benchmark, read and checked: a CSV of answers or
lm-evaluation-harness samples, against the file's items, its dataset and its metric."""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from mdad.errors import ConfigError, DataError, check_path, check_type
from mdad.practice.answers import read_answers_csv

if TYPE_CHECKING:
    from mdad.practice.bundle import MicroBenchmarkFile

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


FOREIGN_SHARE = 0.1  # of a result's items not the dataset's, beyond which it is refused


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
    """Read one model's scores on a micro-benchmark's items from its per-item results.

    The results are an lm-eval ``--log_samples`` folder or file, or a CSV with columns
    ``item_id`` and ``correct``. Not `mdad.data.read_results`, which reads many models'
    results into a `ResponseMatrix`: this reads one model's, matched to `bundle`'s
    items.

    Parameters
    ----------
    path : pathlib.Path
        The model's results: an lm-eval ``--log_samples`` folder or ``.jsonl`` file
        (only the sample files of the micro-benchmark's tasks are read), or a ``.csv``
        file of ``item_id,correct``.
    bundle : MicroBenchmarkFile
        The saved micro-benchmark whose items are read (``MicroBenchmarkFile.load(path)``).
    metric : str or None, default None
        The lm-eval metric to read (e.g. ``acc``, ``acc_norm``); None: the one the
        micro-benchmark was built on. No other metric stands in for it.
    allow_other_metric : bool, default False
        Accept a `metric` other than the micro-benchmark's, whose MDAD and estimator
        hold for its own only.
    allow_mixed_settings : bool, default False
        Accept lm-eval runs of mixed n-shot settings (the reader's note says so).

    Returns
    -------
    ItemScores
        The model's name, one score in [0, 1] per item of the micro-benchmark in its
        order (NaN for an item the results lack), the items missing, how many result
        items are outside the micro-benchmark (ignored), and the fingerprint of the
        files read.

    Raises
    ------
    ConfigError
        For a `path` that is not a path, or a `metric` other than the
        micro-benchmark's, unless `allow_other_metric`.
    DataError
        For a file with several models, duplicated items, no item of the
        micro-benchmark at all, or items that are not the dataset's (results for another
        task or dataset); lm-eval runs of mixed n-shot unless `allow_mixed_settings`;
        lm-eval results for a dataset with no lm-eval task mapping.
    """
    check_path(path, "path")
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


def check_results(bundle: MicroBenchmarkFile, results: ItemScores, parameter: str) -> None:
    """Refuse a `bundle` that is not a loaded micro-benchmark, and `results` (the
    parameter named `parameter`) that are not `ItemScores` of its items: one score in
    [0, 1], or NaN for an item not answered, per item of the file, in its order.

    Raises
    ------
    ConfigError
        For the wrong types; DataError for scores of another length or range.
    """
    from mdad.practice.bundle import MicroBenchmarkFile

    check_type(bundle, MicroBenchmarkFile, "bundle",
               "a MicroBenchmarkFile (MicroBenchmarkFile.load(path))")
    check_type(results, ItemScores, parameter, "ItemScores (read_model_scores(path, bundle))")
    scores = np.asarray(results.scores)
    if scores.shape != (bundle.size,) or scores.dtype.kind not in "buif":
        raise DataError(f"{parameter}: scores must be {bundle.size} floats, one per item of "
                        f"the micro-benchmark; got shape {scores.shape} of {scores.dtype}",
                        parameters=(parameter,))
    answered = scores[~np.isnan(scores)]
    if ((answered < 0) | (answered > 1)).any():
        raise DataError(f"{parameter}: scores must lie in [0, 1] (NaN: not answered); got "
                        f"{answered[(answered < 0) | (answered > 1)][0]}",
                        parameters=(parameter,))


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
