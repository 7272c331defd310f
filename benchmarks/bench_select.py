"""Time `mdad select gpqa --method tinybenchmarks-map --size 50`, the whole command, against
baselines measured in the same run (goal: at most 5 s; issue 13 point 6).

Variants, each a fresh `python -m mdad select` process:
- "now": the command as shipped: the main IRT fit and the 5 cross-validation fits
  in two threads, each with one BLAS thread (threadpoolctl), as a study's cells run.
- "old path": every fit with the default BLAS threads (one per core), as before this
  change (threadpoolctl.threadpool_limits made a no-op in that process). Its items
  depend on the machine's core count: BLAS sums in another order with more threads.
- "one thread everywhere": OPENBLAS_NUM_THREADS=1 for the whole process; should
  equal "now" (same items), a check that the limit reaches every fit.
- "import only": `python -c "import mdad.cli.app"`, the floor any command pays.
- "variational fit": `--method tinybenchmarks` now fits as the reference did (SVI,
  2,000 epochs; see docs/explanation/reproduction.md, tinyBenchmarks): the same command on that fit,
  six fits of 420 models x 448 items, in a thread here and, once the first fit has run
  `SPAWN_AFTER_SECONDS` (0.5 s), in one spawned worker process too
  (`mdad.practice.fit_pool`).
- "variational, 2.5 s wait": the same with the worker started after 2.5 s, as before
  2026-12-02.
- "variational, no worker": the same, every fit in the one thread (the worker never
  started): what the command cost before the worker. Both files must equal the one
  above.

The issue's goal is on `--method tinybenchmarks`; both it and the MAP-fit variant
(the method the command ran when the goal was set) are checked against it.

Usage: python benchmarks/bench_select.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMAND = ["select", "gpqa", "--method", "tinybenchmarks-map", "--size", "50"]
VARIATIONAL = ["select", "gpqa", "--method", "tinybenchmarks", "--size", "50"]
OLD_PATH = ("import contextlib, threadpoolctl, sys; "
            "threadpoolctl.threadpool_limits = lambda *a, **k: contextlib.nullcontext(); "
            "from mdad.cli.app import main; sys.argv[0] = 'mdad'; main()")
NOW = "import sys; from mdad.cli.app import main; sys.argv[0] = 'mdad'; main()"


def spawn_after(seconds: float | None) -> str:
    """The command with the worker's wait (`SPAWN_AFTER_SECONDS`) set to `seconds`."""
    return ("import sys; import mdad.practice.bundle as bundle; "
            f"bundle.SPAWN_AFTER_SECONDS = {seconds!r}; "
            "from mdad.cli.app import main; sys.argv[0] = 'mdad'; main()")


def run(code: str, args: list[str], env: dict[str, str] | None = None) -> tuple[float, dict]:
    """Seconds for one process, and the micro-benchmark file it wrote (if any)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "mb.json"
        full = [sys.executable, "-c", code, *args] + (["--out", str(out)] if args else [])
        start = time.perf_counter()
        subprocess.run(full, check=True, capture_output=True, env={**os.environ, **(env or {})})
        seconds = time.perf_counter() - start
        return seconds, json.loads(out.read_text()) if out.exists() else {}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    repeats = parser.parse_args().repeats
    variants = {
        "now": (NOW, COMMAND, None),
        "old path": (OLD_PATH, COMMAND, None),
        "one thread everywhere": (NOW, COMMAND, {"OPENBLAS_NUM_THREADS": "1",
                                                 "OMP_NUM_THREADS": "1"}),
        "import only": ("import mdad.cli.app", [], None),
        "variational fit": (NOW, VARIATIONAL, None),
        "variational, 2.5 s wait": (spawn_after(2.5), VARIATIONAL, None),
        "variational, no worker": (spawn_after(None), VARIATIONAL, None),
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    files: dict[str, dict] = {}
    for _ in range(repeats):  # interleaved, so load changes hit every variant alike
        for name, (code, args, env) in variants.items():
            seconds, written = run(code, args, env)
            times[name].append(seconds)
            files[name] = written
    now = statistics.median(times["now"])
    print(f"mdad {' '.join(COMMAND)}: median of {repeats} on {os.cpu_count()} cores")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:22s} {median:6.2f} s  (x{median / now:.2f} of now; runs "
              + ", ".join(f"{v:.2f}" for v in values) + ")")
    print(f"  error_sd now {files['now']['error_sd']:.5f}, "
          f"old path {files['old path']['error_sd']:.5f}")
    overlap = len(set(files["now"]["items"]) & set(files["old path"]["items"]))
    print(f"  old path shares {overlap} of 50 items with now; one thread everywhere "
          f"== now: {files['now']['items'] == files['one thread everywhere']['items']}")
    same = all(files[name] == files["variational fit"]
               for name in ("variational, 2.5 s wait", "variational, no worker"))
    print(f"  variational fit == with a 2.5 s wait == no worker: {same}")
    for name, label in (("variational fit", "tinybenchmarks"), ("now", "tinybenchmarks-map")):
        median = statistics.median(times[name])
        print(f"  goal <= 5 s, --method {label}: {'met' if median <= 5.0 else 'NOT met'} "
              f"({median:.2f} s)")


if __name__ == "__main__":
    main()
