"""Does the micro-benchmark `select` writes err as the ones its belt is fitted on?

Reads `bench_roundtrip.py --rows` files (FOLDER/METHOD.npz) and prints, per decile
group and size, the mean over draws (a seed's fold) of: the written micro-benchmark's
mean error (estimate - truth) on that fold's held-out models of the group, minus the
mean error of the belt's own held-out pairs (`RoundTrip.belts`) whose accuracies lie in
the same range; in points, with its standard error over the draws. Positive: the
written micro-benchmark reads those models higher than its belt expects, so their
intervals sit too high.

Usage: python benchmarks/belt_mismatch.py rows-s5/tinybenchmarks-pirt.npz ...
"""

from __future__ import annotations

import argparse

import numpy as np

from mdad.practice.roundtrip import GROUPS


def shifts(path: str) -> dict[tuple[int, int], list[float]]:
    """(group, size) -> the shift of each draw of one rows file, in points."""
    with np.load(path) as npz:
        rows = {key: npz[key] for key in npz.files}
    offsets = rows["belt_offsets"]
    error = rows["estimate"] - rows["truth"]
    out: dict[tuple[int, int], list[float]] = {}
    for b, (seed, fold, size) in enumerate(zip(rows["belt_seed"], rows["belt_fold"],
                                               rows["belt_size"], strict=True)):
        cv_truth = rows["belt_cv_truth"][offsets[b]:offsets[b + 1]]
        cv_error = rows["belt_cv_estimate"][offsets[b]:offsets[b + 1]] - cv_truth
        draw = (rows["seed"] == seed) & (rows["fold"] == fold) & (rows["size"] == size)
        for group in range(len(GROUPS)):
            held = draw & (rows["group"] == group)
            if not held.any():
                continue
            truth = rows["truth"][held]
            alike = (cv_truth >= truth.min()) & (cv_truth <= truth.max())
            if alike.any():
                out.setdefault((group, int(size)), []).append(
                    100 * (error[held].mean() - cv_error[alike].mean()))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", nargs="+", help="bench_roundtrip.py --rows files")
    pooled: dict[tuple[int, int], list[float]] = {}
    for path in parser.parse_args().rows:
        try:
            for key, values in shifts(path).items():
                pooled.setdefault(key, []).extend(values)
        except (OSError, ValueError, KeyError, IndexError) as error:
            raise SystemExit(f"{path}: not a bench_roundtrip.py --rows file ({error})") from None
    print(f"{'group':14} {'size':>4} {'shift':>6} {'s.e.':>5} {'draws':>5}")
    for (group, size), values in sorted(pooled.items()):
        v = np.array(values)
        se = v.std(ddof=1) / np.sqrt(v.size) if v.size > 1 else float("nan")
        print(f"{GROUPS[group]:14} {size:>4} {v.mean():>+6.2f} {se:>5.2f} {v.size:>5}")
    print("(points: the written micro-benchmark's mean error minus its belt's pairs' of "
          "the same accuracies, averaged over draws)")


if __name__ == "__main__":
    main()
