"""Ways to run the variational fit's models x items work, compared on this machine: the
numpy fit before this version, numba (the one chosen, `mdad.irt._fused`), and torch on
the CPU. Each runs an epoch's products and pass (logits = theta @ a.T, the softplus
total, the residual y - sigmoid(logits), residual @ a and residual.T @ theta) in
float32 with one thread, at GPQA's shape (420 x 448) and at 300 x 7,000, against the
floor measured in the same process (the three products and one pass y - logits).

Also: each way's installed size, the seconds to import it in a fresh interpreter, and
its first-run cost (numba: compiling its kernels where no cache is; torch and numpy:
none).

torch is measured with another interpreter that has it (`--torch-python`), since it is
no dependency of mdad: e.g. `python -m venv /tmp/tv && /tmp/tv/bin/pip install
torch==2.13.0 numpy threadpoolctl`.

Usage: python benchmarks/bench_fit_backends.py [--torch-python /tmp/tv/bin/python]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SHAPES = ((420, 448), (300, 7000))

COMMON = r'''
import json, statistics, sys, time
import numpy as np
from threadpoolctl import threadpool_limits

def data(m, n, d=10):
    rng = np.random.default_rng(0)
    theta = (0.3 * rng.standard_normal((m, d))).astype(np.float32)
    a = (0.3 * rng.standard_normal((n, d))).astype(np.float32)
    y = (rng.random((m, n)) < 0.4).astype(np.float32)
    return theta, a, y

def timed(step, repeats=15, inner=20):
    step()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            step()
        times.append((time.perf_counter() - start) / inner)
    return statistics.median(times)

def floor(theta, a, y):
    logits, residual = np.empty_like(y), np.empty_like(y)
    d_theta, d_a = np.empty_like(theta), np.empty_like(a)
    def step():
        np.matmul(theta, a.T, out=logits)
        np.subtract(y, logits, out=residual)
        np.matmul(residual, a, out=d_theta)
        np.matmul(residual.T, theta, out=d_a)
    return timed(step)
'''

NUMPY = COMMON + r'''
def way(theta, a, y):
    logits, residual = np.empty_like(y), np.empty_like(y)
    def step():
        np.matmul(theta, a.T, out=logits)
        small = np.exp(-np.abs(logits))
        softplus = (np.log1p(small) + np.maximum(logits, 0)).sum(dtype=np.float64)
        np.subtract(y, np.where(logits >= 0, 1, small) / (1 + small), out=residual)
        products = (y * logits).sum(dtype=np.float64)
        return residual @ a, residual.T @ theta, softplus, products
    return timed(step)
'''

NUMBA = COMMON + r'''
from mdad.irt import _fused
def way(theta, a, y):
    m, n = y.shape
    ones = np.ones((m, 1), np.float32)
    theta1, a1 = np.hstack([theta, ones]), np.hstack([a, np.zeros((n, 1), np.float32)])
    residual = np.empty_like(y)
    answers = y.astype(np.uint8)
    powers, bits = np.empty(n, np.float32), np.empty(n, np.int32)
    d_theta, d_a = np.empty_like(theta), np.empty_like(a1)
    def step():
        np.matmul(theta1, a1.T, out=residual)
        totals = _fused.residual_pass(residual, answers, powers, bits)
        np.matmul(residual, a1[:, :-1], out=d_theta)
        np.matmul(residual.T, theta1, out=d_a)
        return totals
    return timed(step)
'''

TORCH = COMMON + r'''
import torch
torch.set_num_threads(1)
def way(theta, a, y):
    theta, a, y = (torch.from_numpy(x) for x in (theta, a, y))
    def step():
        with torch.no_grad():
            logits = theta @ a.T
            softplus = torch.nn.functional.softplus(logits).sum(dtype=torch.float64)
            residual = y - torch.sigmoid(logits)
            products = (y * logits).sum(dtype=torch.float64)
            return residual @ a, residual.T @ theta, softplus, products
    return timed(step)
'''

MAIN = r'''
out = {}
with threadpool_limits(1):
    for m, n in SHAPES:
        theta, a, y = data(m, n)
        out[f"{m}x{n}"] = {"floor": floor(theta, a, y), "way": way(theta, a, y)}
print(json.dumps(out))
'''


def measure(python: str, code: str, env: dict[str, str] | None = None) -> dict:
    program = code + f"\nSHAPES = {SHAPES!r}\n" + MAIN
    done = subprocess.run([python, "-c", program], capture_output=True, text=True,
                          env={**os.environ, "OPENBLAS_NUM_THREADS": "1", **(env or {})},
                          check=True)
    return json.loads(done.stdout.splitlines()[-1])


def import_seconds(python: str, statement: str, env: dict[str, str] | None = None) -> float:
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, **(env or {})})
    return float(done.stdout.split()[-1])


def installed_mb(python: str, packages: tuple[str, ...]) -> float:
    code = ("import importlib.util, os, sys\n"
            "total = 0\n"
            f"for name in {packages!r}:\n"
            "    spec = importlib.util.find_spec(name)\n"
            "    folder = os.path.dirname(spec.origin)\n"
            "    for root, _, files in os.walk(folder):\n"
            "        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)\n"
            "print(total / 1e6)")
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--torch-python", help="an interpreter with torch installed")
    args = parser.parse_args()
    here = sys.executable
    rows = [("numpy (the fit before)", measure(here, NUMPY), 0.0,
             import_seconds(here, "import numpy"), 0.0)]
    with tempfile.TemporaryDirectory() as empty:
        cold = {"NUMBA_CACHE_DIR": empty}
        first = import_seconds(here, "from mdad.irt import _fused; import numpy as np; "
                               "_fused.residual_pass(np.zeros((2, 2), np.float32), "
                               "np.zeros((2, 2), np.uint8), np.zeros(2, np.float32), "
                               "np.zeros(2, np.int32))", cold)
        rows.append(("numba (chosen)", measure(here, NUMBA),
                     installed_mb(here, ("numba", "llvmlite")),
                     import_seconds(here, "import numba"), first))
    if args.torch_python:
        rows.append(("torch 2.13, CPU", measure(args.torch_python, TORCH),
                     installed_mb(args.torch_python, ("torch",)),
                     import_seconds(args.torch_python, "import torch"), 0.0))
    shapes = [f"{m}x{n}" for m, n in SHAPES]
    print("one thread; ms per epoch's products and pass (x the floor); installed MB; "
          "import s; first-run s")
    print(f"{'way':24s} " + " ".join(f"{s:>20s}" for s in shapes)
          + "  installed   import  first run")
    for name, times, size, imported, first in rows:
        cells = " ".join(
            f"{1e3 * times[s]['way']:8.3f} ({times[s]['way'] / times[s]['floor']:4.2f}x)"
            .rjust(20) for s in shapes)
        print(f"{name:24s} {cells} {size:9.0f} {imported:8.2f} {first:9.2f}")
    print("floor, ms: " + ", ".join(f"{s} {1e3 * rows[0][1][s]['floor']:.3f}" for s in shapes))
    print(f"(python {Path(here).name}, {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
