"""The adaptive test's state file, as a schema: every field's type and range and how
fields relate, in one table read top to bottom (`STATE_SCHEMA`), checked before any
number of a state reaches numpy (`checked_state`)."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any

from mdad.data.synthetic import IDENTITY as SYNTHETIC_IDENTITY
from mdad.errors import DataError

STATE_FORMAT = "mdad-adaptive/3"
# also read: /2 states lack `choice` (none of their methods chooses); /1 states also lack
# `cv_calibration`: their interval is the older one, and says so
OLDER_STATE_FORMATS = ("mdad-adaptive/2", "mdad-adaptive/1")
# method -> IRT dimensions (None: chosen by cross-validation, in the state's `choice`)
ADAPTIVE_METHODS: dict[str, int | None] = {"adaptive": 1, "adaptive-md": 3, "adaptive-cv": None}
MAX_DIMS = 10
# The most |discrimination| and |difficulty| a state may hold. Standardised fits of the
# real data stay far inside: GPQA's 420 models |a| <= 3.3, |b| <= 4.6; MMLU-Pro's 29
# models (10,326 items) |a| <= 11.2, |b| <= 16.3 (1-D and 3-D, seed 0); 8 to 12 GPQA
# models |a| <= 5.3, |b| <= 3.7. Beyond it a file is not a fit but damage.
PARAMETER_BOUND = 50.0
_TEXT = re.compile(r"[^\x00-\x1f\x7f]{1,1000}")  # printable: no escapes for a terminal
_HEX64 = re.compile(r"[0-9a-f]{64}")
# lm-eval's task names hold no '/' or spaces; a doc index is a whole number
LM_EVAL_NAME = re.compile(r"[^\s/\x00-\x1f\x7f]{1,200}/[0-9]{1,15}")


def _text(value: object) -> bool:
    return isinstance(value, str) and _TEXT.fullmatch(value) is not None


def _real(value: object, low: float, high: float) -> bool:
    """A JSON number (not a bool) in [low, high]: NaN and infinities fail, and a huge
    integer is compared exactly, never converted."""
    return isinstance(value, int | float) and not isinstance(value, bool) and (
        low <= value <= high)


def _whole(value: object, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _list_of(value: object, check: Callable[[Any], bool], length: int | None = None) -> bool:
    return isinstance(value, list) and (length is None or len(value) == length) and all(
        check(x) for x in value)


def _distinct_texts(value: object, check: Callable[[Any], bool] = _text) -> bool:
    return _list_of(value, check) and len(set(value)) == len(value)  # type: ignore[arg-type]


def _parameter(value: object) -> bool:
    return _real(value, -PARAMETER_BOUND, PARAMETER_BOUND)


def _pairs(value: object, state: dict[str, Any]) -> bool:
    items = set(state["item_ids"])
    return (_list_of(value, lambda x: isinstance(x, list) and len(x) == 2 and isinstance(
        x[0], str) and x[0] in items and _real(x[1], 0, 1))
        and len({x[0] for x in value}) == len(value) <= state["budget"])  # type: ignore[union-attr]


def _unanswered(value: object, state: dict[str, Any]) -> bool:
    free = set(state["item_ids"]) - {x[0] for x in state["answers"]}
    return (_distinct_texts(value, lambda x: isinstance(x, str) and x in free)
            and len(value) <= state["budget"])  # type: ignore[arg-type]


def _ascending(value: object, state: dict[str, Any]) -> bool:
    return (_list_of(value, lambda x: _whole(x, 0, state["budget"])) and len(value) > 0
            and value == sorted(set(value)))  # type: ignore[arg-type]  # each once, ascending


def _calibration_rows(value: object, state: dict[str, Any]) -> bool:
    from mdad.practice.calibration import LIST_LENGTH, Calibration

    if value is None:
        return True
    return state["format"] != "mdad-adaptive/1" and _list_of(
        value, lambda row: _list_of(row, lambda x: _real(x, -1e6, 1e6), LIST_LENGTH)
        and Calibration.valid_list(row), len(state["cv_answered"]))


_CHOICE_FIELDS = ("dims", "prior_scale", "stop", "budget", "error", "candidates", "folds",
                  "models")


def _choice(value: object, state: dict[str, Any]) -> bool:
    """Null for a method of fixed dimension; for `adaptive-cv`, `AdaptiveChoice.to_json()`."""
    if ADAPTIVE_METHODS[state["method"]] is not None:
        return value is None
    n_items = len(state["item_ids"])
    return (isinstance(value, dict) and set(value) == set(_CHOICE_FIELDS)
            and _whole(value["dims"], 1, MAX_DIMS) and _real(value["prior_scale"], 1e-3, 1e3)
            and _whole(value["budget"], 1, n_items)
            and _whole(value["stop"], 1, value["budget"])
            and _real(value["error"], 0, 1) and _whole(value["folds"], 2, 10**6)
            and _whole(value["models"], 2, 10**9)
            and _list_of(value["candidates"], lambda c: isinstance(c, list) and len(c) == 4
                         and _whole(c[0], 1, MAX_DIMS) and _real(c[1], 1e-3, 1e3)
                         and _whole(c[2], 1, value["budget"]) and _real(c[3], 0, 1))
            and 0 < len(value["candidates"]) <= 100)


def _dims(state: dict[str, Any]) -> int:
    fixed = ADAPTIVE_METHODS[state["method"]]
    return fixed if fixed is not None else int(state["choice"]["dims"])


# field -> (its rule, for the message; the check, given the fields above it, all valid).
# One table, read top to bottom: every field's type and range, and how fields relate.
STATE_SCHEMA: dict[str, tuple[str, Callable[[Any, dict[str, Any]], bool]]] = {
    "format": (f"must be {STATE_FORMAT!r} (or {' or '.join(map(repr, OLDER_STATE_FORMATS))})",
               lambda v, s: v in (STATE_FORMAT, *OLDER_STATE_FORMATS)),
    "mdad_version": ("must be printable text", lambda v, s: _text(v)),
    "dataset": ("must be printable text", lambda v, s: _text(v)),
    "sha256": ("must be 64 lowercase hex digits, a synthetic dataset's identity, or empty",
               lambda v, s: v == "" or (isinstance(v, str) and bool(
                   _HEX64.fullmatch(v) or SYNTHETIC_IDENTITY.fullmatch(v)))),
    "method": (f"must be one of {', '.join(ADAPTIVE_METHODS)}",
               lambda v, s: isinstance(v, str) and v in ADAPTIVE_METHODS),
    "metric": ("must be printable text", lambda v, s: _text(v)),
    "item_ids": ("must be a non-empty list of distinct printable strings",
                 lambda v, s: _distinct_texts(v) and len(v) > 0),
    "lm_eval_items": ("must be null or one distinct task/doc name (doc a whole number) "
                      "per item", lambda v, s: v is None or (_distinct_texts(
                          v, lambda x: isinstance(x, str) and bool(LM_EVAL_NAME.fullmatch(x)))
                          and len(v) == len(s["item_ids"]))),
    "choice": ("must be null for adaptive and adaptive-md; for adaptive-cv, the "
               "cross-validated choice (dims, prior_scale, stop, budget, error, candidates, "
               "folds, models)", _choice),
    "discrimination": (f"must hold one row per item of as many numbers as the method's "
                       f"dimensions, each within +-{PARAMETER_BOUND:g}", lambda v, s: _list_of(
                           v, lambda row: _list_of(row, _parameter, _dims(s)),
                           len(s["item_ids"]))),
    "difficulty": (f"must hold one number per item, each within +-{PARAMETER_BOUND:g}",
                   lambda v, s: _list_of(v, _parameter, len(s["item_ids"]))),
    "budget": ("must be a whole number from 1 to the number of items (adaptive-cv: the "
               "choice's stop)", lambda v, s: _whole(v, 1, len(s["item_ids"])) and (
                   s["choice"] is None or v == s["choice"]["stop"])),
    "batch": ("must be a whole number from 1 to the budget",
              lambda v, s: _whole(v, 1, s["budget"])),
    "target_se": ("must be null or a finite number > 0",
                  lambda v, s: v is None or (_real(v, 0, sys.float_info.max) and v > 0)),
    "cv_answered": ("must be whole numbers from 0 to the budget, ascending", _ascending),
    "cv_error": ("must hold one number in [0, 1] per cv_answered",
                 lambda v, s: _list_of(v, lambda x: _real(x, 0, 1), len(s["cv_answered"]))),
    "cv_calibration": ("must be null, or one calibration (19 numbers, as "
                       "Calibration.to_list) per cv_answered (from format /2 on)",
                       _calibration_rows),
    "answers": ("must be [item, score in [0, 1]] pairs of distinct items of the test, at "
                "most the budget", _pairs),
    "pending": ("must list distinct unanswered items of the test, at most the budget",
                _unanswered),
    "applied": ("must be a list of sha256 fingerprints (64 lowercase hex digits)",
                lambda v, s: _list_of(v, lambda x: isinstance(x, str) and bool(
                    _HEX64.fullmatch(x)))),
    "round": ("must be the number of applied results, at most the number of answers",
              lambda v, s: _whole(v, 0, len(s["answers"])) and v == len(s["applied"])),
}



def checked_state(data: object, where: str, fix: str = "start a new test") -> dict[str, Any]:
    """`data` checked against `STATE_SCHEMA`, an older state given its null fields.

    Raises
    ------
    DataError
        One line naming `where`, the first wrong field and its rule, then `fix`.
    """
    if not isinstance(data, dict):
        raise DataError(f"{where}: not an adaptive test state (a JSON object expected); {fix}")
    if data.get("format") in OLDER_STATE_FORMATS and "choice" not in data:
        data = {**data, "choice": None}  # their methods choose nothing
    if data.get("format") == "mdad-adaptive/1" and "cv_calibration" not in data:
        data = {**data, "cv_calibration": None}  # /1 had none: the older interval
    for name, (rule, check) in STATE_SCHEMA.items():
        if name not in data:
            raise DataError(f"{where}: field {name!r} is missing; {fix}")
        if not check(data[name], data):
            raise DataError(f"{where}: field {name!r} {rule}; {fix}")
    unknown = sorted(str(name) for name in set(data) - set(STATE_SCHEMA))
    if unknown:  # after 'format': another format's fields are named by it
        raise DataError(f"{where}: field {unknown[0][:100]!r} is not part of an "
                        f"{STATE_FORMAT} state; {fix}")
    return data
