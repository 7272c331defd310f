"""`mdad plan`, `select`, `estimate`, `compare`: the practitioner's commands."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from mdad.cli.errors import user_errors
from mdad.data import MissingPolicy, load_dataset
from mdad.data.files import read_name_list
from mdad.errors import ConfigError
from mdad.report.sentences import points

JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object instead.")]
OtherVersion = Annotated[bool, typer.Option(
    "--allow-other-data-version",
    help="Use a --run made on a different version of the data (its sha256 differs).")]


def _points(value: float) -> str:
    return points(value)


def _print_json(value: object) -> None:
    typer.echo(json.dumps(dataclasses.asdict(value) if dataclasses.is_dataclass(value)
                          else value, indent=1))


@user_errors
def plan(
    dataset: Annotated[str, typer.Argument(help="A dataset name or path (as `mdad run`).")],
    gap: Annotated[float | None, typer.Option(
        help="Accuracy gap to detect, as a fraction (0.02 = 2 points): prints the size "
             "needed.")] = None,
    size: Annotated[int | None, typer.Option(help="Micro-benchmark size: prints its "
                                             "MDAD.")] = None,
    method: Annotated[str, typer.Option(
        help="random or subtask-equal (analytic); any other method needs --run.")] = "random",
    run: Annotated[Path | None, typer.Option(
        help="A finished `mdad run` folder whose MDAD curve to interpolate.")] = None,
    target_models: Annotated[Path | None, typer.Option(
        help="Models (one name per line) whose comparisons the size should settle.")] = None,
    threshold: Annotated[float, typer.Option(help="Agreement probability defining "
                                             "MDAD.")] = 0.8,
    missing: Annotated[MissingPolicy, typer.Option(help="Missing cells, as in `mdad run`."
                                                   )] = MissingPolicy.DROP_ITEMS,
    other_version: OtherVersion = False,
    as_json: JsonOption = False,
) -> None:
    """How many items a micro-benchmark needs for a gap, or the MDAD of a size."""
    from mdad.practice import plan as make_plan

    data = load_dataset(dataset, missing=missing)
    names = read_name_list(target_models, option="--target-models") if target_models else None
    answer = make_plan(data, gap=gap, size=size, method=method, run_dir=run,
                       target_models=names, threshold=threshold,
                       allow_other_version=other_version)
    if as_json:
        _print_json(answer)
        return
    source = ("computed analytically from every pair of models" if answer.how == "analytic"
              else f"interpolated from the study in {run}")
    if answer.gap is not None and answer.size is None:
        largest = "the whole benchmark" if answer.how == "analytic" else "the study's sizes"
        text = (f"No size up to {largest} reaches a gap of {_points(answer.gap)} points "
                f"with {method}: its MDAD at the largest is {_points(answer.mdad)}.")
    elif answer.gap is not None:
        text = (f"{method}: {answer.size} items rank pairs {_points(answer.gap)} or more "
                f"points apart correctly with probability >= {answer.threshold:.0%} "
                f"(MDAD {_points(answer.mdad)}).")
    else:
        text = (f"{method}, {answer.size} items: MDAD {_points(answer.mdad)} points at "
                f"{answer.threshold:.0%} agreement.")
    Console().print(f"{text} ({data.name}, {source})")
    if answer.settled_share is not None:
        Console().print(f"It settles {answer.settled_share:.0%} of the target models' "
                        "pairwise comparisons (their gap is at least the MDAD).")


@user_errors
def select(
    dataset: Annotated[str, typer.Argument(help="A dataset name or path (as `mdad run`).")],
    method: Annotated[str, typer.Option(help="Selection method (see `mdad methods`).")],
    size: Annotated[int, typer.Option(help="Items in the micro-benchmark.")],
    out: Annotated[Path, typer.Option(help="The micro-benchmark file to write (JSON).")],
    seed: Annotated[int, typer.Option(help="Seed of the selection.")] = 0,
    pool: Annotated[Path | None, typer.Option(
        help="File of item ids (one per line) to select from; default all items.")] = None,
    run: Annotated[Path | None, typer.Option(
        help="A finished `mdad run` folder giving the method's MDAD at this size.")] = None,
    output_format: Annotated[str, typer.Option(
        "--format", help="mdad, or lm-eval: also write OUT.samples.json for "
                         "lm-evaluation-harness's --samples.")] = "mdad",
    missing: Annotated[MissingPolicy, typer.Option(help="Missing cells, as in `mdad run`."
                                                   )] = MissingPolicy.DROP_ITEMS,
    other_version: OtherVersion = False,
) -> None:
    """Build a micro-benchmark from all of a dataset's models and write it to OUT."""
    from mdad.practice import lm_eval_samples_json, plan, select_microbenchmark

    if output_format not in ("mdad", "lm-eval"):
        raise ConfigError(f"--format must be mdad or lm-eval; got {output_format!r}")
    data = load_dataset(dataset, missing=missing)
    run_mdad = (plan(data, size=size, method=method, run_dir=run,
                     allow_other_version=other_version).mdad if run is not None else None)
    pool_ids = read_name_list(pool, option="--pool") if pool is not None else None
    bundle = select_microbenchmark(data, method, size, seed=seed, pool=pool_ids,
                                   run_mdad=run_mdad)
    samples = lm_eval_samples_json(bundle) if output_format == "lm-eval" else None
    bundle.save(out)
    console = Console()
    console.print(f"wrote {out}: {size} items by {method} (seed {seed}) from "
                  f"{bundle.pool_size} items of {data.name}; MDAD {_points(bundle.mdad)} "
                  f"points ({bundle.mdad_how})")
    if bundle.mdad_how == "random-analytic":
        console.print(f"note: {method} has no MDAD without --run; this is uniform random "
                      "sampling's at the same size")
    if samples is not None:
        samples_path = out.with_suffix(".samples.json")
        samples_path.write_text(json.dumps(samples) + "\n", encoding="utf-8")
        console.print(f"wrote {samples_path}: lm_eval ... --samples {samples_path}")


@user_errors
def estimate(
    microbenchmark: Annotated[Path, typer.Argument(help="A file written by `mdad select`.")],
    results: Annotated[Path, typer.Argument(
        help="One model's results: an lm-eval --log_samples folder or file, or a CSV of "
             "item_id,correct.")],
    metric: Annotated[str | None, typer.Option(
        help="lm-eval metric field (default: the dataset's).")] = None,
    dataset: Annotated[str | None, typer.Option(
        help="Compare with this dataset's models now, instead of those saved in the "
             "file; its data must be the version the file was made from.")] = None,
    other_version: OtherVersion = False,
    as_json: JsonOption = False,
) -> None:
    """Estimate a model's full-benchmark accuracy and where it stands."""
    from mdad.practice import MicroBenchmarkFile, estimate_score, read_results, with_reference

    bundle = MicroBenchmarkFile.load(microbenchmark)
    if dataset is not None:
        data = load_dataset(dataset)
        bundle, warning = with_reference(bundle, data, allow_other_version=other_version)
        if warning:
            Console(stderr=True).print(f"[yellow]warning:[/] {warning}")
    scores = read_results(results, bundle, metric=metric)
    answer = estimate_score(bundle, scores)
    if as_json:
        _print_json(answer)
        return
    console = Console()
    _report_mismatch(console, results, scores, bundle.size)
    console.print(f"{answer.model}: estimated accuracy {_points(answer.accuracy)} "
                  f"(95% interval {_points(answer.low)} to {_points(answer.high)}) on "
                  f"{bundle.dataset}, from {answer.items_used} items")
    console.print(f"against the dataset's {len(bundle.reference_models)} models, with MDAD "
                  f"{_points(answer.mdad)} points at this size ({answer.mdad_how}): reliably "
                  f"above {len(answer.above)}, reliably below {len(answer.below)}, too close "
                  f"to call {len(answer.too_close)}")
    for label, names in (("reliably above", answer.above), ("reliably below", answer.below),
                         ("too close to call", answer.too_close)):
        if names:
            shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5
                                            else "")
            console.print(f"  {label}: {shown}")


def _report_mismatch(console: Console, path: Path, scores, size: int) -> None:
    if scores.missing:
        console.print(f"note: {path} lacks {len(scores.missing)} of the {size} items (e.g. "
                      f"{scores.missing[0]}); the estimate uses the rest")
    if scores.extra:
        console.print(f"note: {path} has {scores.extra} items that are not in the "
                      "micro-benchmark; they were ignored")


@user_errors
def compare(
    microbenchmark: Annotated[Path, typer.Argument(help="A file written by `mdad select`.")],
    results_a: Annotated[Path, typer.Argument(help="First model's results.")],
    results_b: Annotated[Path, typer.Argument(help="Second model's results.")],
    metric: Annotated[str | None, typer.Option(help="lm-eval metric field.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Is the gap between two models on a micro-benchmark real?"""
    from mdad.practice import MicroBenchmarkFile, compare_models, read_results

    bundle = MicroBenchmarkFile.load(microbenchmark)
    first = read_results(results_a, bundle, metric=metric)
    second = read_results(results_b, bundle, metric=metric)
    answer = compare_models(bundle, first, second)
    if as_json:
        _print_json(answer)
        return
    console = Console()
    _report_mismatch(console, results_a, first, bundle.size)
    _report_mismatch(console, results_b, second, bundle.size)
    console.print(f"{answer.first} - {answer.second}: {_points(answer.difference)} points "
                  f"(95% interval {_points(answer.low)} to {_points(answer.high)}) on "
                  f"{answer.items_used} items; right only for the first {answer.only_first}, "
                  f"only for the second {answer.only_second}; exact McNemar p = "
                  f"{answer.p_value:.3g}")
    console.print(f"verdict: {answer.verdict} (MDAD at this size {_points(answer.mdad)} "
                  "points)")
