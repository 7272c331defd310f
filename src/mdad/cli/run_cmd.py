"""`mdad run`: the paper's study on one dataset."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from mdad import __version__
from mdad.cli.errors import parse_int_list, user_errors
from mdad.cli.render import study_table
from mdad.data import MissingPolicy, Orientation, load_dataset
from mdad.data.files import read_name_list
from mdad.metrics import MdadEstimator
from mdad.study import DEFAULT_METHODS, DEFAULT_SIZES, StudyConfig, evaluate, plan_study, run_study
from mdad.study.outputs import check_out_dir, run_config, write_run_dir


@user_errors
def run(
    dataset: Annotated[str, typer.Argument(help="A dataset name (gpqa, mmlu-pro-29) or a path "
                                           "to a CSV, lm-eval samples folder or .npy arrays.")],
    methods: Annotated[str, typer.Option(help="Selection methods, comma separated.")] = ",".join(
        DEFAULT_METHODS),
    sizes: Annotated[str | None, typer.Option(
        help="Micro-benchmark sizes, comma separated. Default: the dataset's grid (GPQA: "
             "10,25,50,100,200) or " + ",".join(map(str, DEFAULT_SIZES))
             + ", minus sizes above the seen pool.")] = None,
    runs: Annotated[int, typer.Option(help="Independent runs.")] = 50,
    targets: Annotated[int | None, typer.Option(help="Target models drawn per run "
                                                "(default 50; mmlu-pro-29: 10).")] = None,
    sources: Annotated[str | None, typer.Option(
        help="Source-model counts, comma separated, e.g. 10,50,100,150,200,250,300 "
             "(default 300; mmlu-pro-29: 19).")] = None,
    target_models: Annotated[Path | None, typer.Option(
        help="File of target model names, one per line, used in every run instead of "
             "random draws.")] = None,
    threshold: Annotated[float, typer.Option(help="Agreement probability defining MDAD.")] = 0.8,
    seed: Annotated[int, typer.Option(help="Seed of every random draw.")] = 0,
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples for intervals.")] = 1000,
    mdad_estimator: Annotated[MdadEstimator, typer.Option(
        help="first-crossing: the paper's MDAD only; smooth: also a monotone fit with a "
             "bootstrap over runs (mdad_smooth.csv).")] = MdadEstimator.FIRST_CROSSING,
    missing: Annotated[MissingPolicy, typer.Option(
        help="Missing cells: drop the items or the models that have them, or stop."
    )] = MissingPolicy.DROP_ITEMS,
    orientation: Annotated[Orientation, typer.Option(help="Wide CSV layout.")] = Orientation.AUTO,
    metric: Annotated[str, typer.Option(help="lm-eval metric field: acc, acc_norm, "
                                        "exact_match.")] = "acc",
    out: Annotated[Path | None, typer.Option(
        help="Output folder (default runs/<dataset>-<timestamp>).")] = None,
) -> None:
    """Run the micro-benchmark reliability study and report MDAD per method and size."""
    err = Console(stderr=True)
    if out is not None:
        check_out_dir(out)
    options: dict = {"metric": metric}
    if orientation is not Orientation.AUTO:
        options["orientation"] = orientation
    data = load_dataset(dataset, missing=missing, **options)
    if note := data.missing.describe():
        err.print(f"[yellow]note:[/] {note}")
    spec = data.spec
    config = StudyConfig(
        methods=tuple(m.strip() for m in methods.split(",") if m.strip()),
        sizes=parse_int_list(sizes, "--sizes") if sizes is not None else None,
        n_runs=runs,
        n_targets=targets if targets is not None else (spec.n_targets if spec and spec.n_targets
                                                       else 50),
        sources=(parse_int_list(sources, "--sources") if sources is not None
                 else ((spec.n_sources,) if spec and spec.n_sources else (300,))),
        target_models=(read_name_list(target_models, option="--target-models")
                       if target_models is not None else None),
        threshold=threshold,
        seed=seed,
        n_resamples=resamples,
        mdad_estimator=mdad_estimator,
    )
    plan = plan_study(data.matrix, config,
                      default_sizes=spec.sizes if spec and spec.sizes else DEFAULT_SIZES)
    for notice in plan.notices:
        err.print(f"[yellow]note:[/] {notice}")
    out_dir = out or Path("runs") / f"{data.name}-{datetime.now():%Y%m%d-%H%M%S}"
    check_out_dir(out_dir)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=True) as bar:
        task = bar.add_task(f"{data.name}: cells", total=plan.n_cells)
        result = run_study(data.matrix, plan,
                           progress=lambda done, total: bar.update(task, completed=done))
        bar.update(task, description=f"{data.name}: MDAD bootstrap")
        tables = evaluate(result)
    config_json = run_config(data, result, version=__version__, command=sys.argv)
    write_run_dir(out_dir, result, tables, config_json)
    title = (f"{data.name}: {data.matrix.n_models} models x {data.matrix.n_items} items, "
             f"{runs} runs, {plan.n_targets} targets (MDAD and error in accuracy points)")
    console = Console()
    if not console.is_terminal:
        console = Console(width=160)
    console.print(study_table(tables.mdad, tables.summary, title, tables.mdad_smooth))
    if config_json["confidence_substituted_by_correctness"]:
        console.print("* no confidences in this data: "
                      f"{', '.join(config_json['confidence_substituted_by_correctness'])} "
                      "used correctness in their place")
    console.print(f"wrote {out_dir}")
