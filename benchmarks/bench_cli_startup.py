"""Time the start of the `mdad` command against `python -c "import numpy, typer, rich"`,
measured in the same run (issue 13: `mdad --help` and `mdad methods` within 2x of it).

Each command runs in a fresh process, `--repeats` times after one warm-up run (which
fills the file cache); the best time counts, as the least disturbed by other work on
the machine. Prints the seconds and the ratio to the baseline, and exits with status 1
when a ratio exceeds `--limit` (2), so it can serve as a check. `mdad --version` is
timed as the floor of any command.

Usage: python benchmarks/bench_cli_startup.py [--repeats 7] [--limit 2]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

BASELINE = "import numpy, typer, rich"
COMMANDS = (("--help",), ("methods",), ("--version",))


def mdad_command() -> list[str]:
    """The installed `mdad` script next to this Python, else `python -m mdad`."""
    script = Path(sys.executable).with_name("mdad")
    if script.exists():
        return [str(script)]
    found = shutil.which("mdad")
    return [found] if found else [sys.executable, "-m", "mdad"]


def best_seconds(args: list[str], repeats: int) -> float:
    """The shortest wall time of `repeats` fresh runs of `args`, after one warm-up."""
    subprocess.run(args, check=True, capture_output=True)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(args, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--limit", type=float, default=2.0,
                        help="Largest ratio to the baseline that passes.")
    options = parser.parse_args()

    baseline = best_seconds([sys.executable, "-c", BASELINE], options.repeats)
    print(f"{'python -c ' + repr(BASELINE):<42} {baseline:7.3f} s   1.00x")
    mdad = mdad_command()
    slow = []
    for command in COMMANDS:
        seconds = best_seconds([*mdad, *command], options.repeats)
        ratio = seconds / baseline
        label = " ".join(["mdad", *command])
        print(f"{label:<42} {seconds:7.3f} s {ratio:6.2f}x")
        if ratio > options.limit:
            slow.append(f"{label} ({ratio:.2f}x)")
    print(f"best of {options.repeats} fresh processes each; limit {options.limit:g}x")
    if slow:
        print(f"over the limit: {', '.join(slow)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
