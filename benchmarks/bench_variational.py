"""How far tinyBenchmarks' variational IRT fit (`mdad.irt.variational.fit_variational`)
is from its physical limit, measured in one run, one BLAS thread (as a study's cells and
`mdad select` run it):

- the floor: an epoch's unavoidable work, three float32 matrix products (theta @ a.T,
  residual @ a, residual.T @ theta) and one pass reading y and writing the residual;
- the fit's epoch, warm (compiled and cached), and its ratio to the floor;
- the fit as it was at `--baseline` (the numpy fit before the compiled pass), loaded
  from git, and the ratio to it;
- the first fit in a fresh process whose numba cache is empty (as on a fresh install,
  or every time where no cache can be written), against a warm one.

Shapes: GPQA (420 models x 448 items) and 300 x 7,000 (a synthetic MMLU-Pro-sized
fold), 10 dimensions.

Usage: python benchmarks/bench_variational.py [--baseline 017265f] [--epochs 1000]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

import numpy as np
from threadpoolctl import threadpool_limits

from mdad import load_dataset
from mdad.irt import variational

MODULE = "src/mdad/irt/variational.py"
ROOT = Path(__file__).resolve().parent.parent
FIRST_FIT = """
import time
started = time.perf_counter()
import numpy as np
from mdad.irt.variational import fit_variational
y = (np.random.default_rng(0).random((20, 30)) < 0.5).astype(float)
fit_variational(y, 10, rng=np.random.default_rng(0), epochs=2)
print(time.perf_counter() - started)
"""


def module_at(commit: str) -> ModuleType:
    """`mdad.irt.variational` as it was at `commit`."""
    shown = subprocess.run(["git", "show", f"{commit}:{MODULE}"], cwd=ROOT,
                           capture_output=True, text=True)
    if shown.returncode != 0:
        sys.exit(f"--baseline {commit}: git cannot show {MODULE} there "
                 f"({shown.stderr.strip()}); give a commit of this clone's history")
    spec = importlib.util.spec_from_loader(f"variational_{commit}", loader=None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    exec(compile(shown.stdout, f"{commit}:{MODULE}", "exec"), module.__dict__)
    return module


def floor_epoch(y: np.ndarray, dims: int, repeats: int) -> float:
    """Seconds of the floor's work for one epoch, the median of `repeats` runs of 50."""
    rng = np.random.default_rng(0)
    theta = rng.standard_normal((y.shape[0], dims)).astype(np.float32)
    a = rng.standard_normal((y.shape[1], dims)).astype(np.float32)
    logits, residual = np.empty_like(y), np.empty_like(y)
    d_theta, d_a = np.empty_like(theta), np.empty_like(a)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(50):
            np.matmul(theta, a.T, out=logits)
            np.subtract(y, logits, out=residual)
            np.matmul(residual, a, out=d_theta)
            np.matmul(residual.T, theta, out=d_a)
        times.append((time.perf_counter() - start) / 50)
    return statistics.median(times)


def fit_epoch(module: ModuleType, y: np.ndarray, dims: int, epochs: int,
              repeats: int) -> float:
    """Seconds per epoch of `module`'s fit, the median of `repeats` fits."""
    module.fit_variational(y[:8, :8], dims, rng=np.random.default_rng(0), epochs=2)  # warm
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        module.fit_variational(y, dims, rng=np.random.default_rng(1), epochs=epochs)
        times.append((time.perf_counter() - start) / epochs)
    return statistics.median(times)


def first_fit(cache: str | None) -> float:
    """Seconds from a fresh interpreter's start to its first (tiny) fit's end, with
    numba's cache in `cache` (None: where it is)."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = cache
    done = subprocess.run([sys.executable, "-c", FIRST_FIT], env=env, capture_output=True,
                          text=True, check=True)
    return float(done.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", default="017265f")
    parser.add_argument("--epochs", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    gpqa = load_dataset("gpqa").matrix.correctness.astype(np.float32)
    rng = np.random.default_rng(0)
    ability, difficulty = rng.standard_normal((300, 1)), rng.standard_normal((1, 7000))
    large = (rng.random((300, 7000)) < 1 / (1 + np.exp(difficulty - ability))
             ).astype(np.float32)
    baseline = module_at(args.baseline)
    print(f"one BLAS thread, {args.epochs} epochs, medians of {args.repeats}; "
          f"baseline {args.baseline}")
    with threadpool_limits(1):
        for name, y in (("420 x 448 (GPQA)", gpqa), ("300 x 7,000", large)):
            floor = floor_epoch(y, 10, 5 * args.repeats)
            now = fit_epoch(variational, y, 10, args.epochs, args.repeats)
            before = fit_epoch(baseline, y, 10, max(args.epochs // 4, 50), args.repeats)
            print(f"  {name:17s} floor {1e3 * floor:6.2f} ms   epoch {1e3 * now:6.2f} ms "
                  f"({now / floor:.2f}x the floor)   baseline {1e3 * before:6.2f} ms "
                  f"({before / now:.2f}x slower than now)")
    with tempfile.TemporaryDirectory() as empty:
        cold = first_fit(empty)
    warm = first_fit(None)
    print(f"  first fit in a fresh process: {cold:.2f} s with an empty numba cache "
          f"(a fresh install, or no cache writable), {warm:.2f} s warm: "
          f"+{cold - warm:.2f} s")


if __name__ == "__main__":
    main()
