"""`mdad estimate` and `mdad compare`: a new model's results on a saved micro-benchmark."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from mdad.cli.errors import user_errors
from mdad.cli.practice_common import JsonOption, OtherVersion, points, print_json
from mdad.data import load_dataset


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
        print_json(answer)
        return
    console = Console()
    _report_mismatch(console, results, scores, bundle.size)
    console.print(f"{answer.model}: estimated accuracy {points(answer.accuracy)} "
                  f"(95% interval {points(answer.low)} to {points(answer.high)}) on "
                  f"{bundle.dataset}, from {answer.items_used} items")
    console.print(f"against the dataset's {len(bundle.reference_models)} models, with MDAD "
                  f"{points(answer.mdad)} points at this size ({answer.mdad_how}): reliably "
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
        print_json(answer)
        return
    console = Console()
    _report_mismatch(console, results_a, first, bundle.size)
    _report_mismatch(console, results_b, second, bundle.size)
    console.print(f"{answer.first} - {answer.second}: {points(answer.difference)} points "
                  f"(95% interval {points(answer.low)} to {points(answer.high)}) on "
                  f"{answer.items_used} items; right only for the first {answer.only_first}, "
                  f"only for the second {answer.only_second}; exact McNemar p = "
                  f"{answer.p_value:.3g}")
    console.print(f"verdict: {answer.verdict} (MDAD at this size {points(answer.mdad)} "
                  "points)")
