"""`mdad data ...`: look at a results file before studying it."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from mdad.cli.errors import user_errors
from mdad.cli.render import info_table
from mdad.data import Orientation, describe, locate, read_results

app = typer.Typer(help="Inspect results files and named datasets.", no_args_is_help=True)


@app.command("info")
@user_errors
def info(
    dataset: Annotated[str, typer.Argument(help="A dataset name (gpqa, mmlu-pro-29) or a path.")],
    orientation: Annotated[Orientation, typer.Option(help="Wide CSV layout.")] = Orientation.AUTO,
    metric: Annotated[str, typer.Option(help="lm-eval metric field: acc, acc_norm, exact_match."
                                        )] = "acc",
) -> None:
    """Models, items, subtasks, accuracy range, missing cells, confidences."""
    path, spec = locate(dataset)
    options = dict(spec.read_options) if spec else {}
    if orientation is not Orientation.AUTO or "orientation" not in options:
        options["orientation"] = orientation
    matrix = read_results(path, metric=metric, **options)
    summary = describe(matrix)
    console = Console()
    console.print(info_table(summary))
    console.print(f"sha256 {summary.sha256}", soft_wrap=True)
