"""The memory limit a command refuses to start under.

Under an address-space or data-segment limit (`ulimit -v`, `ulimit -d`), numpy's and
scipy's OpenBLAS, pyarrow and matplotlib fail inside their own native code as they load
or start threads: hangs that Ctrl-C cannot reach, aborts, crashes (measured:
docs/performance.md). Python cannot catch those, so a command checks the limit first.
"""

from __future__ import annotations

import os

MIN_MB = 1024
# `mdad methods`, which loads no data and no scipy: numpy's own OpenBLAS gave up at 100 MB
LIGHT_MIN_MB = 256
SETTING = "MDAD_MIN_ADDRESS_SPACE_MB"
_MIB = 2**20


def memory_floor_line(needs_mb: int = MIN_MB,
                      limits: dict[str, tuple[int | None, int | None]] | None = None
                      ) -> str | None:
    """The error line when a command that needs `needs_mb` MB (or the MB that
    MDAD_MIN_ADDRESS_SPACE_MB sets; 0: none) would start under a smaller limit, else None.

    `limits`: `ulimit` flag -> (soft, hard) limit in bytes, None for no limit (default:
    this process's address space, -v, and data segment, -d; none on Windows). The
    tightest soft limit is named; when its hard limit is smaller than the need too, the
    line says so (only a privileged process raises a hard limit).
    """
    setting = os.environ.get(SETTING, "").strip()
    try:
        floor = float(setting) if setting else float(needs_mb)
    except ValueError:
        floor = float("nan")
    if not 0 <= floor < float("inf"):
        return (f"{SETTING}={setting!r} must be a number of MB, 0 or more (0: no floor); "
                "fix it or unset it")
    limits = _process_limits() if limits is None else limits
    set_limits = [(soft, hard, flag) for flag, (soft, hard) in limits.items() if soft is not None]
    if not set_limits:
        return None
    soft, hard, flag = min(set_limits, key=lambda limit: limit[0])
    if soft >= floor * _MIB:
        return None
    need = f"{floor:.0f} MB"
    raise_it = (f"raise it (ulimit {flag} unlimited, or ulimit {flag} {floor * 1024:.0f})"
                if hard is None or hard >= floor * _MIB else
                f"its hard limit is {hard // _MIB} MB too, which usually only the "
                "administrator can raise")
    return (f"this command needs a memory limit of at least {need} (below it the "
            f"scientific libraries can hang or crash as they load), and `ulimit {flag}` "
            f"is {soft // _MIB} MB here: {raise_it}, or set {SETTING}=0 to try anyway, then "
            "run it again")


def _process_limits() -> dict[str, tuple[int | None, int | None]]:
    try:
        import resource
    except ImportError:
        return {}

    def read(which: int) -> tuple[int | None, int | None]:
        return tuple(None if v == resource.RLIM_INFINITY else v  # type: ignore[return-value]
                     for v in resource.getrlimit(which))

    return {"-v": read(resource.RLIMIT_AS), "-d": read(resource.RLIMIT_DATA)}
