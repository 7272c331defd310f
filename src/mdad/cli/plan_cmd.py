"""`mdad plan`: the size a micro-benchmark needs, or the MDAD of a size."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mdad.cli.errors import literal, literal_console, user_errors
from mdad.cli.practice_common import (
    JsonOption,
    OtherVersion,
    few_pairs_note,
    load_practice_data,
    mdad_text,
    note,
    points,
    print_json,
)
from mdad.data.choices import MissingPolicy
from mdad.defaults import DEFAULT_THRESHOLD
from mdad.display import given_points

FEW_PAIRS = 30  # fewer differing pairs than this: the MDAD rests on few pairs


@user_errors
def plan(
    dataset: Annotated[str, typer.Argument(help="A dataset name or path (as `mdad run`).")],
    gap: Annotated[float | None, typer.Option(
        help="Accuracy gap to detect, as a fraction (0.02 = 2 points): prints the size "
             "needed.")] = None,
    size: Annotated[str | None, typer.Option(
        help="Micro-benchmark size, or 'all' (the whole benchmark): prints its "
             "MDAD.")] = None,
    method: Annotated[str, typer.Option(
        help="random or subtask-equal (analytic); any other method needs --run.")] = "random",
    run: Annotated[Path | None, typer.Option(
        help="A finished `mdad run` folder whose MDAD curve to interpolate.")] = None,
    against: Annotated[str, typer.Option(
        help="What the MDAD is measured against: full (the whole benchmark, finite "
             "population correction; a study's seen split) or universe (the task the "
             "benchmark samples, no correction; a study's unseen split).")] = "full",
    target_models: Annotated[Path | None, typer.Option(
        help="Models (one name per line) whose comparisons the size should settle.")] = None,
    threshold: Annotated[float, typer.Option(help="Agreement probability defining "
                                             "MDAD.")] = DEFAULT_THRESHOLD,
    metric: Annotated[str | None, typer.Option(
        help="lm-eval metric field, for an lm-eval samples folder (as `mdad run`).")] = None,
    missing: Annotated[MissingPolicy, typer.Option(help="Missing cells, as in `mdad run`."
                                                   )] = MissingPolicy.DROP_ITEMS,
    other_version: OtherVersion = False,
    as_json: JsonOption = False,
) -> None:
    """How many items a micro-benchmark needs for a gap, or the MDAD of a size."""
    from mdad.data.files import read_name_list
    from mdad.practice import plan as make_plan

    data = load_practice_data(dataset, missing=missing, metric=metric)
    names = read_name_list(target_models, option="--target-models") if target_models else None
    answer = make_plan(data, gap=gap, size=size, method=method, study_dir=run,
                       target_models=names, threshold=threshold,
                       allow_other_version=other_version, against=against)
    if answer.study_data_note:  # allowed, but never silent
        from rich.console import Console

        from mdad.cli.errors import as_options

        warning = as_options(answer.study_data_note, ("study_dir",))
        Console(stderr=True).print(f"[yellow]warning:[/] {literal(warning)}",
                                   highlight=False, soft_wrap=True)
    _degenerate_notes(answer)
    if as_json:
        print_json(answer)
        return
    console = literal_console()
    console.print(f"{_answer_text(answer, method)} ({data.name}, {_source_text(answer, run)})")
    console.print(_against_text(answer, data.matrix.n_items))
    pairs = answer.target_pairs
    if pairs is not None and not answer.measurable:
        console.print(f"Which of the {pairs:,} pairwise comparison{'s' if pairs != 1 else ''} "
                      "of the target models it settles cannot be said: no MDAD can be "
                      "measured.")
    elif answer.settled_share is not None:
        console.print(f"It settles {answer.settled_share:.0%} of the {pairs:,} pairwise "
                      f"comparison{'s' if pairs != 1 else ''} of the target models (their "
                      "gap is at least the MDAD)"
                      + ("; none, since the MDAD is not reached." if not answer.reached
                         else "."))


def _degenerate_notes(answer) -> None:
    """Say plainly when no pair of models differs, or few do."""
    if not answer.measurable and answer.differing_pairs is None:  # from a study
        from mdad.metrics.mdad import MIN_CROSSING_PAIRS

        note("the study's notes say no MDAD can be measured at the rows this answer is "
             f"interpolated from: fewer than {MIN_CROSSING_PAIRS} of its target pairs "
             "differ there; rerun the study with more targets or runs")
    elif answer.thin:
        note("the study flagged the rows this answer is interpolated from: their MDAD "
             "rests on few pairs, or almost no target pair differs (see its notes); the "
             "value can move by several points with the seed: rerun the study with more "
             "runs or targets")
    elif answer.differing_pairs is None:  # interpolated from a study
        few_pairs_note(answer.pairs, answer.crossing_pairs)
    elif answer.pairs == 0:
        note("there is no pair of models (fewer than 2 models): MDAD cannot be measured")
    elif answer.differing_pairs == 0:
        note(f"no pair of models differs (all {answer.pairs:,} pairs have the same accuracy): "
             "MDAD cannot be measured")
    elif answer.differing_pairs < FEW_PAIRS:
        note(f"only {answer.differing_pairs} of {answer.pairs:,} pairs of models differ; the "
             "MDAD rests on few pairs")  # and so on a bin of fewer: one note says both
    else:
        few_pairs_note(answer.pairs, answer.crossing_pairs)


def _answer_text(answer, method: str) -> str:
    # where none can be measured, no value and no "> x" bound stands for the MDAD
    mdad = (mdad_text(answer.mdad, answer.max_gap, answer.how) if answer.measurable
            else "not measurable")
    pairs = f", from {answer.pairs:,} model pairs" if answer.pairs is not None else ""
    if answer.gap is not None and answer.size is None:
        largest = "the whole benchmark" if answer.how == "analytic" else "the study's sizes"
        if not answer.measurable:
            return (f"No size up to {largest} can be said to reach a gap of "
                    f"{given_points(answer.gap)} points with {method}: no MDAD can be "
                    f"measured at the largest{pairs}.")
        return (f"No size up to {largest} reaches a gap of {given_points(answer.gap)} "
                f"points with {method}: its MDAD at the largest is {mdad}{pairs}.")
    if answer.gap is not None and answer.max_gap is not None and answer.gap > answer.max_gap:
        # No pair is that far apart: the claim could not be checked on any pair.
        whose = "models" if answer.how == "analytic" else "of the study's target models"
        return (f"{method}: no two {whose} are {given_points(answer.gap)} points apart (the "
                f"largest gap is {points(answer.max_gap)}); {answer.size} items is the "
                f"smallest size whose MDAD is reached at all (MDAD {mdad}{pairs}).")
    if answer.gap is not None:
        return (f"{method}: {answer.size} items rank pairs {given_points(answer.gap)} or more "
                f"points apart correctly with probability >= {answer.threshold:.0%} "
                f"(MDAD {mdad}{pairs}).")
    if not answer.measurable:
        return f"{method}, {answer.size} items: no MDAD can be measured{pairs}."
    return (f"{method}, {answer.size} items: MDAD {mdad} at {answer.threshold:.0%} "
            f"agreement{pairs}.")


def _source_text(answer, run: Path | None) -> str:
    if answer.how == "analytic":
        return "computed analytically from every pair of models"
    return (f"interpolated from the {answer.split} split of the study of "
            f"{answer.study_dataset} in {run}")


def _against_text(answer, n_items: int) -> str:
    if answer.how != "analytic":
        pool = "its seen pool" if answer.split == "seen" else "its unseen items"
        return (f"Measured against {pool}: the study ranks pairs by their accuracy on the "
                f"{answer.split} split (--against sets only an analytic MDAD's reference).")
    if answer.against == "universe":
        return ("Measured against the universe: the benchmark is taken as a sample of its "
                "task (items drawn with replacement, no finite population correction).")
    return (f"Measured against the full benchmark: pairs ranked as all {n_items} items rank "
            "them (finite population correction); --against universe treats the benchmark "
            "as a sample of its task.")
