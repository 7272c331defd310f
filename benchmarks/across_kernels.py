"""How far a study's numbers move between two machines: the same `mdad run` under two
OpenBLAS kernels (OPENBLAS_CORETYPE stands in for two CPUs; numpy's and scipy's
OpenBLAS both read it), compared per method.

Prints, per method, how many target estimates differ (and by how much at most), the
largest move of a first-crossing and of a smooth MDAD, and how many smooth MDADs of
the second kernel fall outside the first's 95% interval.

Usage: python benchmarks/across_kernels.py [gpqa] [--methods all] [--runs 50]
       [--kernels Haswell,SkylakeX]
       python benchmarks/across_kernels.py --folders STUDY_A,STUDY_B
(SkylakeX needs a CPU with AVX-512; Sandybridge and Haswell run on most x86 ones.)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from math import inf
from pathlib import Path

import pandas as pd


def study(dataset: str, methods: str, runs: int, kernel: str, out: Path) -> Path:
    folder = out / kernel
    subprocess.run([sys.executable, "-m", "mdad", "run", dataset, "--methods", methods,
                    "--runs", str(runs), "--out", str(folder)], check=True,
                   capture_output=True, env={**os.environ, "OPENBLAS_CORETYPE": kernel})
    return folder


def compare(a: Path, b: Path) -> list[str]:
    """Per method: estimates moved, largest move, largest MDAD moves, smooth MDADs
    outside the first study's interval."""
    keys = ["run", "method", "size", "n_sources", "model"]
    estimates = pd.read_parquet(a / "results.parquet").merge(
        pd.read_parquet(b / "results.parquet"), on=keys)
    rows = ["method", "size", "sources", "split"]
    mdad = pd.read_csv(a / "mdad.csv").merge(pd.read_csv(b / "mdad.csv"), on=rows)
    estimates["move"] = (estimates.estimate_x - estimates.estimate_y).abs()
    mdad["first"] = (mdad.mdad_x - mdad.mdad_y).abs()
    mdad["smooth"] = (mdad.mdad_smooth_x - mdad.mdad_smooth_y).abs()
    # an interval end that was never reached is NaN: unbounded
    inside = mdad.mdad_smooth_y.between(mdad.mdad_smooth_low_x.fillna(-inf),
                                        mdad.mdad_smooth_high_x.fillna(inf))
    same = (mdad.mdad_smooth_x == mdad.mdad_smooth_y) | (
        mdad.mdad_smooth_x.isna() & mdad.mdad_smooth_y.isna())
    mdad["outside"] = ~(inside | same)
    lines = [f"{'method':24} {'estimates moved':>16} {'largest':>8} {'first MDAD':>10} "
             f"{'smooth':>7} {'smooth outside CI':>17}"]
    for method, group in estimates.groupby("method", sort=False):
        of = mdad[mdad.method == method]
        moved = int((group.move > 1e-12).sum())
        lines.append(f"{method:24} {f'{moved:,} of {len(group):,}':>16} "
                     f"{100 * group.move.max():>8.2g} {100 * of['first'].max():>10.1f} "
                     f"{100 * of.smooth.max():>7.1f} "
                     f"{f'{int(of.outside.sum())} of {len(of)}':>17}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?", default="gpqa")
    parser.add_argument("--methods", default="all")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--kernels", default="Haswell,SkylakeX")
    parser.add_argument("--folders", help="compare these two study folders (A,B) instead")
    args = parser.parse_args()
    if args.folders:
        a, b = map(Path, args.folders.split(","))
        print(f"{a} against {b}")
        print("\n".join(compare(a, b)))
        return
    first, second = args.kernels.split(",")
    print(f"{args.dataset}, {args.runs} runs, OpenBLAS kernels {first} and {second} "
          "(moves and MDADs in accuracy points)")
    with tempfile.TemporaryDirectory() as tmp:
        a, b = (study(args.dataset, args.methods, args.runs, k, Path(tmp))
                for k in (first, second))
        print("\n".join(compare(a, b)))


if __name__ == "__main__":
    main()
