"""The load options that are choices among names, apart from the loaders that act
on them so that the CLI can offer them without loading numpy's users."""

from __future__ import annotations

from mdad.errors import Choice


class MissingPolicy(Choice):
    """How to make a matrix complete. Missing cells are never read as wrong."""

    DROP_ITEMS = "drop-items"
    DROP_MODELS = "drop-models"
    ERROR = "error"
    __option__ = "missing"


class Orientation(Choice):
    """Which way round a wide CSV is."""

    AUTO = "auto"
    ITEMS_AS_ROWS = "items-as-rows"
    MODELS_AS_ROWS = "models-as-rows"
    __option__ = "orientation"

