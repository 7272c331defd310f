"""Figures and a self-contained HTML report of a finished study folder (`mdad run`).

The names below load on first use (PEP 562): importing a light submodule, e.g.
`mdad.report.style`, does not load matplotlib and pandas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mdad._lazy import lazy_exports

# public name -> the submodule that defines it
_EXPORTS = {
    "write_report": "mdad.report.html",
}

__all__ = ["write_report"]

if TYPE_CHECKING:
    from mdad.report.html import write_report


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
