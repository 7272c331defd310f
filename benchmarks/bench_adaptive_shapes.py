"""Adaptive against static micro-benchmarks, method x size x benchmark shape (issue 39).

For each shape, one `mdad run` study with the static methods the issue names and the
adaptive ones, at 10, 25, 50 and 100 items: GPQA with its 420 real models and 50 runs,
the synthetic shapes with 1,000 models and 20 runs (S = 300, seed 0 everywhere). Prints
per shape and size the seen and unseen first-crossing MDAD in points (`>x`: not reached
within x; `†`: few pairs behind it, as `mdad run` marks it; `none`: not measurable),
the target pairs behind each shape's MDADs, each method's item exposure
(`distinct_items`, `top_item_share`), and whether the best adaptive method's seen MDAD
is at most every static method's.

Each shape's studies live under --out/SHAPE/, one folder per study: the methods found
in them are read, not run again, and one new study runs the methods none of them has
(so a method added later costs only its own study; a study's runs, sources and
targets depend on its seed, not on its methods). Delete a folder to re-measure it.

Usage: python benchmarks/bench_adaptive_shapes.py [--shapes gpqa,synthetic:bbh]
       [--out benchmarks/out/adaptive-shapes] [--workers 0]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from math import inf
from pathlib import Path

import pandas as pd

from mdad.study.trust import flagged_mask, unmeasurable_mask

STATIC = ("random", "subtask-equal", "anchor-points", "tinybenchmarks-pirt",
          "tinybenchmarks-gpirt")
ADAPTIVE = ("adaptive", "adaptive-md", "adaptive-cv")
SIZES = (10, 25, 50, 100)
SHAPES = {  # shape -> the options of its study
    "gpqa": ("--runs", "50"),
    "synthetic:mmlu-pro": ("--models", "1000", "--runs", "20"),
    "synthetic:bbh": ("--models", "1000", "--runs", "20"),
    "synthetic:mmlu": ("--models", "1000", "--runs", "20"),
}


def study(shape: str, out: Path, workers: str) -> tuple[list[Path], float | None]:
    """The study folders of `shape` under `out`, running the methods none of them has;
    the seconds of that run (None when nothing ran)."""
    base = out / shape.replace(":", "-")
    # a study of the earlier layout (the shape's folder itself) counts too
    folders = sorted(p.parent for p in [*base.glob("mdad.csv"), *base.glob("*/mdad.csv")])
    done: set[str] = set()
    for folder in folders:
        methods = set(pd.read_csv(folder / "mdad.csv")["method"])
        if methods & done:
            sys.exit(f"{folder}: methods {sorted(methods & done)} are in another study of "
                     f"{shape} too; delete one")
        done |= methods
    missing = [m for m in STATIC + ADAPTIVE if m not in done]
    if not missing:
        return folders, None
    folder = next(base / f"study-{k}" for k in range(1, 10**6)
                  if not (base / f"study-{k}").exists())  # never a crashed one's name
    base.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mdad", "run", shape, *SHAPES[shape],
                    "--methods", ",".join(missing),
                    "--sizes", ",".join(map(str, SIZES)), "--workers", workers,
                    "--out", str(folder)], check=True)
    return [*folders, folder], time.perf_counter() - start


def cell(row: pd.Series) -> str:
    """A row's first-crossing MDAD as `mdad run` prints it, in points."""
    if row["unmeasurable"]:
        return "none"
    value = f"{100 * row['mdad']:.1f}" if row["reached"] else f">{100 * row['max_gap']:.1f}"
    return value + ("†" if row["flagged"] else "")


def table(shape: str, folders: list[Path]) -> list[str]:
    mdad = pd.concat([pd.read_csv(f / "mdad.csv") for f in folders], ignore_index=True)
    mdad = mdad.assign(flagged=flagged_mask(mdad), unmeasurable=unmeasurable_mask(mdad))
    pairs = mdad["pairs"]
    summary = pd.concat([pd.read_csv(f / "summary.csv") for f in folders]).set_index(
        ["method", "size"])
    lines = [f"\n{shape} ({', '.join(map(str, folders))})",
             f"each MDAD from {pairs.min():,} target pairs"
             + (f" to {pairs.max():,}" if pairs.max() > pairs.min() else "")
             + "; † few pairs behind the value (see the study's note)",
             f"{'method':22} {'size':>4} {'seen':>7} {'unseen':>7} {'distinct':>8} "
             f"{'top share':>9}"]
    wins = []
    for size in SIZES:
        rows = mdad[mdad["size"] == size]
        seen = rows[rows.split == "seen"].set_index("method")
        unseen = rows[rows.split == "unseen"].set_index("method")
        for method in STATIC + ADAPTIVE:
            if method not in seen.index:
                continue
            exposure = summary.loc[(method, size)]
            lines.append(f"{method:22} {size:>4} {cell(seen.loc[method]):>7} "
                         f"{cell(unseen.loc[method]):>7} {exposure.distinct_items:>8.1f} "
                         f"{exposure.top_item_share:>9.2f}")
        # an unreached MDAD is above every reached one, an unmeasurable one above all
        value = seen["mdad"].where(seen["reached"], 1.0 + seen["max_gap"])
        value = value.where(~seen["unmeasurable"], inf)
        best_adaptive = min((value[m] for m in ADAPTIVE if m in seen.index), default=inf)
        best_static = min((value[m] for m in STATIC if m in seen.index), default=inf)
        won = best_adaptive < inf and best_adaptive <= best_static
        wins.append(f"{size}: {'yes' if won else 'no'}")
    lines.append("best adaptive seen MDAD <= every static one: " + ", ".join(wins))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/adaptive-shapes"))
    parser.add_argument("--workers", default="0")
    args = parser.parse_args()
    for shape in args.shapes.split(","):
        if shape not in SHAPES:
            parser.error(f"--shapes: {shape!r} is not one of {', '.join(SHAPES)}")
        folders, seconds = study(shape, args.out, args.workers)
        print("\n".join(table(shape, folders)))
        if seconds is not None:
            print(f"({seconds:.0f} s)")


if __name__ == "__main__":
    main()
