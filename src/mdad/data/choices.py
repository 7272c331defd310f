"""The load options that are choices among names, apart from the loaders that act
on them so that the CLI can offer them without loading numpy's users."""

from __future__ import annotations

from enum import StrEnum

from mdad.errors import refuse_choice


class MissingPolicy(StrEnum):
    """How to make a matrix complete. Missing cells are never read as wrong."""

    DROP_ITEMS = "drop-items"
    DROP_MODELS = "drop-models"
    ERROR = "error"

    @classmethod
    def _missing_(cls, value: object) -> None:
        refuse_choice(cls, value, "missing")


class Orientation(StrEnum):
    """Which way round a wide CSV is."""

    AUTO = "auto"
    ITEMS_AS_ROWS = "items-as-rows"
    MODELS_AS_ROWS = "models-as-rows"

    @classmethod
    def _missing_(cls, value: object) -> None:
        refuse_choice(cls, value, "orientation")

