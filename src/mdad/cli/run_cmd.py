"""`mdad run`: the paper's study on one dataset. Parses the options into a
`StudyRequest`, shows progress and renders the outcome; `mdad.study.conduct_study`
does the work."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from mdad.cli import errors
from mdad.cli.errors import (
    literal,
    parse_float_list,
    parse_int_list,
    split_list,
    user_errors,
)
from mdad.data.choices import MissingPolicy, Orientation
from mdad.defaults import ALL_TARGETS, DEFAULT_SIZES, DEFAULT_THRESHOLD, PAPER_FRACTIONS
from mdad.errors import ConfigError

if TYPE_CHECKING:
    from rich.console import Console

    from mdad.data.registry import Dataset
    from mdad.study.pipeline import PreparedStudy, StudyOutcome
    from mdad.study.request import StudyRequest


# Seconds `mdad run` may take, after Ctrl-C or SIGTERM, to stop its workers (each joined
# for up to 10 s after it was terminated, which takes well under a second) and release
# its checkpoint, before the interrupt watchdog ends it.
RUN_CLEANUP_SECONDS = 30.0

# Options that say where and how a study runs, not what it is: free on --resume.
_NOT_REQUEST = ("resume", "workers", "backend", "scheduler", "with_report")


class Backend(StrEnum):
    LOCAL = "local"
    DASK = "dask"


def _parse_targets(text: str, option: str = "--targets") -> int | Literal["all"]:
    if text.strip().lower() == ALL_TARGETS:
        return ALL_TARGETS
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"{option} takes a whole number or 'all'; got {text!r}") from None


@user_errors
def run(
    ctx: typer.Context,
    dataset: Annotated[str | None, typer.Argument(
        help="A dataset name (gpqa, mmlu-pro-29) or a path to a CSV, lm-eval samples folder "
             "or .npy arrays (omit with --resume).")] = None,
    methods: Annotated[str | None, typer.Option(
        help="Selection methods, comma separated, or 'all' (see 'mdad methods'). Default: "
             "the paper's six, those 'mdad methods' marks as in the paper.",
        show_default=False)] = None,
    fast: Annotated[bool, typer.Option(
        "--fast", help="Run each method's documented faster approximation where it has "
        "one (diversity-fast, anchor-points-fast, tinybenchmarks-fast: numbers within "
        "run-to-run noise of the exact methods, not the same numbers).")] = False,
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
    threshold: Annotated[float, typer.Option(
        help="Agreement probability defining MDAD.")] = DEFAULT_THRESHOLD,
    seed: Annotated[int, typer.Option(help="Seed of every random draw.")] = 0,
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples for intervals.")] = 1000,
    missing: Annotated[MissingPolicy, typer.Option(
        help="Missing cells: drop the items or the models that have them, or stop."
    )] = MissingPolicy.DROP_ITEMS,
    orientation: Annotated[Orientation, typer.Option(help="Wide CSV layout.")] = Orientation.AUTO,
    metric: Annotated[str | None, typer.Option(
        help="lm-eval metric field: acc, acc_norm, exact_match (default: the dataset's, "
             "else acc).")] = None,
    allow_mixed_settings: Annotated[bool, typer.Option(
        "--allow-mixed-settings",
        help="Read lm-eval results whose runs differ in n-shot as they are (refused by "
             "default).")] = False,
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
        help="Most processes to run the runs in (0: one per CPU core; a small study runs "
             "in this process); with --backend dask and no --scheduler, the local Dask "
             "workers to start. Results do not depend on it.")] = 0,
    backend: Annotated[Backend, typer.Option(
        help="local: this machine; dask: a Dask cluster.")] = Backend.LOCAL,
    scheduler: Annotated[str | None, typer.Option(
        help="With --backend dask: a running scheduler's address (tcp://host:8786).")] = None,
    models: Annotated[int | None, typer.Option(
        help="For synthetic:<shape> datasets: the number of models (2 to 5,000; "
             "default 420).")] = None,
    data_seed: Annotated[int | None, typer.Option(
        help="For synthetic:<shape> datasets: the seed that draws the leaderboard "
             "(default 0).")] = None,
    resume: Annotated[Path | None, typer.Option(
        help="Continue the interrupted run whose --out was this folder; finished runs are "
             "not recomputed.")] = None,
) -> None:
    """Run the micro-benchmark reliability study and report MDAD per method and size."""
    from rich.console import Console

    from mdad.study.backends import choose_backend
    from mdad.study.pipeline import load_study_data, prepare_study, saved_request

    if resume is not None:
        # where and how it runs is not part of the request; typer vendors click, so its
        # ParameterSource is compared by name
        given = [param for param in ctx.command.params if param.name not in _NOT_REQUEST
                 and ctx.get_parameter_source(param.name).name != "DEFAULT"]
        if given:
            shown = ", ".join("DATASET" if param.name == "dataset" else param.opts[0]
                              for param in given)
            raise ConfigError(f"--resume {resume} continues the saved request as it was; drop "
                              f"{shown}, or start a new run with them")
        request = saved_request(resume)
    elif dataset is None:
        raise ConfigError("give a DATASET, or --resume RUN_DIR to continue a run")
    else:
        request = _request(ctx.params)
    if workers < 0:
        raise ConfigError(f"--workers must be 0 (one per core) or more; got {workers}")
    if scheduler is not None and backend is not Backend.DASK:
        raise ConfigError("--scheduler applies only with --backend dask; add it, or drop "
                          "--scheduler to run on this machine")
    err = Console(stderr=True)
    if out is not None:  # refused before the data is read
        from mdad.study.folder import check_out_dir

        out = check_out_dir(out)
    data = load_study_data(request)
    _print_notices(err, _load_notices(data))  # before the plan, which may refuse
    prepared = prepare_study(request, dataset=data)
    _print_notices(err, prepared.notices)
    out_dir = resume or out or Path("runs") / (
        f"{prepared.dataset.name}-{datetime.now():%Y%m%d-%H%M%S}")
    chosen = choose_backend("dask" if backend is Backend.DASK else "auto",
                            n_workers=workers or None, scheduler=scheduler)
    outcome = _conduct(prepared, out_dir, err, resume=resume is not None, backend=chosen)
    _print_notices(err, outcome.notices[len(prepared.notices):])
    _render(outcome)
    if with_report:
        from mdad.report import write_report

        page = write_report(outcome.path)
        console = _stdout()
        console.print(f"wrote {literal(page)} and {literal(outcome.path / 'figures')}")


def _request(options: dict) -> StudyRequest:
    """The study request the options describe."""
    from mdad.data.files import read_name_list
    from mdad.selection import fast_methods
    from mdad.study.config import DEFAULT_METHODS, StudyConfig, expand_methods
    from mdad.study.request import StudyRequest

    # ctx.params holds the parsed values, enums as their text or as members by version
    load_options: dict = {"missing": MissingPolicy(options["missing"]).value}
    if options["metric"] is not None:
        load_options["metric"] = options["metric"]
    if options.get("allow_mixed_settings"):
        load_options["allow_mixed_settings"] = True
    if Orientation(options["orientation"]) is not Orientation.AUTO:
        load_options["orientation"] = Orientation(options["orientation"]).value
    if options["models"] is not None:
        load_options["n_models"] = options["models"]
    if options["data_seed"] is not None:
        load_options["data_seed"] = options["data_seed"]
    given = options["methods"]
    methods = (DEFAULT_METHODS if given is None else
               expand_methods(split_list(given, "--methods")))
    if options["targets"] and options["target_models"] is not None:
        raise ConfigError("--targets and --target-models both say which models are targets; "
                          "give one of them")

    def parsed(name: str, parse: Callable[..., Any]) -> Any:
        """The option's value read by `parse`, or None when not given (an empty
        value is given, and refused: it would silently mean the default)."""
        value = options[name]
        return None if value is None else parse(value, f"--{name}")

    config = StudyConfig(
        methods=fast_methods(methods) if options["fast"] else methods,
        sizes=parsed("sizes", parse_int_list),
        n_runs=options["runs"],
        n_targets=parsed("targets", _parse_targets),
        sources=parsed("sources", parse_int_list),
        target_models=(read_name_list(Path(options["target_models"]), option="--target-models")
                       if options["target_models"] is not None else None),
        threshold=options["threshold"],
        seed=options["seed"],
        n_resamples=options["resamples"],
    )
    return StudyRequest(
        options["dataset"], config, load_options, per_subtask=options["per_subtask"],
        fractions=parsed("fractions", parse_float_list))


def _load_notices(dataset: Dataset) -> list[str]:
    from mdad.cli.render import load_notices

    return list(load_notices(dataset))


def _print_notices(err: Console, *groups) -> None:
    for group in groups:
        for notice in group:
            # one line each, as `note` prints them: the terminal wraps, a path stays whole
            err.print(f"[yellow]note:[/] {literal(notice)}", soft_wrap=True, highlight=False)


def _conduct(prepared: PreparedStudy, out_dir: Path, err: Console, **options) -> StudyOutcome:
    """`conduct_study` behind a progress line (shown from the first finished cell on, so
    an early error stays one line); Ctrl-C and SIGTERM stop it with one line that says
    what is saved and how to continue."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from mdad.study.pipeline import StudyInterrupted, StudyProgress, conduct_study

    name = prepared.dataset.name
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[timing]}"), console=err, transient=True,
                   disable=not err.is_terminal)  # off one, it only ends with a blank line
    task = bar.add_task(f"{name}: cells", total=prepared.n_cells, timing="")

    def progress(state: StudyProgress) -> None:
        if not bar.live.is_started:
            bar.start()
        if state.stage == "metrics":
            bar.update(task, description=f"{name}: MDAD bootstrap", timing="")
            return
        left = state.remaining_seconds
        timing = f"{_clock(state.elapsed_seconds)} elapsed" + (
            f", about {_clock(left)} left" if left is not None else "")
        bar.update(task, completed=state.cells_done, timing=timing)

    # SIGTERM takes Ctrl-C's path (as `mdad` sets it already; here for typer's runner)
    previous = signal.signal(signal.SIGTERM, errors.raise_terminated)
    # stopping the workers (up to 10 s each) and saving what they finished comes before
    # the line: the watchdog waits for it once the signal was heard
    errors.allow_cleanup(RUN_CLEANUP_SECONDS)
    try:
        return conduct_study(prepared, out_dir, progress=progress, command=sys.argv, **options)
    except StudyInterrupted as stop:
        _stop(bar)
        message = (f"{stop}; continue with: mdad run --resume {stop.out_dir}"
                   if stop.saved_anything else "nothing was finished")
        # the one line, marked as shown so that the watchdog prints no second one
        raise errors.interrupted(stop.cause, message) from None
    except Exception as exc:
        from mdad.study.checkpoint import checkpoint_dir

        if checkpoint_dir(out_dir).is_dir():  # work was saved: the error says how to go on
            exc.add_note(f"continue with: mdad run --resume {out_dir}")
        raise
    finally:
        _stop(bar)
        signal.signal(signal.SIGTERM, previous)
        errors.allow_cleanup(errors.INTERRUPT_GRACE_SECONDS)  # the rest ends as quickly


def _stop(bar) -> None:
    if bar.live.is_started:  # stopping a bar never shown would print an empty line
        bar.stop()


def _clock(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def _stdout() -> Console:
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=160)


def _render(outcome: StudyOutcome) -> None:
    """The MDAD table (pooled over subtasks for a per-subtask study) and what was written."""
    from mdad.cli.render import study_tables
    from mdad.study.folder import POOLED

    prepared, tables, config = outcome.prepared, outcome.tables, outcome.config
    matrix = prepared.dataset.matrix
    title = (f"{prepared.dataset.name}: {matrix.n_models} models x {matrix.n_items} items, "
             f"{prepared.plan.config.n_runs} runs, {prepared.plan.n_targets} targets (MDAD "
             "and error in accuracy points)")
    console = _stdout()
    if prepared.subtasks is not None:
        title += "; per subtask, pooled over subtasks (size: total items)"
        pooled = tables.mdad["subtask"] == POOLED
        for table in study_tables(console, tables.mdad[pooled],
                                  tables.summary[tables.summary["subtask"] == POOLED], title):
            console.print(table)
        console.print("each subtask's MDAD is in mdad.csv (column subtask)")
    else:
        for table in study_tables(console, tables.mdad, tables.summary, title):
            console.print(table)
    if config["confidence_substituted_by_correctness"]:
        console.print("* no confidences in this data: "
                      f"{', '.join(config['confidence_substituted_by_correctness'])} "
                      "used correctness in their place")
    console.print(f"wrote {literal(outcome.path)}")
