"""The load options that are choices among names, apart from the loaders that act
on them so that the CLI can offer them without loading numpy's users."""

from __future__ import annotations

from enum import StrEnum

from mdad.errors import ConfigError, did_you_mean


class MissingPolicy(StrEnum):
    """How to make a matrix complete. Missing cells are never read as wrong."""

    DROP_ITEMS = "drop-items"
    DROP_MODELS = "drop-models"
    ERROR = "error"

    @classmethod
    def _missing_(cls, value: object) -> None:
        _refuse(cls, value, "missing")


class Orientation(StrEnum):
    """Which way round a wide CSV is."""

    AUTO = "auto"
    ITEMS_AS_ROWS = "items-as-rows"
    MODELS_AS_ROWS = "models-as-rows"

    @classmethod
    def _missing_(cls, value: object) -> None:
        _refuse(cls, value, "orientation")


def _refuse(choices: type[StrEnum], value: object, parameter: str) -> None:
    """Raise for a `value` that is none of `choices`, naming the load option."""
    names = [choice.value for choice in choices]
    raise ConfigError(f"{parameter} must be one of {', '.join(names)}; got {value!r}"
                      f"{did_you_mean(str(value), names)}", parameters=(parameter,))
