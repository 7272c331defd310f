"""Errors a user can cause. Each carries a one-line message that names the culprit and the fix.

The library names parameters in Python terms (``n_runs must be >= 1; got 0``) and lists
them in `parameters`; the CLI rewrites those names as its own options (``--runs``).
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Iterable
from enum import StrEnum


class MdadError(Exception):
    """Base class of every error the CLI reports as one line with exit code 2.

    `parameters` are the Python parameter names the message mentions, in its words.
    """

    def __init__(self, message: str, *, parameters: tuple[str, ...] | str = ()) -> None:
        super().__init__(message)
        self.parameters = (parameters,) if isinstance(parameters, str) else tuple(parameters)


class DataError(MdadError):
    """An input file or matrix is missing, malformed or unusable."""


class ConfigError(MdadError):
    """An option or parameter has an invalid value."""


class ChoiceError(ConfigError, ValueError):
    """A value that is none of an enum's choices: a ValueError too, as an enum's own
    refusal is, so that code catching that keeps working."""


def check_integer(value: object, parameter: str) -> None:
    """Refuse `value` unless it is an integer (bool is not one); its range is checked
    where it is known.

    Raises
    ------
    ConfigError
        ``{parameter} must be a whole number; got {value!r}``.
    """
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise ConfigError(f"{parameter} must be a whole number; got {value!r}",
                          parameters=(parameter,))


def check_whole(value: object, parameter: str, minimum: int = 1,
                maximum: int | None = None, why: str = "") -> None:
    """Refuse `value` unless it is an integer in `minimum`..`maximum` (bool is not one;
    no `maximum`: no upper bound).

    Raises
    ------
    ConfigError
        ``{parameter} must be an integer >= {minimum}; got {value!r}`` (or "in
        {minimum}..{maximum} ({why})", `why` saying what the bound protects).
    """
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < minimum:
        raise ConfigError(f"{parameter} must be an integer >= {minimum}; got {value!r}",
                          parameters=(parameter,))
    if maximum is not None and value > maximum:
        raise ConfigError(f"{parameter} must be an integer in {minimum}..{maximum:,}"
                          f"{f' ({why})' if why else ''}; got {value!r}", parameters=(parameter,))


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """" (did you mean 'random'?)" when a known name is close to `name` (difflib's
    ratio at least 0.6), else ''."""
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_type(value: object, kind: type | tuple[type, ...], parameter: str,
               what: str) -> None:
    """Refuse `value` unless it is an instance of `kind`; `what` says what to pass, e.g.
    "a Dataset (mdad.load_dataset(name))".

    Raises
    ------
    ConfigError
        ``{parameter} must be {what}; got {type name}``.
    """
    if not isinstance(value, kind):
        raise ConfigError(f"{parameter} must be {what}; got {type(value).__name__}",
                          parameters=(parameter,))



def check_positive(value: object, parameter: str) -> float:
    """`value` as a float, refused unless a finite real number > 0 (bool is not one).

    Raises
    ------
    ConfigError
        ``{parameter} must be a finite number > 0; got {value!r}``.
    """
    if (not isinstance(value, numbers.Real) or isinstance(value, bool)
            or not 0 < float(value) < math.inf):
        raise ConfigError(f"{parameter} must be a finite number > 0; got {value!r}",
                          parameters=(parameter,))
    return float(value)

def check_path(value: object, parameter: str) -> None:
    """Refuse `value` unless it is a path (str or os.PathLike).

    Raises
    ------
    ConfigError
        ``{parameter} must be a path (str or pathlib.Path); got {type name}``.
    """
    check_type(value, (str, os.PathLike), parameter, "a path (str or pathlib.Path)")


def check_open_unit(value: object, parameter: str) -> None:
    """Refuse `value` unless it is a real number strictly between 0 and 1 (bool is not).

    Raises
    ------
    ConfigError
        ``{parameter} must be in (0, 1); got {value!r}``.
    """
    if (not isinstance(value, numbers.Real) or isinstance(value, bool)
            or not 0.0 < float(value) < 1.0):
        raise ConfigError(f"{parameter} must be in (0, 1); got {value!r}",
                          parameters=(parameter,))



def check_fractions(value: object, parameter: str = "fractions") -> None:
    """Refuse `value` unless it is a non-empty tuple or list of distinct real numbers in
    (0, 1] (bool is not one): micro-benchmark sizes as fractions of a pool.

    Raises
    ------
    ConfigError
        ``{parameter} must list at least one number in (0, 1], each once; got ...``.
    """
    if (not isinstance(value, tuple | list) or not value
            or not all(isinstance(f, numbers.Real) and not isinstance(f, bool)
                       and 0.0 < float(f) <= 1.0 for f in value)
            or len(set(value)) != len(value)):
        raise ConfigError(f"{parameter} must list at least one number in (0, 1], each "
                          f"once; got {value!r}", parameters=(parameter,))


def float_array(value: object, parameter: str, error: type[MdadError] | None = None):
    """`value` as a float64 numpy array, or an error naming `parameter` when numpy
    cannot read it as numbers (text that is no number, ragged lists, objects): numpy's
    own error names no parameter. None reads as NaN, and '0.5' as 0.5, as numpy reads
    them.

    Raises
    ------
    DataError (or `error`)
        ``{parameter} must be numbers; got {type name}``.
    """
    import numpy as np

    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise (error or DataError)(f"{parameter} must be numbers; got "
                                   f"{type(value).__name__}", parameters=(parameter,)) from None



class Choice(StrEnum):
    """A choice among names whose unknown value raises `ChoiceError` naming the option
    it came from (`__option__`, set by each subclass), with a near name's suggestion."""

    @classmethod
    def _missing_(cls, value: object) -> None:
        refuse_choice(cls, value, getattr(cls, "__option__", cls.__name__))

def refuse_choice(choices: Iterable, value: object, parameter: str) -> None:
    """Raise for a `value` that is none of `choices` (an enum's members): an enum's
    `_missing_` calls it, so that ``Choice(value)`` names the option it came from.

    Raises
    ------
    ChoiceError
        ``{parameter} must be one of ...; got {value!r}``, with a near name's suggestion.
    """
    names = [str(getattr(choice, "value", choice)) for choice in choices]
    raise ChoiceError(f"{parameter} must be one of {', '.join(names)}; got {value!r}"
                      f"{did_you_mean(str(value), names)}", parameters=(parameter,))

# What an exception says when a resource ran out, whatever library raised it.
RUNNING_OUT_TEXT = ("out of memory", "cannot allocate memory", "failed to allocate",
                    "failed to map segment", "std::bad_alloc", "can't start new thread",
                    "failed to launch worker thread", "no space left on device",
                    "too many open files")


def running_out(exc: BaseException) -> bool:
    """Whether `exc` is memory, threads, disk space or open files running out: no fault
    of the input, so a reader must not report it as a damaged file."""
    import errno

    if isinstance(exc, MemoryError) or "ArrowMemoryError" in {
            cls.__name__ for cls in type(exc).__mro__}:
        return True
    if isinstance(exc, OSError) and exc.errno in (errno.ENOMEM, errno.ENOSPC, errno.EMFILE,
                                                  errno.ENFILE):
        return True
    text = str(exc).lower()
    return any(t in text for t in RUNNING_OUT_TEXT)
