"""Several sizes selected at once (`select_microbenchmarks`, sharing each pool's work)
against one size at a time (`select_microbenchmark` per size), measured in the same run,
with the files checked equal.

Usage:
  python benchmarks/bench_select_sizes.py gpqa --methods anchor-points,tinybenchmarks-map \\
      --sizes 10,25,50,100 [--models 336]
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--methods", default="anchor-points,tinybenchmarks-map")
    parser.add_argument("--sizes", default="10,25,50,100")
    parser.add_argument("--models", type=int, default=None,
                        help="select from the first this many models (default all)")
    args = parser.parse_args()

    from mdad.data import load_dataset
    from mdad.practice.bundle import select_microbenchmark, select_microbenchmarks

    data = load_dataset(args.dataset)
    sizes = [int(s) for s in args.sizes.split(",")]
    models = None if args.models is None else list(range(args.models))
    for method in args.methods.split(","):
        select_microbenchmark(data, method, sizes[0], models=models)  # imports, caches
        start = time.perf_counter()
        alone = [select_microbenchmark(data, method, size, models=models) for size in sizes]
        one_at_a_time = time.perf_counter() - start
        start = time.perf_counter()
        together = select_microbenchmarks(data, method, sizes, models=models)
        at_once = time.perf_counter() - start
        same = all(a == b for a, b in zip(alone, together, strict=True))
        print(f"{args.dataset} {method} sizes {args.sizes}: one at a time {one_at_a_time:.1f} s, "
              f"at once {at_once:.1f} s ({one_at_a_time / at_once:.1f}x), same files: {same}",
              flush=True)


if __name__ == "__main__":
    main()
