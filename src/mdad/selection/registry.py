"""One registry of selection methods: a new method is one file plus one decorator."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from mdad.errors import ConfigError
from mdad.selection.base import SelectionMethod

METHODS: dict[str, type] = {}
T = TypeVar("T", bound=type)


def register(name: str) -> Callable[[T], T]:
    """Class decorator adding a selection method under its CLI name."""

    def add(cls: T) -> T:
        if name in METHODS:
            raise ValueError(f"selection method {name!r} is registered twice")
        cls.name = name  # type: ignore[attr-defined]
        METHODS[name] = cls
        return cls

    return add


def get_method(name: str) -> SelectionMethod:
    """A new instance of the method registered as `name`, with default parameters."""
    try:
        return METHODS[name]()  # type: ignore[no-any-return]
    except KeyError:
        known = ", ".join(METHODS)
        raise ConfigError(f"unknown method {name!r}; choose from: {known}") from None
