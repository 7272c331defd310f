"""Which backend pays on GPQA, and what starting worker processes costs.

Times whole processes (import, load, cells, metrics, write), best of --repeats:

- the three random methods, default options (`mdad run gpqa --methods
  random,subtask-equal,subtask-proportional`): the "auto" backend, against
  `choose_backend("processes")` (every study in two workers, the old default) and
  `choose_backend("in-process")`, all through `mdad.study.conduct_study`;
- a heavier study (random and tinybenchmarks, 10 runs) the same three ways, to show
  that "auto" hands work to the workers when it pays;
- the start-up cost of two workers (spawn, import, receive the data): a one-cell study
  in processes minus the same in-process. `WORKER_START_SECONDS` should be near it.

Usage: python benchmarks/bench_backends.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time

SCRIPT = """
import sys
from mdad.study import StudyConfig, StudyRequest, conduct_study, prepare_study
from mdad.study.backends import choose_backend
if __name__ == "__main__":
    methods, runs, sizes, backend, out = sys.argv[1:]
    config = StudyConfig(methods=tuple(methods.split(",")), n_runs=int(runs),
                         sizes=tuple(map(int, sizes.split(","))) if sizes else None)
    conduct_study(prepare_study(StudyRequest("gpqa", config)), out,
                  backend=choose_backend(backend, n_workers=2))
"""


def best_seconds(args: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", SCRIPT, *args, f"{tmp}/study"], check=True,
                           capture_output=True)
            times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from mdad.study.backends import WORKER_START_SECONDS

    studies = {
        "3 random methods, 50 runs, GPQA's sizes": ("random,subtask-equal,subtask-proportional",
                                                    "50", ""),
        "random + tinybenchmarks, 10 runs": ("random,tinybenchmarks", "10", ""),
    }
    for title, (methods, runs, sizes) in studies.items():
        seconds = {backend: best_seconds([methods, runs, sizes, backend], args.repeats)
                   for backend in ("processes", "in-process", "auto")}
        print(f"{title}: auto {seconds['auto']:.2f} s; processes {seconds['processes']:.2f} s "
              f"({seconds['processes'] / seconds['auto']:.2f}x auto); in-process "
              f"{seconds['in-process']:.2f} s ({seconds['in-process'] / seconds['auto']:.2f}x)")
    one_cell = ("random", "1", "10")
    start_cost = (best_seconds([*one_cell, "processes"], args.repeats)
                  - best_seconds([*one_cell, "in-process"], args.repeats))
    print(f"starting 2 workers: {start_cost:.2f} s (WORKER_START_SECONDS = "
          f"{WORKER_START_SECONDS})")


if __name__ == "__main__":
    main()
