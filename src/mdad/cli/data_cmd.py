"""`mdad data ...`: look at a results file before studying it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from mdad.cli.errors import literal, user_errors
from mdad.cli.render import info_table
from mdad.data.wide_csv import Orientation

if TYPE_CHECKING:
    from mdad.data.lm_eval import LmEvalFiles

app = typer.Typer(help="Inspect results files and named datasets.", no_args_is_help=True,
                  rich_markup_mode=None)


@app.command("info")
@user_errors
def info(
    dataset: Annotated[str, typer.Argument(help="A dataset name (gpqa, mmlu-pro-29) or a path.")],
    orientation: Annotated[Orientation, typer.Option(help="Wide CSV layout.")] = Orientation.AUTO,
    metric: Annotated[str | None, typer.Option(
        help="lm-eval metric field: acc, acc_norm, exact_match (default: acc).")] = None,
) -> None:
    """Models, items, subtasks, accuracy range, missing cells, confidences."""
    from mdad.data import describe, read_dataset
    from mdad.data.lm_eval import holds_lm_eval_samples, lm_eval_files

    raw = read_dataset(dataset, metric=metric,
                       orientation=None if orientation is Orientation.AUTO else orientation)
    summary = describe(raw.matrix)
    console = Console()
    console.print(info_table(summary))
    console.print(f"sha256 {summary.sha256}", soft_wrap=True)
    if raw.spec is None and holds_lm_eval_samples(raw.path):
        print_lm_eval_files(console, lm_eval_files(raw.path))


def print_lm_eval_files(console: Console, found: LmEvalFiles) -> None:
    """The sample files read per model (oldest first within a task), and the hidden
    folders skipped."""
    from mdad.data.lm_eval import task_of

    several = sum(len(files) > len({task_of(f) for f in files})
                  for files in found.models.values())
    merged = (f"; {_count(several, 'model has', 'models have')} several files of a task, "
              "merged by doc_id, the newest timestamp winning for a doc in several"
              if several else "")
    console.print(f"files read, per model{merged}:", soft_wrap=True, highlight=False)
    for model, files in found.models.items():
        console.print(f"  {literal(model)}", soft_wrap=True, highlight=False)
        for file in files:
            console.print(f"    {literal(file.name)}", soft_wrap=True, highlight=False)
    if found.hidden:
        skipped = _count(len(found.hidden), "hidden folder", "hidden folders")
        console.print(f"note: skipped {skipped} (names starting with '.'): "
                      f"{literal(', '.join(found.hidden))}", soft_wrap=True, highlight=False)


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"
