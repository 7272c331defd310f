"""Time tinyBenchmarks' variational IRT fit (`mdad.irt.variational.fit_variational`) on
GPQA, 420 models x 448 items, 10 dimensions, 2,000 epochs, one BLAS thread (as a study's
cells and `mdad select` run it), against the same fit at an earlier commit, loaded from
git and measured in the same run. Both must return the same bits: the fit feeds every
tinyBenchmarks number of a study.

Also fitted: a 5th-fold-sized pool (336 models, as `mdad select`'s cross-validation
fits) and a tiny one (7 x 5), whose time is the fit's per-epoch Python overhead.

Usage: python benchmarks/bench_variational.py [--baseline 7abfc20] [--repeats 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import numpy as np
from threadpoolctl import threadpool_limits

from mdad import load_dataset
from mdad.irt import variational

MODULE = "src/mdad/irt/variational.py"


def module_at(commit: str) -> ModuleType:
    """`mdad.irt.variational` as it was at `commit`."""
    root = Path(__file__).resolve().parent.parent
    shown = subprocess.run(["git", "show", f"{commit}:{MODULE}"], cwd=root,
                           capture_output=True, text=True)
    if shown.returncode != 0:
        sys.exit(f"--baseline {commit}: git cannot show {MODULE} there "
                 f"({shown.stderr.strip()}); give a commit of this clone's history")
    source = shown.stdout
    spec = importlib.util.spec_from_loader(f"variational_{commit}", loader=None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    exec(compile(source, f"{commit}:{MODULE}", "exec"), module.__dict__)
    return module


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", default="7abfc20")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=2000)
    args = parser.parse_args()
    correctness = load_dataset("gpqa").matrix.correctness.astype(float)
    fold = correctness[np.random.default_rng(0).permutation(correctness.shape[0])[:336]]
    tiny = correctness[:7, :5]
    versions = {"baseline": module_at(args.baseline), "now": variational}
    times: dict[tuple[str, str], list[float]] = {}
    fits: dict[tuple[str, str], object] = {}
    with threadpool_limits(1):
        for _ in range(args.repeats):  # interleaved, so load changes hit both alike
            for case, y in (("gpqa", correctness), ("fold", fold), ("tiny", tiny)):
                for name, module in versions.items():
                    start = time.perf_counter()
                    fit = module.fit_variational(y, 10, rng=np.random.default_rng(1),
                                                 epochs=args.epochs)
                    times.setdefault((case, name), []).append(time.perf_counter() - start)
                    fits[(case, name)] = fit
    print(f"{args.epochs} epochs, median of {args.repeats}, one BLAS thread "
          f"(baseline: {args.baseline})")
    for case in ("gpqa", "fold", "tiny"):
        base, now = (statistics.median(times[(case, name)]) for name in versions)
        old_fit, new_fit = fits[(case, "baseline")], fits[(case, "now")]
        same = all(np.array_equal(getattr(old_fit, key), getattr(new_fit, key))
                   for key in ("discrimination_", "difficulty_", "ability_", "best_loss"))
        print(f"  {case:5s} baseline {base:6.2f} s   now {now:6.2f} s   "
              f"ratio {now / base:.2f}   ({1e3 * now / args.epochs:.2f} ms/epoch)   "
              f"same bits: {same}")
        if not same:
            sys.exit(f"the fit of {case} changed")


if __name__ == "__main__":
    main()
