"""Options and output helpers shared by the practitioner commands."""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from mdad.cli.errors import literal
from mdad.cli.render import load_notices
from mdad.data.choices import MissingPolicy
from mdad.display import points

if TYPE_CHECKING:
    from pathlib import Path

    from mdad.data import Dataset
    from mdad.practice import Comparison, Estimate, MicroBenchmarkFile

JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object instead.")]
OtherVersion = Annotated[bool, typer.Option(
    "--allow-other-data-version",
    help="Use a --run made on a different version of the data (its sha256 differs).")]
AllowPartial = Annotated[bool, typer.Option(
    "--allow-partial",
    help="Judge from the items actually answered when some are missing (the estimate, "
         "its interval, the MDAD and every verdict are then for that many items).")]
AllowMixedSettings = Annotated[bool, typer.Option(
    "--allow-mixed-settings",
    help="Read lm-eval results whose runs differ in n-shot as they are (refused by "
         "default; a note says what was mixed).")]
AllowOtherMetric = Annotated[bool, typer.Option(
    "--allow-other-metric",
    help="Accept a --metric other than the one the micro-benchmark was built on.")]


def print_json(value: object) -> None:
    typer.echo(json.dumps(dataclasses.asdict(value) if dataclasses.is_dataclass(value)
                          else value, indent=1))


def note(message: str) -> None:
    """A note on stderr, as `mdad run` prints them; left to the terminal to wrap, so
    a path in it stays whole."""
    Console(stderr=True).print(f"[yellow]note:[/] {literal(message)}", highlight=False,
                               soft_wrap=True)



def random_mdad_note(method: str, dataset: str, size: int) -> None:
    """For a file whose method has no analytic MDAD and was selected without `--run`:
    its verdicts are judged against uniform random sampling's MDAD; the commands that
    give the method's own (soft-wrapped: they are meant to be copied)."""
    import shlex

    note(f"{method} has no analytic MDAD, and this file was selected without --run: its "
         f"MDAD, and every verdict judged against it, is uniform random sampling's at "
         f"{size} items, not {method}'s own. For its own, run the study and select "
         f"with it: mdad run {shlex.quote(dataset)} --methods {method} --out RUN_DIR, then "
         f"mdad select {shlex.quote(dataset)} --method {method} --size {size} --run RUN_DIR "
         "--out FILE")

def load_practice_data(dataset: str, *, missing: MissingPolicy = MissingPolicy.DROP_ITEMS,
                       metric: str | None = None,
                       allow_mixed_settings: bool = False) -> Dataset:
    """Load `dataset` as `mdad run` does and print its missing-data drop notice.

    Raises
    ------
    ConfigError
        When `metric` does not apply to the data (a named dataset holds its own
        metric's scores only; a CSV has no metric).
    """
    from mdad.data import load_dataset

    # None, not False: only the lm-eval loader knows the option
    data = load_dataset(dataset, missing=missing, metric=metric,
                        allow_mixed_settings=True if allow_mixed_settings else None)
    for message in load_notices(data):
        note(message)
    return data


def data_metric(data: Dataset, metric: str | None) -> str:
    """The metric `data` was read with: `metric`, else the dataset's own, else acc."""
    return metric or (data.spec.lm_eval_metric if data.spec else "acc")


def mdad_text(value: float | None, max_gap: float | None, how: str = "analytic") -> str:
    """'5.0 points', or the censored 'not reached within the observed gaps (> 13.5
    points, ...)'; `how` the MDAD was found says whose gaps those are."""
    if value is not None:
        return f"{points(value)} points"
    whose = "the dataset's models" if how == "analytic" else "the study's target models"
    bound = f" (> {points(max_gap)} points, the largest gap between {whose})" \
        if max_gap is not None else ""
    return f"not reached within the observed gaps{bound}"


def few_pairs_note(pairs: int | None, crossing_pairs: int | None = None) -> None:
    """Say so when an MDAD rests on fewer model pairs than a study's row needs to be
    trusted without a warning, as `mdad run`'s notes do: fewer than `MIN_GROUP_PAIRS`
    in all, or a value set by a gap bin of fewer than `MIN_CROSSING_PAIRS` (0: not
    reached, nothing to say)."""
    from mdad.metrics.mdad import MIN_CROSSING_PAIRS, MIN_GROUP_PAIRS

    tentative = ("another set of models or another study could move it by several "
                 "points, so take its verdicts as tentative")
    if pairs is not None and pairs < MIN_GROUP_PAIRS:
        note(f"the MDAD rests on only {pairs} model pair{'s' * (pairs != 1)} (fewer than "
             f"{MIN_GROUP_PAIRS:,}): {tentative}")
    elif crossing_pairs and crossing_pairs < MIN_CROSSING_PAIRS:
        in_all = f"; {pairs:,} pairs in all" if pairs is not None else ""
        note(f"the MDAD is set by the {crossing_pairs} model pair"
             f"{'s' * (crossing_pairs != 1)} of its gap bin alone (fewer than "
             f"{MIN_CROSSING_PAIRS}{in_all}): {tentative}")


def file_pairs_note(path: Path, bundle: MicroBenchmarkFile,
                    answer: Estimate | Comparison) -> None:
    """`few_pairs_note` for an estimate or comparison from the micro-benchmark file at
    `path`, and a note when the file is too old to say how many pairs set its MDAD."""
    from mdad.practice.bundle_format import OLDER_FORMAT

    few_pairs_note(answer.mdad_pairs, answer.mdad_crossing_pairs)
    if (answer.mdad is not None and answer.mdad_crossing_pairs is None
            and bundle.format == OLDER_FORMAT and answer.mdad_how != "interpolated"):
        note(f"{path} (format {OLDER_FORMAT}) does not record how many model pairs set its "
             "MDAD, and a handful can (GPQA's 10-item MDAD rests on 3 of 87,990): select "
             "again to see")


def mdad_source(how: str, pairs: int | None) -> str:
    """Where an MDAD comes from and the model pairs behind it: 'analytic, 87,990 model
    pairs'."""
    return f"{how}, {pairs:,} model pairs" if pairs is not None else (
        f"{how}, pair count not recorded by the study")


__all__ = [
    "AllowMixedSettings",
    "AllowOtherMetric",
    "AllowPartial",
    "JsonOption",
    "OtherVersion",
    "data_metric",
    "file_pairs_note",
    "load_practice_data",
    "mdad_source",
    "mdad_text",
    "note",
    "points",
    "print_json",
    "random_mdad_note",
]


def censored_ends_note(answer) -> None:
    """An interval end at the calibration's reach is censored: the data say nothing
    past it, so it is no bound (`answer`: an `Estimate` or an `AdaptiveEstimate`)."""
    if answer.high_censored:
        note(f"the interval's upper end, {points(answer.high)}, is only where the "
             "calibration stops (one range past the strongest reference model): read it "
             f"as at least {points(answer.low)}, with no upper bound from the data")
    if answer.low_censored:
        note(f"the interval's lower end, {points(answer.low)}, is only where the "
             "calibration stops (one range below the weakest reference model): read it "
             f"as at most {points(answer.high)}, with no lower bound from the data")
