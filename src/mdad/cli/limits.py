"""The memory limit a command refuses to start under.

Under an address-space or data-segment limit (`ulimit -v`, `ulimit -d`), numpy's and
scipy's OpenBLAS, pyarrow and matplotlib fail inside their own native code as they load
or start threads: hangs that Ctrl-C cannot reach, aborts, crashes (measured:
docs/performance.md). Python cannot catch those, so a command checks the limit first.
"""

from __future__ import annotations

import math
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
    this process's address space, -v, and data segment, -d; none on Windows). Every
    limit below the need is named, with the command that raises its soft limit, or, when
    its hard limit is below the need too, that only a privileged process can raise it.
    The setting is read only where a limit is set.
    """
    limits = _process_limits() if limits is None else limits
    if all(soft is None for soft, _ in limits.values()):
        return None
    setting = os.environ.get(SETTING, "").strip()
    try:
        floor = float(setting) if setting else float(needs_mb)
    except ValueError:
        floor = float("nan")
    if not 0 <= floor < float("inf"):
        return (f"{SETTING}={setting!r} must be a number of MB, 0 or more (0: no floor); "
                "fix it or unset it")
    short = {flag: (soft, hard) for flag, (soft, hard) in limits.items()
             if soft is not None and soft < floor * _MIB}
    if not short:
        return None
    found = " and ".join(f"`ulimit {flag}` is {soft // _MIB} MB"
                         for flag, (soft, _) in short.items())
    fixes = []
    for flag, (_, hard) in short.items():
        if hard is None:
            fixes.append(f"ulimit -S {flag} unlimited")
        elif hard >= floor * _MIB:
            fixes.append(f"ulimit -S {flag} {hard // 1024}")
    blocked = [f"`ulimit {flag}`'s hard limit is {hard // _MIB} MB, which usually only the "
               "administrator can raise" for flag, (_, hard) in short.items()
               if hard is not None and hard < floor * _MIB]
    advice = "; ".join(([f"raise {'them' if len(fixes) > 1 else 'it'} ({'; '.join(fixes)})"]
                        if fixes else []) + blocked)
    return (f"this command needs a memory limit of at least {math.ceil(floor)} MB (below "
            "it the scientific libraries can hang or crash as they load), and here "
            f"{found}: {advice}; or set {SETTING}=0 to try anyway, then run it again")


def _process_limits() -> dict[str, tuple[int | None, int | None]]:
    try:
        import resource
    except ImportError:
        return {}

    def read(which: int) -> tuple[int | None, int | None]:
        soft, hard = resource.getrlimit(which)
        return (None if soft == resource.RLIM_INFINITY else soft,
                None if hard == resource.RLIM_INFINITY else hard)

    return {"-v": read(resource.RLIMIT_AS), "-d": read(resource.RLIMIT_DATA)}
