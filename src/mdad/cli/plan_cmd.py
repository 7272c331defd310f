"""`mdad plan`: the size a micro-benchmark needs, or the MDAD of a size."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from mdad.cli.errors import user_errors
from mdad.cli.practice_common import JsonOption, OtherVersion, points, print_json
from mdad.data import MissingPolicy, load_dataset
from mdad.data.files import read_name_list


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
        print_json(answer)
        return
    source = ("computed analytically from every pair of models" if answer.how == "analytic"
              else f"interpolated from the study in {run}")
    if answer.gap is not None and answer.size is None:
        largest = "the whole benchmark" if answer.how == "analytic" else "the study's sizes"
        text = (f"No size up to {largest} reaches a gap of {points(answer.gap)} points "
                f"with {method}: its MDAD at the largest is {points(answer.mdad)}.")
    elif answer.gap is not None:
        text = (f"{method}: {answer.size} items rank pairs {points(answer.gap)} or more "
                f"points apart correctly with probability >= {answer.threshold:.0%} "
                f"(MDAD {points(answer.mdad)}).")
    else:
        text = (f"{method}, {answer.size} items: MDAD {points(answer.mdad)} points at "
                f"{answer.threshold:.0%} agreement.")
    Console().print(f"{text} ({data.name}, {source})")
    if answer.settled_share is not None:
        Console().print(f"It settles {answer.settled_share:.0%} of the target models' "
                        "pairwise comparisons (their gap is at least the MDAD).")
