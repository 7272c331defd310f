"""`mdad select`: build a micro-benchmark and write it to a file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from mdad.cli.errors import user_errors
from mdad.cli.practice_common import OtherVersion, points
from mdad.data import MissingPolicy, load_dataset
from mdad.data.files import read_name_list
from mdad.errors import ConfigError


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
                  f"{bundle.pool_size} items of {data.name}; MDAD {points(bundle.mdad)} "
                  f"points ({bundle.mdad_how})")
    if bundle.mdad_how == "random-analytic":
        console.print(f"note: {method} has no MDAD without --run; this is uniform random "
                      "sampling's at the same size")
    if samples is not None:
        samples_path = out.with_suffix(".samples.json")
        samples_path.write_text(json.dumps(samples) + "\n", encoding="utf-8")
        console.print(f"wrote {samples_path}: lm_eval ... --samples {samples_path}")
