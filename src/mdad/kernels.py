"""How the library compiles its numba kernels (`mdad.irt._fused`, `mdad.irt._map_pass`,
`mdad.selection._fasterpam`): options, and a disk cache where one can be written.

Imported only by a fit: numba takes half a second to import.
"""

from __future__ import annotations

from numba import njit

# No 'nnan' or 'ninf': the kernels' clamps rely on min and max seeing what they see.
# No 'nsz': with it, a kernel compiled in this process and the same kernel read back
# from numba's disk cache gave the variational fit different losses (1e-10), so a first
# run after an install chose other anchors than every later run (tests/test_fused.py).
FASTMATH = {"arcp", "contract", "afn", "reassoc"}
EXACT = {"boundscheck": False, "error_model": "numpy"}  # no fast-math: libm's own results
OPTIONS = {"fastmath": FASTMATH, **EXACT}


def compiled(function, options=None):
    """Compiled with `options` (default `OPTIONS`), without Python's lock, cached on disk
    when a cache can be written (numba refuses a cached function whose file no cache
    location can take: then it compiles each time)."""
    options = OPTIONS if options is None else options
    try:
        return njit(**options, cache=True, nogil=True)(function)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return njit(**options, nogil=True)(function)
