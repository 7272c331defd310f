"""Pool round trips run apart (`bench_roundtrip.py --json`): the table over all their
seeds, per dataset x split x method x size, as one run of those seeds would print it.

A long round trip (p-IRT on `synthetic:mmlu-pro` takes about 45 minutes a seed) runs a
seed at a time; each seed's folds and selections are its own, so the seeds' held-out
estimates pool by counting: coverage in each decile group is covered estimates over
estimates, widths and notices are averaged over estimates, listed verdicts and wrong
ones are summed. Files that share a seed of the same dataset, split, method and size
are refused (an estimate would count twice), as are files written before the rows
named their seeds.

Usage:
  python benchmarks/pool_roundtrips.py seed0.json seed1.json seed2.json

The pooled rows of docs/explanation/intervals.md are this script's output.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench_roundtrip import print_footer, print_header, print_row, write_json

from mdad.practice.roundtrip import GROUPS

KEYS = ("dataset", "split", "method", "size", "seeds", "seconds", "estimates", "coverage",
        "width", "notice", "listed", "wrong share", *GROUPS,
        *(f"{group} estimates" for group in GROUPS))


def pool(rows: list[dict]) -> list[dict]:
    """The pooled `RoundTrip.summary()` rows of `rows` (each with `KEYS`), one per
    (dataset, split, method, size), in order of first appearance; "seconds" is the sum
    of the pooled runs' times, "seeds" their union. Exits with a one-line message when
    two rows of one key share a seed."""
    pooled: dict[tuple, dict] = {}
    for row in rows:
        key = (row["dataset"], row["split"], row["method"], row["size"])
        if key not in pooled:
            pooled[key] = {**row, "seeds": list(row["seeds"])}
            continue
        into = pooled[key]
        shared = set(into["seeds"]) & set(row["seeds"])
        if shared:
            raise SystemExit(f"seeds {sorted(shared)} of {key} are in two files: each "
                             "estimate would count twice")
        n, m = into["estimates"], row["estimates"]
        for name in ("coverage", "width", "notice"):
            into[name] = (into[name] * n + row[name] * m) / (n + m)
        for group in GROUPS:
            a, b = into[f"{group} estimates"], row[f"{group} estimates"]
            if a + b:
                into[group] = ((into[group] or 0.0) * a + (row[group] or 0.0) * b) / (a + b)
            into[f"{group} estimates"] = a + b
        wrong = sum((r["wrong share"] or 0.0) * r["listed"] for r in (into, row))
        into["listed"] += row["listed"]
        into["wrong share"] = wrong / into["listed"] if into["listed"] else None
        into["estimates"] = n + m
        into["seconds"] += row["seconds"]
        into["seeds"] += row["seeds"]
    return list(pooled.values())


def read_rows(path: Path) -> list[dict]:
    """The rows of one `bench_roundtrip.py --json` file; exits with a one-line message
    naming the file (and row) when it cannot be one."""
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise SystemExit(f"{path}: cannot read a bench_roundtrip.py --json file "
                         f"({error})") from None
    if not isinstance(rows, list):
        raise SystemExit(f"{path}: not a bench_roundtrip.py --json file (a list of rows)")
    for k, row in enumerate(rows):
        missing = [key for key in KEYS if not isinstance(row, dict) or key not in row]
        if missing:
            raise SystemExit(f"{path}: row {k + 1} lacks {', '.join(map(repr, missing))}"
                             + (" (written before rows named their seeds: run it again "
                                "with bench_roundtrip.py --json)" if missing == ["seeds"]
                                else ""))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", type=Path, nargs="+")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    pooled = pool([row for path in args.files for row in read_rows(path)])
    print_header()
    for row in pooled:
        print_row(row)
    # each method's own seeds: methods pooled from different runs may have different ones
    by_seeds: dict[tuple[int, ...], list[str]] = {}
    for row in pooled:
        methods = by_seeds.setdefault(tuple(sorted(row["seeds"])), [])
        if row["method"] not in methods:
            methods.append(row["method"])
    for seeds, methods in by_seeds.items():
        print(f"(pooled seeds {', '.join(map(str, seeds))}"
              + (f": {', '.join(methods)})" if len(by_seeds) > 1 else ")"))
    print_footer()
    if args.json is not None:
        write_json(args.json, pooled)


if __name__ == "__main__":
    main()
