"""What the adaptive methods add to `mdad run gpqa --methods all` (50 runs, GPQA's five
sizes, S = 300; goal: at most 10 s on this 2-core machine).

Runs the whole command twice, back to back, in fresh processes: with every method, and
with every method but the adaptive ones; prints both wall times, the difference, and
each adaptive method's CPU seconds from config.json. With `--against SRC` (another
checkout's `src` folder, e.g. a `git worktree` of an earlier commit) it also runs the
adaptive methods alone under this code and under that one, interleaved, and prints
their CPU seconds side by side: a baseline measured in the same run. It also prints
how fast numpy's float64 exp and tanh are here (without AVX-512 they are not
vectorised: the adaptive methods slow down more than the others).

Usage: python benchmarks/bench_adaptive.py [--repeats 1] [--against SRC]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

import numpy as np

from mdad.selection import METHODS


def timed_run(methods: list[str], source: str | None = None) -> tuple[float, dict]:
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = source
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "study"
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "mdad", "run", "gpqa", "--methods",
                        ",".join(methods), "--out", str(out)], check=True,
                       capture_output=True, env=env)
        seconds = time.perf_counter() - start
        return seconds, json.loads((out / "config.json").read_text())["timing"]


def transcendentals() -> str:
    """ns per value of numpy's float64 exp and tanh on 11,200 values, and whether numpy
    sees AVX-512 here."""
    x = np.random.default_rng(0).normal(size=(50, 224))
    ns = {name: min(timeit.repeat(lambda f=f: f(x), number=200, repeat=5)) / 200 / x.size * 1e9
          for name, f in (("exp", np.exp), ("tanh", np.tanh))}
    features = np._core._multiarray_umath.__cpu_features__
    return (f"numpy float64 exp {ns['exp']:.1f} ns a value, tanh {ns['tanh']:.1f}; "
            f"AVX-512 {'yes' if features.get('AVX512F') else 'no'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--against", help="another checkout's src folder: its adaptive "
                        "methods are timed beside these")
    args = parser.parse_args()
    print(transcendentals())
    every = list(METHODS)
    adaptive = [name for name in every if not METHODS[name].static]
    others = [name for name in every if METHODS[name].static]
    with_adaptive, without, alone, baseline = [], [], [], []
    for _ in range(args.repeats):  # interleaved, so load changes hit both alike
        seconds, timing = timed_run(every)
        with_adaptive.append(seconds)
        without.append(timed_run(others)[0])
        if args.against:
            alone.append(timed_run(adaptive)[1]["method_cpu_seconds"])
            baseline.append(timed_run(adaptive, args.against)[1]["method_cpu_seconds"])
    best_with, best_without = min(with_adaptive), min(without)
    print(f"--methods all: {best_with:.1f} s; without {', '.join(adaptive)}: "
          f"{best_without:.1f} s; added {best_with - best_without:.1f} s (goal <= 10 s)")
    cpu = timing["method_cpu_seconds"]
    print("adaptive CPU seconds (over both workers): "
          + ", ".join(f"{name} {cpu[name]:.1f}" for name in adaptive))
    if args.against:
        print(f"the adaptive methods alone, CPU seconds (best of {args.repeats}), this code "
              f"against {args.against}:")
        for name in adaptive:
            new = min(run[name] for run in alone)
            old = min(run[name] for run in baseline)
            print(f"  {name}: {new:.1f} against {old:.1f} ({old / new:.2f} times as fast)")


if __name__ == "__main__":
    main()
