"""Figures and a self-contained HTML report of a finished study folder (`mdad run`).

The names below load on first use (PEP 562): importing a light submodule, e.g.
`mdad.report.style`, does not load matplotlib and pandas.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# public name -> the submodule that defines it
_EXPORTS = {
    "write_report": "mdad.report.html",
}

__all__ = ["write_report"]

if TYPE_CHECKING:
    from mdad.report.html import write_report


def __getattr__(name: str) -> object:
    try:
        module = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
