"""The installed package's version, read when first asked: importlib.metadata is slow
to import, and most commands never need it."""

from __future__ import annotations

from functools import cache


@cache
def version() -> str:
    """The installed distribution's version, or "0.0.0+unknown" from a bare source tree."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("mdad")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0.0.0+unknown"
