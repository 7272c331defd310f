"""How long `mdad` takes to stop after Ctrl-C or SIGTERM, mid-work (issue: within 2 s).

Each command is started on the real GPQA data (../shared/data, or MDAD_DATA), left to
work for a while (less than it needs to finish), sent the signal, and timed until its
process has ended; the line it printed and its exit code are shown. The baseline,
measured in the same run, is how long a Python process takes to start and exit
(`python -c pass`): a command cannot stop faster than a process ends.

    python benchmarks/bench_interrupts.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MDAD = Path(sys.executable).with_name("mdad")
# command -> (arguments, seconds to let it work before the signal: mid-work, not done)
COMMANDS = {
    "run": (["run", "gpqa", "--methods", "random,tinybenchmarks", "--runs", "20",
             "--out", "run"], 1.5),
    "select tinybenchmarks": (["select", "gpqa", "--method", "tinybenchmarks", "--size",
                               "50", "--out", "mb.json"], 1.5),
    "adaptive start": (["adaptive", "start", "gpqa", "--budget", "50", "--out",
                        "state.json"], 0.6),
}


def stop_once(args: list[str], sig: int, after: float) -> tuple[float, int, str]:
    """Seconds from the signal to the process's end, its exit code and stderr."""
    with tempfile.TemporaryDirectory() as folder:
        process = subprocess.Popen([str(MDAD), *args], cwd=folder, text=True,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   start_new_session=True)
        time.sleep(after)
        if process.poll() is not None:
            return float("nan"), process.returncode, "finished before the signal"
        sent = time.monotonic()
        os.kill(process.pid, sig)
        _, stderr = process.communicate(timeout=120)
        return time.monotonic() - sent, process.returncode, stderr.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    baseline = time.monotonic() - started
    print(f"baseline (python -c pass, start to exit): {baseline:.3f} s")
    print(f"{'command':<24}{'signal':<9}{'median s':>9}{'max s':>8}{'x base':>8}  line")
    for name, (args, after) in COMMANDS.items():
        for sig in (signal.SIGINT, signal.SIGTERM):
            runs = [stop_once(args, sig, after) for _ in range(options.repeats)]
            times = [t for t, _, _ in runs if t == t]
            if not times:
                print(f"{name:<24}{sig.name:<9}  finished before the signal")
                continue
            line = runs[-1][2].splitlines()[-1] if runs[-1][2] else ""
            print(f"{name:<24}{sig.name:<9}{statistics.median(times):>9.3f}"
                  f"{max(times):>8.3f}{max(times) / baseline:>8.1f}  "
                  f"exit {runs[-1][1]}: {line[:70]}")


if __name__ == "__main__":
    main()
