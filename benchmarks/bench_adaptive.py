"""What the adaptive methods add to `mdad run gpqa --methods all` (50 runs, GPQA's five
sizes, S = 300; goal: at most 10 s on this 2-core machine).

Runs the whole command twice, back to back, in fresh processes: with every method, and
with every method but the adaptive ones; prints both wall times, the difference, and
each adaptive method's CPU seconds from config.json.

Usage: python benchmarks/bench_adaptive.py [--repeats 1]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mdad.selection import METHODS


def timed_run(methods: list[str]) -> tuple[float, dict]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "study"
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "mdad", "run", "gpqa", "--methods",
                        ",".join(methods), "--out", str(out)], check=True,
                       capture_output=True)
        seconds = time.perf_counter() - start
        return seconds, json.loads((out / "config.json").read_text())["timing"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    repeats = parser.parse_args().repeats
    every = list(METHODS)
    adaptive = [name for name in every if not METHODS[name].static]
    others = [name for name in every if METHODS[name].static]
    with_adaptive, without = [], []
    for _ in range(repeats):  # interleaved, so load changes hit both alike
        seconds, timing = timed_run(every)
        with_adaptive.append(seconds)
        without.append(timed_run(others)[0])
    best_with, best_without = min(with_adaptive), min(without)
    print(f"--methods all: {best_with:.1f} s; without {', '.join(adaptive)}: "
          f"{best_without:.1f} s; added {best_with - best_without:.1f} s (goal <= 10 s)")
    cpu = timing["method_cpu_seconds"]
    print("adaptive CPU seconds (over both workers): "
          + ", ".join(f"{name} {cpu[name]:.1f}" for name in adaptive))


if __name__ == "__main__":
    main()
