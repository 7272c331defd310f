"""Round trips on held-out models: coverage of `estimate`'s 95% intervals in the bottom
decile, the middle and the top decile, mean interval width, and the share of listed
verdicts that are wrong, per method x size (`mdad.practice.roundtrip`).

Each row: the dataset's models in 5 folds by model, for each seed; each fold's
micro-benchmark is selected from the other models and every held-out model is
estimated from its real answers. `--split top` selects from the models outside the
top decile and estimates the top decile (new models beyond the reference set);
`--split bottom` the same below.

Usage:
  python benchmarks/bench_roundtrip.py gpqa --methods random,anchor-points \\
      --sizes 10,25,50,100 --seeds 0,1,2,3 [--split folds] [--json out.json] \\
      [--rows FOLDER]

`--rows` also writes FOLDER/METHOD.npz: every held-out row (`RoundTrip`'s arrays) and
each fold's belt inputs (`belt_*`: seed, fold, size, and the held-out pairs, cut at
`belt_offsets`), to try another interval on the same round trips without selecting
again.

The coverage tables of docs/explanation/intervals.md are this script's output (the
command each came from is printed under it).
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--methods", default="random,anchor-points,confidence-strata")
    parser.add_argument("--sizes", default="10,25,50,100")
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--split", default="folds")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--rows", type=Path, default=None)
    args = parser.parse_args()

    from mdad.data import load_dataset
    from mdad.practice.roundtrip import round_trip
    from mdad.selection import method_class

    data = load_dataset(args.dataset)
    sizes = [int(s) for s in args.sizes.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    rows = []
    # tinyBenchmarks' MAP-fit variants share their pools' fits; no other method keeps
    # its pools (Anchor Points' hold n_items x n_items arrays)
    map_fits: dict = {}
    print_header()
    for method in args.methods.split(","):
        start = time.perf_counter()
        cache = map_fits if getattr(method_class(method), "irt_fit", None) == "map" else None
        trip = round_trip(data, method, sizes, seeds=seeds, split=args.split, cache=cache,
                          progress=lambda line: print(line, file=sys.stderr, flush=True))
        seconds = time.perf_counter() - start
        if args.rows is not None:
            save_rows(args.rows / f"{method}.npz", trip)
        for row in trip.summary():
            row["seconds"], row["seeds"] = seconds, seeds
            rows.append(row)
            print_row(row)
    print_footer()
    if args.json is not None:
        write_json(args.json, rows)


def write_json(path: Path, rows: list[dict]) -> None:
    """`rows` as indented JSON at `path`, written whole or not at all."""
    from mdad.safe_io import atomic_write

    atomic_write(path, (json.dumps(rows, indent=1) + "\n").encode())


def print_header() -> None:
    print(f"{'method':24} {'size':>4} {'est.':>5} {'bottom':>7} {'middle':>7} {'top':>7} "
          f"{'all':>6} {'width':>6} {'listed':>7} {'wrong':>6} {'notice':>6} {'s':>5}", flush=True)


def print_row(row: dict) -> None:
    """One line of the table: a `RoundTrip.summary()` row with its "seconds"."""
    from mdad.practice.roundtrip import GROUPS

    cells = [("-" if row[g] is None else f"{100 * row[g]:.1f}") for g in GROUPS]
    wrong = "-" if row["wrong share"] is None else f"{100 * row['wrong share']:.1f}"
    print(f"{row['method']:24} {row['size']:>4} {row['estimates']:>5} {cells[0]:>7} "
          f"{cells[1]:>7} {cells[2]:>7} {100 * row['coverage']:>6.1f} "
          f"{100 * row['width']:>6.1f} {row['listed']:>7} {wrong:>6} "
          f"{100 * row['notice']:>6.1f} {row['seconds']:>5.0f}", flush=True)


def print_footer() -> None:
    print(f"(coverage %, width in points, notice: % of estimates saying the model may lie "
          f"beyond the reference models; python {' '.join(sys.argv)})")


def save_rows(path: Path, trip) -> None:
    """`trip`'s rows and belt inputs in one .npz (see the module docstring)."""
    import numpy as np

    from mdad.safe_io import atomic_write

    belts = trip.belts
    arrays = {name: getattr(trip, name) for name in (
        "size", "seed", "fold", "model", "truth", "estimate", "low", "high", "listed",
        "wrong", "beyond", "group")}
    for key in ("seed", "fold", "size"):
        arrays[f"belt_{key}"] = np.array([b[key] for b in belts], dtype=np.int64)
    arrays["belt_offsets"] = np.cumsum([0] + [b["cv_truth"].size for b in belts])
    for key in ("cv_truth", "cv_estimate"):
        arrays[f"belt_{key}"] = np.concatenate([b[key] for b in belts] or [np.empty(0)])
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, buffer.getvalue())


if __name__ == "__main__":
    main()
