"""Errors a user can cause. Each carries a one-line message that names the culprit and the fix.

The library names parameters in Python terms (``n_runs must be >= 1; got 0``) and lists
them in `parameters`; the CLI rewrites those names as its own options (``--runs``).
"""

from __future__ import annotations

import numbers


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


def check_whole(value: object, parameter: str, minimum: int = 1,
                maximum: int | None = None) -> None:
    """Refuse `value` unless it is an integer in `minimum`..`maximum` (bool is not one;
    no `maximum`: no upper bound).

    Raises
    ------
    ConfigError
        ``{parameter} must be an integer >= {minimum}; got {value!r}`` (or "in
        {minimum}..{maximum}").
    """
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < minimum:
        raise ConfigError(f"{parameter} must be an integer >= {minimum}; got {value!r}",
                          parameters=(parameter,))
    if maximum is not None and value > maximum:
        raise ConfigError(f"{parameter} must be an integer in {minimum}..{maximum:,} (the "
                          f"memory a study needs grows with it); got {value!r}",
                          parameters=(parameter,))
