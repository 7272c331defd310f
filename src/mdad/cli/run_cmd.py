"""`mdad run`: the paper's study on one dataset."""

from __future__ import annotations

import inspect
import shutil
import signal
import sys
import time
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from mdad import __version__
from mdad.cli.errors import (
    available_cores,
    literal,
    parse_float_list,
    parse_int_list,
    user_errors,
)
from mdad.cli.render import load_notices, study_table
from mdad.data import MissingPolicy, Orientation, load_dataset
from mdad.data.files import read_name_list
from mdad.errors import ConfigError, DataError
from mdad.study import (
    ALL_TARGETS,
    DEFAULT_METHODS,
    DEFAULT_SIZES,
    StudyConfig,
    evaluate,
    expand_methods,
    plan_study,
    run_study,
)
from mdad.study.checkpoint import RunCheckpoint, progress_dir
from mdad.study.outputs import check_out_dir, remove_stale_staging, run_config, write_run_dir
from mdad.study.subtasks import (
    PAPER_FRACTIONS,
    POOLED,
    collect_per_subtask,
    plan_per_subtask,
    run_per_subtask,
)
from mdad.study.trust import thin_data_notices


class Backend(StrEnum):
    LOCAL = "local"
    DASK = "dask"


# Run folders being resumed by this process (see `_resume`).
_RESUMING: set[str] = set()


def _parse_targets(text: str | int) -> int | Literal["all"]:
    text = str(text)  # a request saved by an earlier version holds an int
    if text.strip().lower() == ALL_TARGETS:
        return ALL_TARGETS
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"--targets takes a whole number or 'all'; got {text!r}") from None


@user_errors
def run(
    dataset: Annotated[str | None, typer.Argument(
        help="A dataset name (gpqa, mmlu-pro-29) or a path to a CSV, lm-eval samples folder "
             "or .npy arrays (omit with --resume).")] = None,
    methods: Annotated[str, typer.Option(
        help="Selection methods, comma separated, or 'all' (see 'mdad methods'). Default: "
             "the paper's six, " + ", ".join(DEFAULT_METHODS) + ".",
        show_default=False)] = ",".join(DEFAULT_METHODS),
    sizes: Annotated[str | None, typer.Option(
        help="Micro-benchmark sizes, comma separated. Default: the dataset's grid (GPQA: "
             "10,25,50,100,200) or " + ",".join(map(str, DEFAULT_SIZES))
             + ", minus sizes above the seen pool.")] = None,
    runs: Annotated[int, typer.Option(help="Independent runs.")] = 50,
    targets: Annotated[str | None, typer.Option(
        help="Target models drawn per run (default 50; mmlu-pro-29: 10), or 'all': every "
             "model that is not a source.")] = None,
    sources: Annotated[str | None, typer.Option(
        help="Source-model counts, comma separated, e.g. 10,50,100,150,200,250,300 "
             "(default 300; mmlu-pro-29: 19).")] = None,
    target_models: Annotated[Path | None, typer.Option(
        help="File of target model names, one per line, used in every run instead of "
             "random draws.")] = None,
    threshold: Annotated[float, typer.Option(help="Agreement probability defining MDAD.")] = 0.8,
    seed: Annotated[int, typer.Option(help="Seed of every random draw.")] = 0,
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples for intervals.")] = 1000,
    missing: Annotated[MissingPolicy, typer.Option(
        help="Missing cells: drop the items or the models that have them, or stop."
    )] = MissingPolicy.DROP_ITEMS,
    orientation: Annotated[Orientation, typer.Option(help="Wide CSV layout.")] = Orientation.AUTO,
    metric: Annotated[str | None, typer.Option(
        help="lm-eval metric field: acc, acc_norm, exact_match (default: the dataset's, "
             "else acc).")] = None,
    out: Annotated[Path | None, typer.Option(
        help="Output folder (default: runs/DATASET-TIME, a new folder).")] = None,
    per_subtask: Annotated[bool, typer.Option(
        "--per-subtask", help="Select and evaluate inside each subtask on its own; MDAD "
        "per subtask and pooled over subtasks.")] = False,
    fractions: Annotated[str | None, typer.Option(
        help="With --per-subtask: micro-benchmark sizes as fractions of each subtask's "
             "seen pool, comma separated (default " + ", ".join(map(str, PAPER_FRACTIONS))
             + ").")] = None,
    with_report: Annotated[bool, typer.Option(
        "--report", help="Also write report.html and figures/ (as `mdad report`).")] = False,
    workers: Annotated[int, typer.Option(
        help="Processes to run the runs in (0: one per CPU core); with --backend dask and "
             "no --scheduler, the local Dask workers to start. Results do not depend on "
             "it.")] = 0,
    backend: Annotated[Backend, typer.Option(
        help="local: processes on this machine; dask: a Dask cluster.")] = Backend.LOCAL,
    scheduler: Annotated[str | None, typer.Option(
        help="With --backend dask: a running scheduler's address (tcp://host:8786).")] = None,
    models: Annotated[int | None, typer.Option(
        help="For synthetic:<shape> datasets: the number of models (2 to 5,000; "
             "default 420).")] = None,
    data_seed: Annotated[int, typer.Option(
        help="For synthetic:<shape> datasets: the seed that draws the leaderboard.")] = 0,
    resume: Annotated[Path | None, typer.Option(
        help="Continue the interrupted run whose --out was this folder; finished runs are "
             "not recomputed.")] = None,
) -> None:
    """Run the micro-benchmark reliability study and report MDAD per method and size."""
    params = {k: v for k, v in locals().items()}
    if resume is not None:
        return _resume(resume, params)
    if dataset is None:
        raise ConfigError("give a DATASET, or --resume RUN_DIR to continue a run")
    if scheduler is not None and backend is not Backend.DASK:
        raise ConfigError("--scheduler applies only with --backend dask; add it, or drop "
                          "--scheduler to run on this machine")
    err = Console(stderr=True)
    if out is not None:
        out = check_out_dir(out)
    options: dict = {} if metric is None else {"metric": metric}
    if orientation is not Orientation.AUTO:
        options["orientation"] = orientation
    if dataset.startswith("synthetic:"):
        options = {"models": models or 420, "data_seed": data_seed}
    elif models is not None:
        raise ConfigError("--models applies only to synthetic:<shape> datasets")
    data = load_dataset(dataset, missing=missing, **options)
    for note in load_notices(data, metric):
        err.print(f"[yellow]note:[/] {literal(note)}")
    spec = data.spec
    config = StudyConfig(
        methods=expand_methods(tuple(m.strip() for m in methods.split(",") if m.strip())),
        sizes=parse_int_list(sizes, "--sizes") if sizes is not None else None,
        n_runs=runs,
        n_targets=(_parse_targets(targets) if targets is not None
                   else (spec.n_targets if spec and spec.n_targets else 50)),
        sources=(parse_int_list(sources, "--sources") if sources is not None
                 else ((spec.n_sources,) if spec and spec.n_sources else (300,))),
        target_models=(read_name_list(target_models, option="--target-models")
                       if target_models is not None else None),
        threshold=threshold,
        seed=seed,
        n_resamples=resamples,
    )
    if workers < 0:
        raise ConfigError(f"--workers must be 0 (one per core) or more; got {workers}")
    if fractions is not None and not per_subtask:
        raise ConfigError("--fractions applies only with --per-subtask; add --per-subtask or "
                          "use --sizes")
    n_workers = workers if workers > 0 else available_cores()
    if per_subtask:
        fraction_grid = (parse_float_list(fractions, "--fractions") if fractions is not None
                         else PAPER_FRACTIONS)
        studies = plan_per_subtask(data.matrix, config, fraction_grid)
        plan, n_cells = studies[0].plan, sum(study.plan.n_cells for study in studies)
        plan_notices = tuple(f"subtask {study.name}: {notice}"
                             for study in studies for notice in study.plan.notices)
        subtask_json: dict | None = {
            "fractions": list(fraction_grid),
            "sizes": {study.name: list(study.plan.sizes) for study in studies}}
    else:
        plan = plan_study(data.matrix, config,
                          default_sizes=spec.sizes if spec and spec.sizes else DEFAULT_SIZES)
        n_cells, subtask_json, plan_notices = plan.n_cells, None, plan.notices
    for notice in plan_notices:
        err.print(f"[yellow]note:[/] {literal(notice)}")
    out_dir = check_out_dir(out or Path("runs") / f"{data.name}-{datetime.now():%Y%m%d-%H%M%S}")
    dask_scheduler = (scheduler or "local") if backend is Backend.DASK else None
    if dask_scheduler not in (None, "local"):
        from mdad.study.distributed import check_scheduler

        check_scheduler(dask_scheduler)
    checkpoint = RunCheckpoint(progress_dir(out_dir))
    resuming = str(out_dir) in _RESUMING
    if checkpoint.folder.exists() and not resuming:
        raise ConfigError(f"--out {out_dir} has an interrupted run ({checkpoint.folder}); "
                          f"continue it with --resume {out_dir}, or remove that folder")
    checkpoint.lock()
    try:
        remove_stale_staging(out_dir)
        checkpoint.start({"params": _to_json(params), "sha256": data.matrix.sha256})
        if checkpoint.request()["sha256"] != data.matrix.sha256:
            raise ConfigError(f"--resume {out_dir}: the data changed since the run started "
                              "(sha256 differs); start a new run")
    except BaseException:
        checkpoint.unlock()
        raise
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        outcome = _execute(data, plan, studies if per_subtask else None,
                           fraction_grid if per_subtask else None, n_cells, n_workers,
                           checkpoint, dask_scheduler, err)
    except BaseException as exc:
        # SIGKILL cannot be caught: then the folder stays and --out refuses, naming --resume.
        checkpoint.unlock()
        runs_saved, cells_saved = checkpoint.finished()
        if runs_saved == cells_saved == 0:
            shutil.rmtree(checkpoint.folder, ignore_errors=True)
            message = "nothing was finished"
        else:
            message = (f"{runs_saved} finished runs and {cells_saved} cells of unfinished runs "
                       f"are saved in {checkpoint.folder}; continue with: "
                       f"mdad run --resume {out_dir}")
        if isinstance(exc, KeyboardInterrupt | Terminated):
            err.print(f"interrupted: {literal(message)}")
            raise typer.Exit(130 if isinstance(exc, KeyboardInterrupt) else 143) from None
        if isinstance(exc, OSError):  # e.g. a full disk: one line, and how to go on
            raise DataError(f"{exc.filename or out_dir}: {exc.strerror or exc}; {message}"
                            ) from None
        if runs_saved or cells_saved:
            err.print(literal(message))
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
    tables, frame, notices, method_seconds, started, cells_done = outcome
    notices = (*notices, *thin_data_notices(tables.mdad))
    for notice in notices:
        err.print(f"[yellow]note:[/] {literal(notice)}")
    config_json = run_config(data, plan, version=__version__, command=sys.argv,
                             per_subtask=subtask_json, notices=(*plan_notices, *notices))
    config_json["timing"] = {
        "workers": n_workers,
        "cells_seconds": round(cells_done - started, 3),
        "metrics_seconds": round(time.perf_counter() - cells_done, 3),
        "method_cpu_seconds": {name: round(float(sec), 3)
                               for name, sec in zip(config.methods, method_seconds, strict=True)},
    }
    write_run_dir(out_dir, frame, tables, config_json)
    shutil.rmtree(checkpoint.folder, ignore_errors=True)
    checkpoint.unlock()  # only now: the folder is written and the checkpoint gone
    title = (f"{data.name}: {data.matrix.n_models} models x {data.matrix.n_items} items, "
             f"{runs} runs, {plan.n_targets} targets (MDAD and error in accuracy points)")
    console = Console()
    if not console.is_terminal:
        console = Console(width=160)
    if per_subtask:
        title += "; per subtask, pooled over subtasks (size: total items)"
        pooled = tables.mdad["subtask"] == POOLED
        console.print(study_table(
            tables.mdad[pooled], tables.summary[tables.summary["subtask"] == POOLED], title))
        console.print("each subtask's MDAD is in mdad.csv (column subtask)")
    else:
        console.print(study_table(tables.mdad, tables.summary, title))
    if config_json["confidence_substituted_by_correctness"]:
        console.print("* no confidences in this data: "
                      f"{', '.join(config_json['confidence_substituted_by_correctness'])} "
                      "used correctness in their place")
    console.print(f"wrote {literal(out_dir)}")
    if with_report:
        from mdad.report import write_report

        page = write_report(out_dir)
        console.print(f"wrote {literal(page)} and {literal(out_dir / 'figures')}")


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that the run stops as on Ctrl-C."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated()


def _to_json(params: dict) -> dict:
    """The run's parameters as JSON: paths as absolute text (a resume may start in another
    folder), choices by value."""
    def value(key: str, item: object) -> object:
        if key == "dataset" and item is not None and Path(str(item)).expanduser().exists():
            return str(Path(str(item)).expanduser().resolve())
        if isinstance(item, Path):
            return str(item.expanduser().resolve())
        return getattr(item, "value", item)

    return {k: value(k, v) for k, v in params.items() if not k.startswith("_")}


def _resume(run_dir: Path, given: dict) -> None:
    """Rerun the interrupted run's request into the same folder, reusing its runs; any
    other argument is refused (the saved request decides)."""
    defaults = {name: parameter.default for name, parameter in
                inspect.signature(run.__wrapped__).parameters.items()}
    extra = [name for name, value in given.items()
             if name != "resume" and value != defaults[name]]
    if extra:
        shown = ", ".join("DATASET" if n == "dataset" else "--" + n.replace("_", "-")
                          for n in extra)
        raise ConfigError(f"--resume {run_dir} continues the saved request as it was; drop "
                          f"{shown}, or start a new run with them")
    request = RunCheckpoint(progress_dir(run_dir)).request()
    params = dict(request["params"])
    expected = set(inspect.signature(run.__wrapped__).parameters)
    if set(params) != expected:
        raise ConfigError(f"--resume {run_dir}: the saved request was made by another "
                          "version of mdad; start a new run")
    params.update(out=run_dir, resume=None)
    params["target_models"] = (Path(params["target_models"]) if params["target_models"]
                               else None)
    params["missing"] = MissingPolicy(params["missing"])
    params["orientation"] = Orientation(params["orientation"])
    params["backend"] = Backend(params["backend"])
    run_dir = check_out_dir(run_dir)
    _RESUMING.add(str(run_dir))
    try:
        run(**params)
    finally:
        _RESUMING.discard(str(run_dir))


def _execute(data, plan, studies, fractions, n_cells: int, workers: int, checkpoint,
             scheduler: str | None, err: Console) -> tuple:
    """Run the cells behind a progress bar, then the metrics: the tables, the rows of
    results.parquet, the methods' notices, CPU seconds per method, and timestamps."""
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=True) as bar:
        task = bar.add_task(f"{data.name}: cells", total=n_cells)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done)

        started = time.perf_counter()
        if studies is not None:
            results = run_per_subtask(studies, workers=workers, progress=progress,
                                      checkpoint=checkpoint, scheduler=scheduler)
            cells_done = time.perf_counter()
            bar.update(task, description=f"{data.name}: MDAD bootstrap")
            output = collect_per_subtask(studies, results, fractions)
            return (output.tables, output.frame, output.notices, output.method_seconds,
                    started, cells_done)
        result = run_study(data.matrix, plan, workers=workers, progress=progress,
                           checkpoint=checkpoint, scheduler=scheduler)
        cells_done = time.perf_counter()
        bar.update(task, description=f"{data.name}: MDAD bootstrap")
        return (evaluate(result), result.to_frame(), result.notices, result.method_seconds,
                started, cells_done)
