"""How the library compiles its numba kernels (`mdad.irt._fused`, `mdad.irt._map_pass`,
`mdad.selection._fasterpam`): without Python's lock, cached on disk where a cache can be
written.

Each kernel file states its own options: numba keys its disk cache on the kernel's
source file (its path, size and time), not on the options, so options kept here would
leave every cache compiled with the old ones in use after a change.

Imported only by a fit: numba takes half a second to import.
"""

from __future__ import annotations

from typing import Any

from numba import njit


def compiled(function, options: dict[str, Any]):
    """`function` compiled with `options`, without Python's lock, cached on disk when a
    cache can be written (numba refuses a cached function whose file no cache location
    can take: then it compiles each time)."""
    try:
        return njit(**options, cache=True, nogil=True)(function)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return njit(**options, nogil=True)(function)
