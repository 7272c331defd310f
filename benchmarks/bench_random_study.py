"""Time `mdad run gpqa` with the three random methods (50 runs, 5 sizes, 1,000 bootstrap
resamples), the whole command, against baselines measured in the same run.

Baselines:
- "python loops": the paper's MDAD step done as the reference code does it (a Python
  loop over pairs per run and a bootstrap loop per bin), via tests/reference_impl.py,
  on the same estimates; timed on a sample of (method, size, split) groups and
  scaled to all 30 groups.
- "import only": `python -c "import mdad.cli.app"`, the floor any command pays.

Usage: python benchmarks/bench_random_study.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def time_command(args: list[str], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            subprocess.run([*args, "--out", f"{tmp}/run"] if "run" in args else args,
                           check=True, capture_output=True)
            times.append(time.perf_counter() - start)
    return times


def reference_mdad_seconds(groups: int = 2) -> tuple[float, int]:
    import reference_impl as ref

    from mdad.data import load_dataset
    from mdad.study import StudyConfig, plan_study, run_study

    data = load_dataset("gpqa")
    plan = plan_study(data.matrix, StudyConfig(), default_sizes=data.spec.sizes)
    result = run_study(data.matrix, plan)
    start = time.perf_counter()
    for g in range(groups):
        m, s = divmod(g, len(plan.sizes))
        records = [r for run in range(plan.config.n_runs)
                   for r in ref.agreement_records(result.seen[run], result.unseen[run],
                                                  result.estimates[m, s, 0, run])]
        ref.first_crossing_mdad([r.bin_seen for r in records], [r.agree_seen for r in records],
                                rng=np.random.default_rng(0))
    per_group = (time.perf_counter() - start) / groups
    n_groups = len(plan.config.methods) * len(plan.sizes) * 2
    return per_group * n_groups, n_groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    mdad = str(Path(sys.executable).parent / "mdad")
    command = [mdad, "run", "gpqa", "--methods", "random,subtask-equal,subtask-proportional"]
    run_times = time_command(command, args.repeats)
    import_times = time_command([sys.executable, "-c", "import mdad.cli.app"], args.repeats)
    loops, n_groups = reference_mdad_seconds()
    best = min(run_times)
    print(f"mdad run gpqa (3 random methods, 50 runs, 5 sizes, 1000 resamples): "
          f"best {best:.2f} s, median {statistics.median(run_times):.2f} s "
          f"over {args.repeats} runs")
    print(f"  import floor: {min(import_times):.2f} s "
          f"({min(import_times) / best:.0%} of the command)")
    print(f"  MDAD step with Python loops (reference style), {n_groups} groups, "
          f"extrapolated: {loops:.1f} s = {loops / best:.0f}x the whole mdad command")


if __name__ == "__main__":
    main()
