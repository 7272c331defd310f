"""Time reading lm-eval sample files with one very long line (issue 34: reading must be
linear in the input), against the same number of bytes in short lines, measured in the
same run.

For each size (25, 50, 100 MB by default) two files are written to a temporary folder:
one whose second record holds a document of that size on one line, and a baseline of
about the same bytes in short records (about 1 KB each, the harness's usual size).
Each is read with `load_lm_eval_samples` `--repeats` times; the best time counts. The
table gives seconds and seconds per MB: linear reading keeps the long line's s/MB flat
as the size grows (quadratic reading would double it at each doubling). The peak memory
Python allocated while reading the long line (tracemalloc, one more read) is given as a
multiple of the line's size.

Usage: python benchmarks/bench_long_lines.py [--sizes 25,50,100] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import tracemalloc
from pathlib import Path

from mdad.data.lm_eval import MAX_LINE_BYTES, load_lm_eval_samples

MB = 2**20
NAME = "samples_task_2024-01-01T00-00-00.jsonl"


def record(doc_id: int, text: str) -> dict:
    """A multiple-choice record in the harness's layout, its document `text`."""
    return {"doc_id": doc_id, "doc": {"question": text, "answer": "1"}, "target": 1,
            "arguments": {f"gen_args_{k}": {"arg_0": "Q: ?\nA:", "arg_1": f" option {k}"}
                          for k in range(4)},
            "resps": [[[str(-1.0 - k), "False"]] for k in range(4)],
            "filtered_resps": [[str(-1.0 - k), "False"] for k in range(4)],
            "doc_hash": "x", "prompt_hash": "y", "target_hash": "z", "acc": 1.0}


def write_long(folder: Path, size: int) -> int:
    """One record of `size` bytes of text between two short ones; the long line's bytes."""
    folder.mkdir(parents=True)
    long_line = json.dumps(record(1, "x" * size)) + "\n"
    with open(folder / NAME, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(record(0, "short")) + "\n")
        handle.write(long_line)
        handle.write(json.dumps(record(2, "short")) + "\n")
    return len(long_line)


def write_short(folder: Path, size: int) -> None:
    """About `size` bytes in records of about 1 KB."""
    folder.mkdir(parents=True)
    with open(folder / NAME, "w", encoding="utf-8") as handle:
        written = doc_id = 0
        while written < size:
            line = json.dumps(record(doc_id, "y" * 600)) + "\n"
            handle.write(line)
            written += len(line)
            doc_id += 1


def best_seconds(folder: Path, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        load_lm_eval_samples(folder)
        times.append(time.perf_counter() - start)
    return min(times)


def peak_ratio(folder: Path, line_bytes: int) -> float:
    """Peak bytes Python allocated while reading `folder`, over `line_bytes`."""
    tracemalloc.start()
    try:
        load_lm_eval_samples(folder)
        return tracemalloc.get_traced_memory()[1] / line_bytes
    finally:
        tracemalloc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="25,50,100", help="line sizes in MB")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"line cap (MAX_LINE_BYTES): {MAX_LINE_BYTES // MB} MiB")
    print(f"{'MB':>5} {'long s':>8} {'long s/MB':>10} {'short s':>8} {'short s/MB':>11} "
          f"{'peak/line':>10}")
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            long_dir, short_dir = Path(tmp, f"long{size}"), Path(tmp, f"short{size}")
            line_bytes = write_long(long_dir, size * MB)
            write_short(short_dir, size * MB)
            long_s = best_seconds(long_dir, args.repeats)
            short_s = best_seconds(short_dir, args.repeats)
            peak = peak_ratio(long_dir, line_bytes)
            print(f"{size:>5} {long_s:>8.3f} {long_s / size:>10.4f} {short_s:>8.3f} "
                  f"{short_s / size:>11.4f} {peak:>9.2f}x")
            for folder in (long_dir, short_dir):
                (folder / NAME).unlink()


if __name__ == "__main__":
    main()
