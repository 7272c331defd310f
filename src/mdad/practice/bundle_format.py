"""The micro-benchmark file's format, checked field by field when a file is read: a
hand-edited or damaged file gives one line naming the field, never a traceback or a
nonsense estimate."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from mdad.errors import DataError

FIELDS = ("dataset", "sha256", "mdad_version", "method", "size", "seed", "items",
          "lm_eval_items", "lm_eval_tasks", "lm_eval_metric", "estimator", "pool_size",
          "reference_models", "reference_accuracy", "reference_answers", "mdad",
          "mdad_reached", "max_gap", "mdad_pairs", "mdad_how", "mdad_curve_sizes",
          "mdad_curve", "threshold", "error_sd", "format", "notes",
          "dataset_items", "mdad_curve_crossing_pairs", "cv_truth", "cv_estimate",
          "source_models", "source_models_sha256", "dataset_models", "dataset_item_ids")
# New in /4: the held-out pairs that calibrate the interval, and what it was selected from.
NEW_IN_4 = ("cv_truth", "cv_estimate", "source_models", "source_models_sha256",
            "dataset_models", "dataset_item_ids")
OPTIONAL = ("notes", "dataset_items", "mdad_curve_crossing_pairs", *NEW_IN_4)
FORMAT = "mdad-microbenchmark/5"
# also read: /4 files have /5's fields, but a method that estimates from confidences
# (Anchor Points and its variants) had its held-out pairs estimated from the models'
# confidences, not their scores (`CONFIDENCE_CALIBRATED`); /3 files lack NEW_IN_4
# (their interval is the older, uncalibrated one, and the CLI says so); /2 files also
# lack `mdad_curve_crossing_pairs`
CONFIDENCE_CALIBRATED = "mdad-microbenchmark/4"
OLDER_FORMAT = "mdad-microbenchmark/2"
PREVIOUS_FORMAT = "mdad-microbenchmark/3"
READABLE_FORMATS = (OLDER_FORMAT, PREVIOUS_FORMAT, CONFIDENCE_CALIBRATED, FORMAT)
CALIBRATED_FORMATS = (CONFIDENCE_CALIBRATED, FORMAT)  # with NEW_IN_4's fields


def _number(value: Any) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value))


def _fraction(value: Any) -> bool:
    return _number(value) and 0.0 <= value <= 1.0


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _numbers(value: Any, length: int | None = None,
             check: Callable[[Any], bool] = _number) -> bool:
    return (isinstance(value, list) and all(check(v) for v in value)
            and (length is None or len(value) == length))


def _matrix(value: Any, rows: int | None = None) -> bool:
    return (isinstance(value, list) and (rows is None or len(value) == rows)
            and all(_numbers(row) for row in value)
            and len({len(row) for row in value}) <= 1)


def _same_width(anchors: list, others: list) -> bool:
    """IRT parameters of one dimension count, at least 1, for anchors and other items."""
    width = len(anchors[0]) if anchors else 0
    return width >= 1 and all(len(row) == width for row in others)


def _answers(value: Any, size: int) -> bool:
    if isinstance(value, str):
        return len(value) == size and set(value) <= {"0", "1"}
    return _numbers(value, size, _fraction)


def validate(data: dict[str, Any], path: object) -> None:
    """Raise a one-line `DataError` naming the first field of `data` that does not
    have the format `mdad select` writes."""
    def need(ok: bool, name: str, what: str) -> None:
        if not ok:
            shown = repr(data.get(name))
            shown = shown if len(shown) <= 40 else shown[:37] + "..."
            raise DataError(f"{path}: field {name!r} must be {what} (found {shown}); the "
                            "file was edited or damaged: select again with `mdad select`")

    unknown = sorted(set(data) - set(FIELDS))
    need(not unknown, unknown[0] if unknown else "", "absent (not a field of the format)")
    for name in FIELDS:
        need(name in data or name in OPTIONAL, name, "present")
    for name in ("dataset", "sha256", "mdad_version", "method", "lm_eval_metric", "mdad_how"):
        need(isinstance(data[name], str), name, "text")
    size = data["size"]
    need(_integer(size) and size >= 1, "size", "a whole number of at least 1")
    need(_integer(data["seed"]), "seed", "a whole number")
    need(_integer(data["pool_size"]) and data["pool_size"] >= size, "pool_size",
         "a whole number of at least `size`")
    items = data["items"]
    need(_strings(items) and len(items) == size and len(set(items)) == size, "items",
         "a list of `size` distinct item ids")
    need(data["lm_eval_items"] is None or (_strings(data["lm_eval_items"])
                                           and len(data["lm_eval_items"]) == size),
         "lm_eval_items", "null or a list of `size` task/doc_id ids")
    need(data["lm_eval_tasks"] is None or _strings(data["lm_eval_tasks"]), "lm_eval_tasks",
         "null or a list of task names")
    models = data["reference_models"]
    need(_strings(models) and len(models) >= 1 and len(set(models)) == len(models),
         "reference_models", "a list of distinct model names")
    need(_numbers(data["reference_accuracy"], len(models), _fraction), "reference_accuracy",
         "one accuracy in [0, 1] per reference model")
    answers = data["reference_answers"]
    need(isinstance(answers, list) and len(answers) == len(models)
         and all(_answers(a, size) for a in answers), "reference_answers",
         "one row of `size` scores in [0, 1] per reference model")
    reached = data["mdad_reached"]
    need(isinstance(reached, bool), "mdad_reached", "true or false")
    need(_fraction(data["mdad"]) if reached else data["mdad"] is None, "mdad",
         "an accuracy gap in [0, 1] when reached, else null")
    need(data["max_gap"] is None or _fraction(data["max_gap"]), "max_gap",
         "null or a gap in [0, 1]")
    need(data["mdad_pairs"] is None or (_integer(data["mdad_pairs"])
                                        and data["mdad_pairs"] >= 0), "mdad_pairs",
         "null or a count of pairs")
    sizes, curve = data["mdad_curve_sizes"], data["mdad_curve"]
    need(_numbers(sizes, None, lambda v: _integer(v) and v >= 1), "mdad_curve_sizes",
         "a list of sizes")
    need(isinstance(curve, list) and len(curve) == len(sizes)
         and all(v is None or _fraction(v) for v in curve), "mdad_curve",
         "one MDAD in [0, 1] or null per size of mdad_curve_sizes")
    _check_crossing_pairs(data, need)
    need(_number(data["threshold"]) and 0.0 < data["threshold"] < 1.0, "threshold",
         "a probability in (0, 1)")
    need(data["error_sd"] is None or (_number(data["error_sd"]) and data["error_sd"] >= 0),
         "error_sd", "null or a non-negative error")
    need(_strings(data.get("notes", [])), "notes", "a list of text")
    whole = data.get("dataset_items")
    need(whole is None or (_integer(whole) and whole > data["pool_size"]), "dataset_items",
         "null or a whole number above `pool_size`")
    _validate_estimator(data["estimator"], size, need)
    _check_provenance(data, need)


def _check_provenance(data: dict[str, Any], need: Callable[[bool, str, str], None]) -> None:
    """/4's calibration pairs (one per source model, null for simple random samples,
    whose interval needs none) and what the file was selected from."""
    if data["format"] not in CALIBRATED_FORMATS:
        for name in NEW_IN_4:
            need(data.get(name) is None, name, f"null or absent in a format {data['format']} "
                 "file")
        return
    for name in NEW_IN_4:
        need(name in data, name, "present")
    sources = data["source_models"]
    need(_integer(sources) and sources == len(data["reference_models"]), "source_models",
         "the count of reference_models")
    need(_integer(data["dataset_models"]) and data["dataset_models"] >= sources,
         "dataset_models", "a count of models of at least `source_models`")
    need(isinstance(data["source_models_sha256"], str), "source_models_sha256", "text")
    ids = data["dataset_item_ids"]
    need(isinstance(ids, dict) and set(ids) == {"ranges", "ids"} and _strings(ids["ids"])
         and isinstance(ids["ranges"], list)
         and all(isinstance(r, list) and len(r) == 2 and all(_integer(v) and v >= 0 for v in r)
                 and r[0] <= r[1] for r in ids["ranges"]), "dataset_item_ids",
         "an object of ranges [first, last] of whole-number ids and other ids")
    for name in ("cv_truth", "cv_estimate"):
        need(data[name] is None if data["error_sd"] is None
             else _numbers(data[name], sources), name,
             "one number per source model, or null when error_sd is null")


def _validate_estimator(estimator: Any, size: int, need) -> None:
    """The built-in kinds field by field; another kind (a plugin method's) is checked
    by its method's loader (`MethodDefaults.load_estimator`) when the file is read."""
    need(isinstance(estimator, dict) and isinstance(estimator.get("kind"), str),
         "estimator", "an object with a kind")
    weights = estimator.get("weights")
    # Cluster shares sum to 1; Horvitz-Thompson weights, 1 / (inclusion probability x
    # pool size), are at most 1 each: a larger one is an edit.
    need(weights is None or (_numbers(weights, size, _fraction) and sum(weights) > 0),
         "estimator", "an object whose weights are null or `size` numbers in [0, 1], not "
         "all 0")
    kind = estimator["kind"]
    if kind == "linear":
        need(isinstance(estimator.get("confidence"), bool), "estimator",
             "a linear estimator with confidence true or false")
    elif kind == "predictor":
        nearest = estimator.get("nearest")
        need(isinstance(nearest, list) and all(_integer(v) and 0 <= v < size for v in nearest)
             and _numbers(estimator.get("slope"), len(nearest))
             and _numbers(estimator.get("intercept"), len(nearest)), "estimator",
             "a predictor with one anchor, slope and intercept per predicted item")
    elif kind == "irt":
        need(_matrix(estimator.get("discrimination"), size)
             and _numbers(estimator.get("difficulty"), size)
             and _matrix(estimator.get("others_discrimination"))
             and _numbers(estimator.get("others_difficulty"),
                          len(estimator.get("others_discrimination") or []))
             and _fraction(estimator.get("gp_weight"))
             and _same_width(estimator["discrimination"], estimator["others_discrimination"]),
             "estimator",
             "an IRT estimator with parameters for every item and gp_weight in [0, 1]")


def _check_crossing_pairs(data: dict[str, Any], need: Callable[[bool, str, str], None]
                          ) -> None:
    """A /3 file's analytic curve carries the pairs of the bin that sets each size's
    MDAD: 0 exactly where it is not reached, at most the pairs in all. A curve
    interpolated from a study has none (its rows' flags say when few pairs set it), nor
    does a /2 file."""
    name, crossing = "mdad_curve_crossing_pairs", data.get("mdad_curve_crossing_pairs")
    if data["format"] == OLDER_FORMAT or data["mdad_how"] == "interpolated":
        need(crossing is None, name, "null or absent in a format /2 file or for an MDAD "
             "interpolated from a study")
        return
    total = data["mdad_pairs"]
    need(_numbers(crossing, len(data["mdad_curve"]), lambda v: _integer(v) and v >= 0
                  and (total is None or v <= total))
         and all((count == 0) == (value is None)
                 for count, value in zip(crossing, data["mdad_curve"], strict=True)),
         name, "one count of pairs per size of mdad_curve_sizes, 0 exactly where the MDAD "
         "is not reached")


def _number_id(i: str) -> bool:
    """A whole-number id as ranges hold it: ASCII digits, no leading zero, short enough
    for an exact int (longer digit strings are kept as they are)."""
    return i.isascii() and i.isdigit() and len(i) <= 18 and str(int(i)) == i


def compact_ids(ids: list[str]) -> dict[str, list]:
    """Item ids as ``{"ranges": [[first, last], ...], "ids": [...]}``: runs of
    whole-number ids (written without leading zeros) as ranges, any other id as is."""
    numbers = sorted(int(i) for i in ids if _number_id(i))
    others = sorted(i for i in ids if not _number_id(i))
    ranges: list[list[int]] = []
    for n in numbers:
        if ranges and n == ranges[-1][1] + 1:
            ranges[-1][1] = n
        else:
            ranges.append([n, n])
    return {"ranges": ranges, "ids": others}


def in_compact(compact: dict[str, list], ids: list[str]) -> list[bool]:
    """Whether each of `ids` is one that `compact_ids` wrote into `compact`."""
    import bisect

    starts = [r[0] for r in compact["ranges"]]
    others = set(compact["ids"])

    def known(i: str) -> bool:
        if _number_id(i):
            k = bisect.bisect_right(starts, int(i)) - 1
            return k >= 0 and int(i) <= compact["ranges"][k][1]
        return i in others

    return [known(i) for i in ids]
