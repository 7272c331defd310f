"""The paper's whole grid, timed: 7 source-model counts (10 to 300), the paper's six
methods, 7 sizes (10 to 1,000, those the seen pool holds), on `synthetic:mmlu`,
`synthetic:mmlu-pro`, `synthetic:bbh` (420 models each) and real GPQA.

For each benchmark it runs `--runs` runs of the grid (default 2), in fresh processes,
with the default backend (two workers on this machine), and extrapolates to 50 runs:
the cells' time grows with the runs, the metrics and loading do not. It prints each
method's share of the CPU, the peak memory of the whole process tree, and the total
against one hour. Peak memory is the largest sum of the resident sets of the run's
process tree, sampled every 0.2 s (an upper bound: pages shared between processes count
once per process).

`--fast` runs each benchmark twice, the exact methods and then `mdad run --fast` (each
method's documented approximation where it has one), and prints both totals and their
ratio, measured in the same run.

`--scaling gpqa` instead times that benchmark's grid on a local Dask cluster with 1 and
2 workers (`--backend dask --workers N`) and prints the speed-up per added worker.

Usage: python benchmarks/bench_paper_grid.py [--runs 2] [--benchmarks gpqa,synthetic:bbh]
                                             [--methods random,tinybenchmarks-map] [--fast]
       python benchmarks/bench_paper_grid.py --scaling gpqa --runs 4
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

GRID_SOURCES = "10,50,100,150,200,250,300"
GRID_SIZES = "10,25,50,100,250,500,1000"
BENCHMARKS = ("synthetic:mmlu", "synthetic:mmlu-pro", "synthetic:bbh", "gpqa")
TARGET_RUNS = 50


def tree_rss(pid: int) -> int:
    """Resident bytes of process `pid` and all its descendants."""
    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    total = 0
    for process in processes:
        try:
            total += process.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


def measure(benchmark: str, runs: int, extra: tuple[str, ...] = ()) -> dict:
    """One `mdad run` of the grid in a fresh process: wall time, the cells' time, the
    CPU of each method (from config.json) and the process tree's peak memory."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "study"
        command = [sys.executable, "-m", "mdad", "run", benchmark, "--runs", str(runs),
                   "--sources", GRID_SOURCES, "--out", str(out), *extra]
        if benchmark != "gpqa":  # GPQA's own grid is 10 to 200 (its seen pool: 224)
            command += ["--sizes", GRID_SIZES]
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
        peak = 0

        def sample() -> None:
            nonlocal peak
            while proc.poll() is None:
                peak = max(peak, tree_rss(proc.pid))
                time.sleep(0.2)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, stderr = proc.communicate()
        wall = time.perf_counter() - start
        sampler.join()
        if proc.returncode != 0:
            raise SystemExit(f"{benchmark}: {stderr.strip().splitlines()[-1]}")
        timing = json.loads((out / "config.json").read_text())["timing"]
    return {"wall": wall, "cells": timing["cells_seconds"], "cpu": timing["method_cpu_seconds"],
            "workers": timing["workers"], "peak_mb": peak / 2**20}


def scaling(benchmark: str, runs: int, extra: tuple[str, ...]) -> None:
    """The grid on a local Dask cluster with 1 and 2 workers."""
    walls = {}
    for workers in (1, 2):
        m = measure(benchmark, runs, (*extra, "--backend", "dask", "--workers", str(workers)))
        walls[workers] = m["wall"]
        print(f"{benchmark}, {runs} runs, dask, {workers} worker(s): {m['wall']:.1f} s "
              f"(cells {m['cells']:.1f} s), peak memory {m['peak_mb']:,.0f} MB")
    print(f"speed-up of the second worker: {walls[1] / walls[2]:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--benchmarks", default=",".join(BENCHMARKS))
    parser.add_argument("--methods", help="another method list (default: the paper's six)")
    parser.add_argument("--fast", action="store_true",
                        help="also time `mdad run --fast` and compare it with the exact grid")
    parser.add_argument("--scaling", metavar="BENCHMARK",
                        help="time BENCHMARK's grid on a local Dask cluster, 1 and 2 workers")
    args = parser.parse_args()
    extra = ("--methods", args.methods) if args.methods else ()
    if args.scaling:
        scaling(args.scaling, args.runs, extra)
        return
    variants = {"exact": extra, **({"fast": (*extra, "--fast")} if args.fast else {})}
    total = dict.fromkeys(variants, 0.0)
    cpu_by_method: dict[str, dict[str, float]] = {name: {} for name in variants}
    for benchmark in args.benchmarks.split(","):
        for variant, options in variants.items():
            m = measure(benchmark, args.runs, options)
            fixed = m["wall"] - m["cells"]
            projected = fixed + m["cells"] * TARGET_RUNS / args.runs
            total[variant] += projected
            for method, seconds in m["cpu"].items():
                shares = cpu_by_method[variant]
                shares[method] = shares.get(method, 0.0) + seconds
            print(f"{benchmark}{' --fast' if variant == 'fast' else ''}: {args.runs} runs in "
                  f"{m['wall']:.0f} s (cells {m['cells']:.0f} s, {m['workers']} workers), "
                  f"projected {TARGET_RUNS} runs: {projected / 60:.1f} min; peak memory "
                  f"{m['peak_mb']:,.0f} MB; CPU shares: {_shares(m['cpu'])}")
    for variant in variants:
        print(f"whole grid, {variant}, {TARGET_RUNS} runs: {total[variant] / 3600:.2f} h "
              f"(goal <= 1 h); CPU shares: {_shares(cpu_by_method[variant])}")
    if args.fast:
        print(f"--fast against exact, same run: {total['fast'] / total['exact']:.2f} of the time")


def _shares(cpu: dict[str, float]) -> str:
    whole = sum(cpu.values()) or 1.0
    return ", ".join(f"{name} {100 * s / whole:.0f}%"
                     for name, s in sorted(cpu.items(), key=lambda kv: -kv[1]))


if __name__ == "__main__":
    main()
