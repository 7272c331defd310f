"""How far does a shortcut move a method's numbers, against the noise of the method's
own randomness? Paired, run by run, on the study's designs.

For one method, per run and source count, every variant selects from the same seen
pool: "exact" (the method as registered, seed A), "reseeded" (the same, seed B: how
much the method's own random draws move the numbers) and each shortcut (seed A). Per
size it prints each variant's error on the targets' seen accuracy (points) and Kendall
tau (mean ± SE over runs), its paired difference from "exact" with that difference's
SE, and the seconds per selection. A shortcut keeps the numbers when its differences
are like the reseeded ones: within about 2 SE of zero.

Shortcuts, by method:
- tinybenchmarks: the variational fit stopped after E epochs (`--values 250,500,1000`);
- anchor-points: FasterPAM stopped after P passes (`--values 1,2`);
- diversity: the blocked DPP sampler (no values).

`--baseline COMMIT` (tinybenchmarks) adds the variant "baseline": the variational fit
as it was at COMMIT (loaded from git), so that a rewrite of the fit is held to the
same test as a shortcut. With `--mdad` it also runs the study three times, in this
process (the exact method with seeds 0 and 1, and the baseline with seed 0), and
prints each one's first-crossing MDAD per size beside the others.

Usage: python benchmarks/approximation_noise.py --method tinybenchmarks
           [--benchmark gpqa] [--runs 50] [--sources 300] [--sizes 10,25,50,100,200]
           [--values 250,500,1000] [--baseline 017265f [--mdad [--study-runs N]]]
           [--save rows.csv]
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from mdad import streams
from mdad.data import load_dataset
from mdad.selection import MethodDefaults, SeenPool, method_class
from mdad.selection.threads import one_thread
from mdad.study import StudyConfig, plan_study
from mdad.study.cells import draw_design, seen_pool

SHORTCUTS = {"tinybenchmarks": "epochs", "anchor-points": "max_passes", "diversity": "blocked"}
FIT_MODULE = "src/mdad/irt/variational.py"


def fit_at(commit: str) -> ModuleType:
    """`mdad.irt.variational` as it was at `commit`."""
    root = Path(__file__).resolve().parent.parent
    shown = subprocess.run(["git", "show", f"{commit}:{FIT_MODULE}"], cwd=root,
                           capture_output=True, text=True)
    if shown.returncode != 0:
        sys.exit(f"--baseline {commit}: git cannot show {FIT_MODULE} there")
    spec = importlib.util.spec_from_loader(f"variational_{commit}", loader=None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    exec(compile(shown.stdout, f"{commit}:{FIT_MODULE}", "exec"), module.__dict__)
    return module


@contextmanager
def fit_of(module: ModuleType | None):
    """tinyBenchmarks fitting with `module`'s `fit_variational` (None: as it is)."""
    import mdad.selection.tinybenchmarks as tiny

    current = tiny.fit_variational
    tiny.fit_variational = current if module is None else module.fit_variational
    try:
        yield
    finally:
        tiny.fit_variational = current


def variants(method: str, values: tuple[int, ...]) -> dict[str, tuple[MethodDefaults, int]]:
    """name -> (selector, seed): the exact method twice, then each shortcut."""
    exact = method_class(method)
    attribute = SHORTCUTS[method]
    out = {"exact": (exact(), 0), "reseeded": (exact(), 1)}
    settings = (True,) if attribute == "blocked" else values
    # The IRT fit draws from a stream named by its cache key: the shortcut keeps the
    # exact fit's key (each variant has its own pool), so it is the exact fit stopped
    # early, draw for draw, and the pairing measures the shortcut alone.
    same_stream = {"_fit_suffix": exact()._fit_suffix} if hasattr(exact, "_fit_suffix") else {}
    for value in settings:
        shortcut = type(f"{exact.__name__}Shortcut", (exact,), {attribute: value, **same_stream})
        out[f"{attribute}={value}"] = (shortcut(), 0)
    return out


def measure(benchmark: str, method: str, runs: int, sources: tuple[int, ...],
            sizes: tuple[int, ...], values: tuple[int, ...],
            baseline: ModuleType | None = None) -> pd.DataFrame:
    matrix = load_dataset(benchmark).matrix
    plan = plan_study(matrix, StudyConfig(methods=(method,), n_runs=runs, sources=sources))
    chosen = variants(method, values)
    if baseline is not None:
        chosen["baseline"] = (method_class(method)(), 0)
    rows = []
    with one_thread(selector for selector, _ in chosen.values()):
        for run in range(runs):
            design = draw_design(matrix, plan, run)
            seen = matrix.scores(design.targets, design.seen).astype(float).mean(axis=1)
            for n_sources in sources:
                shared = seen_pool(matrix, design, n_sources, seed=0)
                for name, (selector, seed) in chosen.items():
                    # a fresh pool per variant: nothing shared between them
                    pool = SeenPool(shared.correctness, shared.confidence,
                                    shared.subtask_codes, streams.stream(seed, "pool", run))
                    for size in sizes:
                        rng = streams.rng(seed, "cell", run, n_sources, size)
                        started = time.perf_counter()
                        with fit_of(baseline if name == "baseline" else None):
                            micro = selector.select(pool, size, rng=rng)
                        seconds = time.perf_counter() - started
                        scores = (matrix.gold_confidence(design.targets, design.seen)
                                  if micro.uses_confidence
                                  else matrix.scores(design.targets, design.seen))
                        estimate = micro.estimate(np.asarray(scores, dtype=np.float64))
                        rows.append({"variant": name, "run": run, "sources": n_sources,
                                     "size": size, "seconds": seconds,
                                     "mae": 100 * np.abs(estimate - seen).mean(),
                                     "tau": kendalltau(estimate, seen).statistic})
    return pd.DataFrame(rows)


def summarise(table: pd.DataFrame) -> pd.DataFrame:
    keys = ["run", "sources", "size"]
    exact = table[table.variant == "exact"].set_index(keys)
    out = []
    for (variant, n_sources, size), group in table.groupby(["variant", "sources", "size"]):
        gap = group.set_index(keys)[["mae", "tau"]] - exact[["mae", "tau"]]
        gap = gap.dropna()
        out.append({"variant": variant, "sources": n_sources, "size": size,
                    "mae": group.mae.mean(), "mae_se": group.mae.sem(),
                    "d_mae": gap.mae.mean(), "d_mae_se": gap.mae.sem(),
                    "tau": group.tau.mean(), "d_tau": gap.tau.mean(), "d_tau_se": gap.tau.sem(),
                    "select_s": group.seconds.sum() / group.run.nunique()})
    return pd.DataFrame(out).set_index(["sources", "size", "variant"]).sort_index()


def study_mdads(benchmark: str, method: str, baseline: ModuleType,
                runs: int | None = None) -> pd.DataFrame:
    """The first-crossing MDAD (points) per size of the default study of `method`
    (with `runs` runs, if given): exact with seeds 0 and 1, and with the baseline fit,
    seed 0; in this process."""
    from mdad.study import evaluate, run_study
    from mdad.study.backends import InProcessBackend

    matrix = load_dataset(benchmark).matrix
    columns = {}
    for name, seed, module in (("exact", 0, None), ("reseeded", 1, None),
                               ("baseline", 0, baseline)):
        config = StudyConfig(methods=(method,), seed=seed)
        if runs is not None:
            config = replace(config, n_runs=runs)
        plan = plan_study(matrix, config)
        with fit_of(module):
            tables = evaluate(run_study(matrix, plan, backend=InProcessBackend()))
        for row in tables.mdad.itertuples():
            value = 100 * row.mdad if row.reached else float("nan")
            columns.setdefault((row.split, row.sources, row.size), {})[name] = value
    return pd.DataFrame.from_dict(columns, orient="index").rename_axis(
        ["split", "sources", "size"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", choices=list(SHORTCUTS), required=True)
    parser.add_argument("--benchmark", default="gpqa")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--sources", default="300")
    parser.add_argument("--sizes", default="10,25,50,100,200")
    parser.add_argument("--values", default="250,500,1000",
                        help="epochs (tinybenchmarks) or passes (anchor-points)")
    parser.add_argument("--baseline", help="a commit whose variational fit to compare")
    parser.add_argument("--mdad", action="store_true",
                        help="with --baseline, also compare the studies' MDAD")
    parser.add_argument("--study-runs", type=int,
                        help="with --mdad, the studies' runs (default: the study's own)")
    parser.add_argument("--save", help="also write the per-run rows to this CSV")
    args = parser.parse_args()
    as_ints = lambda text: tuple(int(v) for v in text.split(","))  # noqa: E731
    baseline = fit_at(args.baseline) if args.baseline else None
    table = measure(args.benchmark, args.method, args.runs, as_ints(args.sources),
                    as_ints(args.sizes), as_ints(args.values), baseline)
    if args.save:
        table.to_csv(args.save, index=False)
    print(f"{args.method} on {args.benchmark}, {args.runs} runs: error in points, Kendall "
          "tau; d_ = paired difference from exact; select_s = seconds of selection per run")
    print(summarise(table).round(3).to_string())
    if baseline is not None and args.mdad:
        print("\nfirst-crossing MDAD (points; NaN: not reached), default study")
        mdads = study_mdads(args.benchmark, args.method, baseline, args.study_runs)
        print(mdads.round(1).to_string())


if __name__ == "__main__":
    main()
