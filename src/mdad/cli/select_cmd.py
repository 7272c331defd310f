"""`mdad select`: build a micro-benchmark and write it to a file."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from mdad.cli.errors import literal_console, user_errors
from mdad.cli.files import check_new_file, write_text
from mdad.cli.practice_common import (
    AllowMixedSettings,
    OtherVersion,
    data_metric,
    few_pairs_note,
    load_practice_data,
    mdad_source,
    mdad_text,
    note,
    random_mdad_note,
)
from mdad.data.choices import MissingPolicy
from mdad.errors import ConfigError

# Steps that start this long after the command began are shown on stderr.
PROGRESS_AFTER_SECONDS = 2.0


def delayed_progress(after: float = PROGRESS_AFTER_SECONDS) -> Callable[[int, int, str], None]:
    """A progress callback for `select_microbenchmark` that prints "k of n fits: what"
    on stderr, elapsed seconds included, for each report `after` seconds or more into
    the command (and, once one has been printed, what was under way), so quick
    selections stay silent and long ones show life."""
    start = time.perf_counter()
    under_way: list[str] = []

    def show(done: int, total: int, step: str) -> None:
        elapsed = time.perf_counter() - start
        if done == 0:
            under_way.append(step)
        if elapsed >= after:
            for started in under_way:
                print(f"mdad select: {started}", file=sys.stderr, flush=True)
            under_way.clear()
            if done:
                print(f"mdad select: {done} of {total} fits: {step} ({elapsed:.1f} s)",
                      file=sys.stderr, flush=True)

    return show


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
    metric: Annotated[str | None, typer.Option(
        help="lm-eval metric field, for an lm-eval samples folder (as `mdad run`); "
             "recorded in the file.")] = None,
    missing: Annotated[MissingPolicy, typer.Option(help="Missing cells, as in `mdad run`."
                                                   )] = MissingPolicy.DROP_ITEMS,
    other_version: OtherVersion = False,
    models: Annotated[Path | None, typer.Option(
        "--models", help="File of model names (one per line) to select from; default all "
                         "the dataset's models. The file records how many and which.")] = None,
    allow_mixed_settings: AllowMixedSettings = False,
    force: Annotated[bool, typer.Option(
        "--force", help="Replace OUT (and OUT.samples.json) if they exist.")] = False,
) -> None:
    """Build a micro-benchmark from all of a dataset's models and write it to OUT."""
    from mdad.data.files import read_name_list
    from mdad.practice import lm_eval_samples_json, select_microbenchmark

    if output_format not in ("mdad", "lm-eval"):
        raise ConfigError(f"--format must be mdad or lm-eval; got {output_format!r}")
    check_new_file(out, option="--out", force=force)
    samples_path = out.with_suffix(".samples.json")
    if output_format == "lm-eval":
        check_new_file(samples_path, option="--out (its samples file)", force=force,
                       folder_fix="remove that folder, or choose another --out")
    data = load_practice_data(dataset, missing=missing, metric=metric,
                              allow_mixed_settings=allow_mixed_settings)
    model_names = (read_name_list(models, option="--models", what="model names")
                   if models is not None else None)
    pool_ids = (read_name_list(pool, option="--pool", what="item ids") if pool is not None
                else None)
    bundle = select_microbenchmark(data, method, size, seed=seed, pool=pool_ids,
                                   models=model_names,
                                   study_dir=run, allow_other_version=other_version,
                                   metric=data_metric(data, metric),
                                   progress=delayed_progress(), spawn_worker=True)
    samples = lm_eval_samples_json(bundle) if output_format == "lm-eval" else None
    write_text(out, bundle.to_json())
    console = literal_console()
    against = ("the study's seen split" if bundle.mdad_how == "interpolated"
               else "the full benchmark" if bundle.dataset_items is None
               else f"the pool's {bundle.pool_size} items")
    console.print(f"wrote {out}: {size} items by {method} (seed {seed}) from "
                  f"{bundle.pool_size} items of {data.name} ({bundle.lm_eval_metric}); MDAD "
                  f"{mdad_text(bundle.mdad, bundle.max_gap, bundle.mdad_how)} "
                  f"({mdad_source(bundle.mdad_how, bundle.mdad_pairs)}, "
                  f"against {against})")
    if bundle.dataset_items is not None:
        note(f"the estimate and the MDAD stand for the pool's {bundle.pool_size} items, not "
             f"{data.name}'s {bundle.dataset_items}: a pool chosen by hand is no random "
             "sample of the benchmark")
    for message in bundle.notes:
        note(message)
    if bundle.mdad_how == "random-analytic":
        random_mdad_note(method, dataset, size)
    few_pairs_note(bundle.mdad_pairs, bundle.crossing_pairs_at(bundle.size))
    if not bundle.mdad_reached:
        note("with the MDAD not reached, estimate and compare will call no model reliably "
             "above or below another")
    if bundle.lm_eval_tasks:
        # a command to copy: never wrapped, at any width or through a pipe
        console.print(f"lm-eval tasks: --tasks {','.join(bundle.lm_eval_tasks)}",
                      soft_wrap=True)
    if samples is not None:
        write_text(samples_path, json.dumps(samples) + "\n")
        console.print(f"wrote {samples_path}: lm-eval run ... --tasks "
                      f"{','.join(bundle.lm_eval_tasks or [])} --samples {samples_path} "
                      "--log_samples --output_path RESULTS", soft_wrap=True)
