"""Time the full GPQA study: `mdad run gpqa --methods all` (10 methods, S = 300, 50 runs,
5 sizes, 1,000 bootstrap resamples, MDAD included), with 1 and with 2 worker processes,
each method's share of the compute time, and baselines measured in the same run.

Baselines (the reference code's way of computing, on the same data):
- the MDAD step as Python loops over pairs and bootstrap resamples
  (tests/reference_impl.py), timed on 2 groups and scaled to all of them;
- the slow per-item reference implementations of Anchor Points, the predictor,
  confidence strata and the DPP (tests/reference_methods.py, tests/reference_dpp.py),
  timed on a few cells and scaled to 50 runs x 5 sizes.
The paper's py-irt fits (2,000 epochs of SVI per run) cannot run here; see
benchmarks/bench_irt.py for the IRT comparison.

Usage: python benchmarks/bench_full_study.py [--workers 1,2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

SIZES = (10, 25, 50, 100, 200)
N_RUNS = 50


def run_command(workers: int) -> tuple[float, dict]:
    mdad = str(Path(sys.executable).parent / "mdad")
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        subprocess.run([mdad, "run", "gpqa", "--methods", "all", "--workers", str(workers),
                        "--out", f"{tmp}/run"], check=True, capture_output=True)
        elapsed = time.perf_counter() - start
        config = json.loads(Path(f"{tmp}/run/config.json").read_text())
    return elapsed, config


def reference_method_seconds() -> dict[str, float]:
    """Seconds the slow references need for 50 runs x 5 sizes, from 2 cells each."""
    import reference_dpp as refd
    import reference_methods as refm

    from mdad.data import load_dataset
    from mdad.study import StudyConfig, plan_study
    from mdad.study.cells import draw_design, seen_pool

    data = load_dataset("gpqa")
    plan = plan_study(data.matrix, StudyConfig(methods=("random",)),
                      default_sizes=data.spec.sizes)
    design = draw_design(data.matrix, plan, 0)
    pool = seen_pool(data.matrix, design, 300, seed=0)
    conf = np.asarray(pool.confidence, dtype=np.float64)
    targets = data.matrix.correctness[design.targets][:, design.seen].astype(np.float64)
    rng = np.random.default_rng(0)
    jobs = {
        "anchor-points": lambda n: refm.ref_anchor_points(conf, n, 0),
        "anchor-points-predictor": lambda n: refm.ref_anchor_predictor(conf, targets, n, 0),
        "confidence-strata": lambda n: refm.ref_strata_allocation(conf, n),
        "diversity": lambda n: refd.ref_draw_discrete_ope(
            refd.ref_diversity_preprocess(conf.T)[0], n, rng),
    }
    sample_sizes = (25, 100)
    seconds = {}
    for name, job in jobs.items():
        start = time.perf_counter()
        for size in sample_sizes:
            job(size)
        per_cell = (time.perf_counter() - start) / len(sample_sizes)
        seconds[name] = per_cell * N_RUNS * len(SIZES)
    return seconds


def reference_mdad_seconds(n_methods: int) -> float:
    """The MDAD step as loops, for `n_methods` x 5 sizes x 2 splits."""
    import reference_impl as ref

    from mdad.data import load_dataset
    from mdad.study import StudyConfig, plan_study, run_study

    data = load_dataset("gpqa")
    plan = plan_study(data.matrix, StudyConfig(methods=("random",)),
                      default_sizes=data.spec.sizes)
    result = run_study(data.matrix, plan)
    groups = 2
    start = time.perf_counter()
    for s in range(groups):
        records = [r for run in range(N_RUNS)
                   for r in ref.agreement_records(result.seen[run], result.unseen[run],
                                                  result.estimates[0, s, 0, run])]
        ref.first_crossing_mdad([r.bin_seen for r in records], [r.agree_seen for r in records],
                                rng=np.random.default_rng(0))
    return (time.perf_counter() - start) / groups * n_methods * len(SIZES) * 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2")
    args = parser.parse_args()
    timings = {}
    for workers in map(int, args.workers.split(",")):
        elapsed, config = run_command(workers)
        timings[workers] = elapsed
        timing = config["timing"]
        cpu = timing["method_cpu_seconds"]
        total_cpu = sum(cpu.values())
        print(f"mdad run gpqa --methods all --workers {workers}: {elapsed:.1f} s wall "
              f"(cells {timing['cells_seconds']:.1f} s, MDAD and tables "
              f"{timing['metrics_seconds']:.1f} s)")
        for name, sec in sorted(cpu.items(), key=lambda kv: -kv[1]):
            print(f"  {name:<26} {sec:7.1f} s CPU  {sec / total_cpu:6.1%}")
    best = min(timings.values())
    methods = reference_method_seconds()
    mdad_loops = reference_mdad_seconds(len(cpu))
    print("baselines measured now, scaled to the whole study (50 runs x 5 sizes):")
    for name, sec in methods.items():
        print(f"  {name:<26} slow reference {sec:7.1f} s vs mdad {cpu[name]:.2f} s CPU "
              f"= {sec / max(cpu[name], 1e-9):.0f}x")
    print(f"  MDAD step as loops: {mdad_loops:.1f} s")
    total = sum(methods.values()) + mdad_loops
    print(f"  these parts alone: {total:.0f} s = {total / best:.1f}x the whole mdad command "
          f"({best:.1f} s); without tinyBenchmarks' IRT, which the paper fits by 2,000 "
          "epochs of SVI per run")


if __name__ == "__main__":
    main()
