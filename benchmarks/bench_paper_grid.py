"""The paper's whole grid, timed: 7 source-model counts (10 to 300), the paper's six
methods, 7 sizes (10 to 1,000, those the seen pool holds), on `synthetic:mmlu`,
`synthetic:mmlu-pro`, `synthetic:bbh` (420 models each) and real GPQA.

For each benchmark it runs `--runs` runs of the grid (default 2), in fresh processes,
with the default backend (two workers on this machine), and extrapolates to 50 runs:
the cells' time grows with the runs, the metrics and loading do not. It prints each
method's share of the CPU, the peak memory of the whole process tree, and the total
against one hour.

Usage: python benchmarks/bench_paper_grid.py [--runs 2] [--benchmarks gpqa,synthetic:bbh]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GRID_SOURCES = "10,50,100,150,200,250,300"
GRID_SIZES = "10,25,50,100,250,500,1000"
BENCHMARKS = ("synthetic:mmlu", "synthetic:mmlu-pro", "synthetic:bbh", "gpqa")
TARGET_RUNS = 50


def measure(benchmark: str, runs: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "study"
        command = [sys.executable, "-m", "mdad", "run", benchmark, "--runs", str(runs),
                   "--sources", GRID_SOURCES, "--out", str(out)]
        if benchmark != "gpqa":  # GPQA's own grid is 10 to 200 (its seen pool: 224)
            command += ["--sizes", GRID_SIZES]
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        start = time.perf_counter()
        proc = subprocess.run(command, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"{benchmark}: {proc.stderr.strip().splitlines()[-1]}")
        peak = max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before)
        timing = json.loads((out / "config.json").read_text())["timing"]
    return {"wall": wall, "cells": timing["cells_seconds"], "cpu": timing["method_cpu_seconds"],
            "workers": timing["workers"], "peak_mb": peak / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--benchmarks", default=",".join(BENCHMARKS))
    args = parser.parse_args()
    total = 0.0
    cpu_by_method: dict[str, float] = {}
    for benchmark in args.benchmarks.split(","):
        m = measure(benchmark, args.runs)
        fixed = m["wall"] - m["cells"]
        projected = fixed + m["cells"] * TARGET_RUNS / args.runs
        total += projected
        for method, seconds in m["cpu"].items():
            cpu_by_method[method] = cpu_by_method.get(method, 0.0) + seconds
        shares = sorted(m["cpu"].items(), key=lambda kv: -kv[1])
        cpu = sum(m["cpu"].values()) or 1.0
        print(f"{benchmark}: {args.runs} runs in {m['wall']:.0f} s (cells {m['cells']:.0f} s, "
              f"{m['workers']} workers), projected {TARGET_RUNS} runs: {projected / 60:.1f} min; "
              f"peak memory (largest process) {m['peak_mb']:,.0f} MB; CPU shares: "
              + ", ".join(f"{name} {100 * s / cpu:.0f}%" for name, s in shares))
    cpu = sum(cpu_by_method.values()) or 1.0
    print(f"whole grid, {TARGET_RUNS} runs: {total / 3600:.2f} h (goal <= 1 h); CPU shares: "
          + ", ".join(f"{name} {100 * s / cpu:.0f}%" for name, s in
                      sorted(cpu_by_method.items(), key=lambda kv: -kv[1])))


if __name__ == "__main__":
    main()
