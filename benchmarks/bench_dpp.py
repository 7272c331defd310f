"""The diversity method's DPP draw: the chain-rule sampler (`diversity`) against the
blocked sampler (`diversity-fast`), on the diversity points of one `synthetic:mmlu`
seen pool (300 sources, half the items), one BLAS thread, alternating repeats; the
orthonormal basis (shared by both) is timed apart.

Usage: python benchmarks/bench_dpp.py [--sizes 250,500,1000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from mdad.data import load_dataset
from mdad.selection import diversity as dv
from mdad.selection.threads import one_thread


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="250,500,1000")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    matrix = load_dataset("synthetic:mmlu").matrix
    rng = np.random.default_rng(0)
    items = np.sort(rng.permutation(matrix.n_items)[: matrix.n_items // 2])
    confidence = np.asarray(matrix.gold_confidence(np.arange(300), items), dtype=np.float64)
    with one_thread([dv.Diversity]):
        points = dv.diversity_points(confidence, np.random.default_rng(1)).points
        for size in (int(s) for s in args.sizes.split(",")):
            started = time.perf_counter()
            basis, rank = dv._orthonormal_basis(points, size)
            basis_s = time.perf_counter() - started
            seconds = {"chain": [], "blocked": []}
            for repeat in range(args.repeats):
                for name, sampler in (("chain", dv.sample_projection_dpp),
                                      ("blocked", dv.sample_projection_dpp_blocked)):
                    started = time.perf_counter()
                    sampler(basis[:, :rank], np.random.default_rng(repeat))
                    seconds[name].append(time.perf_counter() - started)
            chain, blocked = (min(seconds[k]) for k in ("chain", "blocked"))
            print(f"{points.shape[0]} points, size {size} (rank {rank}): basis {basis_s:.2f} s; "
                  f"draw: chain {chain:.2f} s, blocked {blocked:.2f} s "
                  f"({chain / blocked:.1f}x; best of {args.repeats})")


if __name__ == "__main__":
    main()
