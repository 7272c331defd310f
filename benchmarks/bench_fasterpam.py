"""FasterPAM compiled (`mdad.selection._fasterpam`) against the `kmedoids` library it
replaced (a test dependency now), on a 7,000-item distance matrix (1 - correlation of
simulated confidences of 300 models), one thread, at 10, 100 and 1,000 medoids:

- from the same random start, candidates in index order: both times, and whether the
  medoids and loss are identical;
- as Anchor Points runs it: the library's shuffled variant (`init="random",
  random_state=seed`, Rust's shuffle) against ours (the same start, numpy's shuffle):
  both times and losses;
- how long the library holds Python's lock in one call (the longest pause of a thread
  ticking every millisecond beside it), against ours.

Usage: python benchmarks/bench_fasterpam.py [--items 7000]
"""

from __future__ import annotations

import argparse
import threading
import time

import kmedoids
import numpy as np

from mdad.selection._fasterpam import fasterpam
from mdad.selection.anchor_points import item_correlation


def longest_pause(work) -> float:
    """Seconds of the longest gap between a 1 ms ticker's ticks while `work()` runs."""
    done, gaps = threading.Event(), []

    def tick() -> None:
        last = time.monotonic()
        while not done.is_set():
            time.sleep(0.001)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    ticker = threading.Thread(target=tick)
    ticker.start()
    work()
    done.set()
    ticker.join()
    return max(gaps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=7000)
    n = parser.parse_args().items
    rng = np.random.default_rng(0)
    ability, difficulty = rng.standard_normal((300, 1)), rng.standard_normal((1, n))
    slope = rng.uniform(0.3, 2.0, (1, n))
    noise = rng.standard_normal((300, n))
    distance = 1.0 - item_correlation(1 / (1 + np.exp(difficulty - ability * slope - noise)))
    fasterpam(distance[:50, :50], np.arange(3))  # compiled, or loaded from the cache
    print(f"{n} items, one thread")
    for k in (10, 100, 1000):
        start = np.random.RandomState(k).choice(n, k, replace=False)
        began = time.perf_counter()
        library = kmedoids.fasterpam(distance, start.astype(np.uintp), n_cpu=1)
        theirs = time.perf_counter() - began
        began = time.perf_counter()
        medoids, loss, _, _ = fasterpam(distance, start)
        ours = time.perf_counter() - began
        same = np.array_equal(medoids, np.asarray(library.medoids)) and loss == library.loss
        print(f"  k={k:5d} index order: library {theirs:5.2f} s, ours {ours:5.2f} s "
              f"({theirs / ours:.1f}x), identical: {same}")
        began = time.perf_counter()
        library = kmedoids.fasterpam(distance, k, init="random", random_state=k, n_cpu=1)
        theirs = time.perf_counter() - began
        state = np.random.RandomState(k)
        start = state.choice(n, k, replace=False)
        began = time.perf_counter()
        _, loss, _, _ = fasterpam(distance, start, order=state.permutation(n))
        ours = time.perf_counter() - began
        print(f"  k={k:5d} shuffled:    library {theirs:5.2f} s, ours {ours:5.2f} s "
              f"({theirs / ours:.1f}x); losses {library.loss:.2f} and {loss:.2f}")
    start = np.arange(100)
    held = longest_pause(lambda: kmedoids.fasterpam(distance, start.astype(np.uintp),
                                                    n_cpu=1))
    free = longest_pause(lambda: fasterpam(distance, start))
    print(f"  longest pause of another thread during a call (k=100): library {held:.2f} s, "
          f"ours {free:.3f} s")


if __name__ == "__main__":
    main()
