"""Whether numpy's huge-page advice costs time here: Anchor Points' grid cells on
`synthetic:mmlu` (7,011 items: distance matrices of 390 MB), one worker, with
`NUMPY_MADVISE_HUGEPAGE=1` (numpy's default) and `=0` (what `mdad` sets unless the user
did), alternated `--repeats` times in fresh processes. Prints wall, user and system
seconds of each, and the kernel's transparent-huge-page settings, which decide it: with
defrag "madvise", a first touch of advised memory may wait for the kernel to compact
memory.

Usage: python benchmarks/bench_hugepages.py [--repeats 2]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMAND = ("run", "synthetic:mmlu", "--methods", "anchor-points", "--runs", "1",
           "--sources", "10,100,300", "--sizes", "10,100,1000", "--workers", "1")


def timed(advice: str) -> tuple[float, float, float]:
    """(wall, user, system) seconds of the command with NUMPY_MADVISE_HUGEPAGE=advice."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "mdad", *COMMAND, "--out",
                        str(Path(folder) / "run")], check=True, capture_output=True,
                       env={**os.environ, "NUMPY_MADVISE_HUGEPAGE": advice})
        wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    for name in ("enabled", "defrag"):
        setting = Path(f"/sys/kernel/mm/transparent_hugepage/{name}")
        if setting.exists():
            print(f"transparent huge pages, {name}: {setting.read_text().strip()}")
    print("mdad " + " ".join(COMMAND))
    for _ in range(args.repeats):
        for advice in ("1", "0"):
            wall, user, system = timed(advice)
            print(f"  NUMPY_MADVISE_HUGEPAGE={advice}: {wall:6.2f} s wall, {user:6.2f} s "
                  f"user, {system:6.2f} s system")


if __name__ == "__main__":
    main()
