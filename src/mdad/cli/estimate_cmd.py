"""`mdad estimate` and `mdad compare`: a new model's results on a saved micro-benchmark."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from mdad.cli.errors import literal, literal_console, user_errors
from mdad.cli.practice_common import (
    AllowMixedSettings,
    AllowOtherMetric,
    AllowPartial,
    JsonOption,
    censored_ends_note,
    file_pairs_note,
    load_practice_data,
    mdad_source,
    mdad_text,
    note,
    points,
    print_json,
    random_mdad_note,
)

if TYPE_CHECKING:
    from mdad.practice.results import ItemScores

OtherDatasetVersion = Annotated[bool, typer.Option(
    "--allow-other-data-version",
    help="Accept a --dataset whose data differs from the version the file was made from "
         "(its sha256); a warning says so.")]
MetricOption = Annotated[str | None, typer.Option(
    help="lm-eval metric field (default: the one the micro-benchmark was built on; "
         "another is refused unless --allow-other-metric).")]


@user_errors
def estimate(
    microbenchmark: Annotated[Path, typer.Argument(help="A file written by `mdad select`.")],
    results: Annotated[Path, typer.Argument(
        help="One model's results: an lm-eval --log_samples folder or file, or a CSV of "
             "item_id,correct.")],
    metric: MetricOption = None,
    dataset: Annotated[str | None, typer.Option(
        help="Compare with this dataset's models now, instead of those saved in the "
             "file; its data must be the version the file was made from.")] = None,
    allow_partial: AllowPartial = False,
    allow_other_metric: AllowOtherMetric = False,
    other_version: OtherDatasetVersion = False,
    allow_mixed_settings: AllowMixedSettings = False,
    as_json: JsonOption = False,
) -> None:
    """Estimate a model's full-benchmark accuracy and where it stands."""
    from mdad.practice import (
        MicroBenchmarkFile,
        estimate_score,
        read_model_scores,
        with_reference,
    )
    from mdad.practice.bundle import check_same_benchmark
    from mdad.practice.results import check_metric

    bundle = MicroBenchmarkFile.load(microbenchmark)
    check_metric(bundle, metric, allow_other_metric=allow_other_metric)
    if dataset is not None:
        check_same_benchmark(bundle, dataset)
        from mdad.data import dataset_options

        # the file's metric, where the data has metrics (a CSV's scores are as they are)
        data = load_practice_data(dataset, metric=bundle.lm_eval_metric
                                  if "metric" in dataset_options(dataset) else None)
        bundle, warning = with_reference(bundle, data, allow_other_version=other_version)
        if warning:
            Console(stderr=True).print(f"[yellow]warning:[/] {literal(warning)}")
    scores = read_model_scores(results, bundle, metric=metric,
                               allow_other_metric=allow_other_metric,
                               allow_mixed_settings=allow_mixed_settings)
    answer = estimate_score(bundle, scores, allow_partial=allow_partial)
    file_pairs_note(microbenchmark, bundle, answer)
    _estimate_notes(bundle, answer)
    if as_json:
        print_json(answer)
        return
    console = literal_console()
    _report_mismatch(console, results, scores, bundle.size)
    partial = (f" (PARTIAL: {answer.items_used} of the {answer.size} items answered; "
               "everything below is for those items)" if answer.partial else "")
    console.print(f"{answer.model}: estimated accuracy {points(answer.accuracy)} "
                  f"({answer.confidence:.0%} interval {points(answer.low)} to "
                  f"{points(answer.high)}, {answer.interval_how}) on {bundle.scope()}, from "
                  f"{answer.items_used} items{partial}")
    mdad = mdad_text(answer.mdad, answer.max_gap, answer.mdad_how)
    console.print(f"against the dataset's {len(bundle.reference_models)} models, with MDAD "
                  f"{mdad} at {answer.items_used} items "
                  f"({mdad_source(answer.mdad_how, answer.mdad_pairs)}): reliably above "
                  f"{len(answer.above)} of them, reliably below {len(answer.below)}, too close "
                  f"to call against {len(answer.too_close)}")  # all 0 when none is judged
    # a user reads a whole list at once: say what holds for it
    rate = ("false discovery rate at most "
            f"{answer.list_error_rate:.0%} for each list" if answer.list_error_rate is not None
            else "no error rate for a list as a whole: the interval holds on average only")
    console.print(f"lists ({rate}): {answer.rule}")
    if answer.beyond or answer.unexplained:
        console.print(f"no model is judged above, below or too close: this estimate lies "
                      f"past what the {len(bundle.reference_models)} models give (see the "
                      "note), so no list can rest on it")
    elif not answer.mdad_reached:
        console.print("no model is reliably above or below: the MDAD is not reached at this "
                      "size, so no gap on these items is reliable")
    for label, names in (("reliably above", answer.above), ("reliably below", answer.below),
                         ("too close to call", answer.too_close)):
        if names:
            shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5
                                            else "")
            console.print(f"  {label}: {shown}")


def _estimate_notes(bundle, answer) -> None:
    """What the interval cannot vouch for: a model beyond the reference models, a file
    selected from some of the dataset's models."""
    if answer.unexplained:
        note("no accuracy explains this estimate: the micro-benchmark read this model unlike "
             "any of the models it was calibrated on, so the interval is the whole range it "
             "speaks for and no model is listed above or below")
    elif answer.beyond:
        belt = bundle.calibration()
        note("even the strongest (or weakest) of the models the interval was calibrated "
             f"on would rarely give this estimate (their accuracies {points(belt.lowest)} "
             f"to {points(belt.highest)}): this model may lie beyond the reference models, "
             "where the interval extrapolates (on an assumption about how the error goes "
             "on), and no model is listed above or below; "
             "`mdad compare` tests one pair")
    if not answer.unexplained:  # whose note says the interval is all the belt speaks for
        censored_ends_note(answer)
    if bundle.subset_note():
        note(f"the micro-benchmark was {bundle.subset_note()}")
    if answer.mdad_how == "random-analytic":
        random_mdad_note(bundle.method, bundle.dataset, bundle.size)


def _report_mismatch(console: Console, path: Path, scores, size: int) -> None:
    for message in scores.notes:
        note(f"{path}: {message}")
    if scores.missing:
        note(f"{path} lacks {len(scores.missing)} of the {size} items (e.g. "
             f"{scores.missing[0]})")
    if scores.extra:
        note(f"{path} has {scores.extra} items that are not in the micro-benchmark; they "
             "were ignored")


@user_errors
def compare(
    microbenchmark: Annotated[Path, typer.Argument(help="A file written by `mdad select`.")],
    results_a: Annotated[Path, typer.Argument(help="First model's results.")],
    results_b: Annotated[Path, typer.Argument(help="Second model's results.")],
    metric: MetricOption = None,
    allow_partial: AllowPartial = False,
    allow_other_metric: AllowOtherMetric = False,
    allow_mixed_settings: AllowMixedSettings = False,
    as_json: JsonOption = False,
) -> None:
    """Is the gap between two models on a micro-benchmark real?"""
    from mdad.practice import MicroBenchmarkFile, compare_models, read_model_scores

    bundle = MicroBenchmarkFile.load(microbenchmark)
    first, second = (read_model_scores(path, bundle, metric=metric,
                                       allow_other_metric=allow_other_metric,
                                       allow_mixed_settings=allow_mixed_settings)
                     for path in (results_a, results_b))
    first, second = _told_apart(first, results_a, second, results_b)
    answer = compare_models(bundle, first, second, allow_partial=allow_partial)
    file_pairs_note(microbenchmark, bundle, answer)
    if as_json:
        print_json(answer)
        return
    console = literal_console()
    _report_mismatch(console, results_a, first, bundle.size)
    _report_mismatch(console, results_b, second, bundle.size)
    partial = (f" (PARTIAL: {answer.items_used} of the {answer.size} items both answered)"
               if answer.partial else "")
    console.print(f"{answer.first} - {answer.second}: {points(answer.difference)} points "
                  f"(paired {answer.confidence:.0%} interval {points(answer.low)} to "
                  f"{points(answer.high)}) on {answer.items_used} items{partial}; right only "
                  f"for the first {answer.only_first}, only for the second "
                  f"{answer.only_second}; exact McNemar p = {answer.p_value:.3g}")
    verdict = (f"{answer.winner} is reliably better" if answer.winner is not None
               else f"too close to call: {answer.reason}")
    console.print(f"verdict: {verdict} (MDAD at {answer.items_used} items "
                  f"{mdad_text(answer.mdad, answer.max_gap, answer.mdad_how)}, "
                  f"{mdad_source(answer.mdad_how, answer.mdad_pairs)}; rule at "
                  f"{answer.confidence:.0%} confidence: {answer.rule})")


def _told_apart(first: ItemScores, path_a: Path, second: ItemScores, path_b: Path
                ) -> tuple[ItemScores, ItemScores]:
    """The two results named so that a verdict names one of them: by their paths when
    their models' names clash (two folders of one model name), with a note."""
    from dataclasses import replace

    if first.model != second.model:
        return first, second
    a, b = str(path_a), str(path_b)
    if a == b:
        a, b = f"{a} (first)", f"{a} (second)"
    note(f"both results name the model {first.model!r}; they are named by their paths: "
         f"{a} and {b}")
    return replace(first, model=a), replace(second, model=b)
