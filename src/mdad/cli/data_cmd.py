"""`mdad data ...`: look at a results file before studying it."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from mdad.cli.errors import as_options, literal, user_errors
from mdad.cli.render import info_table
from mdad.data.choices import Orientation

if TYPE_CHECKING:
    from mdad.data import RawDataset
    from mdad.data.lm_eval import LmEvalFiles, LmEvalSettings

app = typer.Typer(help="Inspect results files and named datasets.", no_args_is_help=True,
                  rich_markup_mode=None)


@app.command("info")
@user_errors
def info(
    dataset: Annotated[str, typer.Argument(help="A dataset name (gpqa, mmlu-pro-29) or a path.")],
    orientation: Annotated[Orientation, typer.Option(help="Wide CSV layout.")] = Orientation.AUTO,
    metric: Annotated[str | None, typer.Option(
        help="lm-eval metric field: acc, acc_norm, exact_match (default: acc).")] = None,
    models: Annotated[int | None, typer.Option(
        help="For synthetic:<shape> datasets: the number of models (as `mdad run`).")] = None,
    data_seed: Annotated[int | None, typer.Option(
        help="For synthetic:<shape> datasets: the seed that draws the leaderboard.")] = None,
) -> None:
    """Models, items, subtasks, accuracy range, missing cells, confidences."""
    from mdad.data import describe
    from mdad.data.info import settings_lines
    from mdad.data.lm_eval import MIXED_NOTE, holds_lm_eval_samples, lm_eval_files

    raw, settings = _read_with_settings(
        dataset, metric=metric, n_models=models, data_seed=data_seed,
        orientation=None if orientation is Orientation.AUTO else orientation)
    summary = describe(raw.matrix)
    console = Console()
    console.print(info_table(summary))
    console.print(f"sha256 {summary.sha256}", soft_wrap=True)
    if settings is not None:
        lines = settings_lines(settings)
        if mixed := settings.mixed():
            lines.append(f"mixed settings: {mixed}; run, select, estimate, compare and "
                         "adaptive refuse them unless --allow-mixed-settings")
        for line in lines:
            console.print(literal(line), soft_wrap=True, highlight=False)
    if raw.spec is None and holds_lm_eval_samples(raw.path):
        print_lm_eval_files(console, lm_eval_files(raw.path))
    print_provenance(console, Path(raw.matrix.source))
    for note in raw.matrix.notes:
        if not note.startswith(MIXED_NOTE):  # said above, as a setting
            console.print(f"note: {literal(as_options(note, ('orientation',)))}",
                          soft_wrap=True, highlight=False)


@app.command("list")
@user_errors
def list_datasets(
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON instead.")] = False,
) -> None:
    """The named datasets: where each was found on the data search path, its shape and
    provenance, and how to get the ones that are missing."""
    from mdad.data.catalog import catalog
    from mdad.data.datasets import data_search_path

    entries = catalog()
    roots = [str(root) for root in data_search_path()]
    if json_output:
        from dataclasses import asdict

        from mdad.cli.practice_common import print_json

        print_json({"search_path": roots, "datasets": [
            {**asdict(e), "path": None if e.path is None else str(e.path)} for e in entries]})
        return
    console = Console()
    width = max(len(e.name) for e in entries) + 2
    for e in entries:  # lines, not a table: a path or a command stays whole to copy
        lines = [f"{e.name:<{width}}{e.shape or 'missing'}"]
        found = "made from" if e.name.startswith("synthetic:") else "found"
        lines += ([f"  {found}: {e.path}"] if e.path is not None else [f"  get:   {e.get}"])
        lines.append(f"  from:  {e.provenance}")
        for line in lines:
            console.print(literal(line), soft_wrap=True, highlight=False)
    first = " (MDAD_DATA's folders first)" if os.environ.get("MDAD_DATA") else ""
    console.print(literal(f"data search path, in order{first}: " + ", ".join(roots)),
                  soft_wrap=True, highlight=False)


def _read_with_settings(dataset: str, **options: object
                        ) -> tuple[RawDataset, LmEvalSettings | None]:
    """The dataset as `read_dataset` reads it, and for lm-eval output (a path) the
    settings its files ran with, read once; mixed settings are read, to be shown."""
    from mdad.data import DATASETS, RawDataset, read_dataset
    from mdad.data.lm_eval import LOADER, read_lm_eval_samples
    from mdad.data.registry import accepted_options, find_loader

    path = Path(dataset).expanduser()
    # a pipe, a device or a dangling link is read_dataset's to name
    regular = path.is_file() or path.is_dir()
    if dataset in DATASETS or not regular or find_loader(path) is not LOADER:
        return read_dataset(dataset, **options), None
    given = accepted_options(LOADER, path, options)  # refuses the options of other formats
    read = read_lm_eval_samples(path, metric=str(given.get("metric") or "acc"),
                                allow_mixed_settings=True)
    name = path.stem if path.is_file() else path.name
    return RawDataset(name, read.matrix, path), read.settings


def print_provenance(console: Console, folder: Path) -> None:
    """For a pulled dataset: where its models' results came from, in summary."""
    from mdad.data.compact import META, read_metadata

    if not (folder / META).is_file():
        return
    meta = read_metadata(folder)
    provenance = meta.get("provenance", {})
    files = sum(len(p.get("files", [])) for p in provenance.values())
    times = sorted(p.get("pulled_at", "") for p in provenance.values())
    lines = [f"pulled: {meta.get('benchmark')} ({meta.get('metric')}) from "
             f"{meta.get('source')} by mdad {meta.get('mdad_version')}, assembled "
             f"{meta.get('pulled_at')}",
             f"  {len(provenance)} models, {files} sample files, each at its repo's "
             f"revision (commit sha); models fetched {times[0] if times else '?'} to "
             f"{times[-1] if times else '?'}"]
    for reason, names in meta.get("skipped", {}).items():
        lines.append(f"  skipped {len(names)}: {reason}")
    if meta.get("failed"):
        lines.append(f"  failed {len(meta['failed'])}: " + ", ".join(meta["failed"]))
    for model, p in list(provenance.items())[:3]:
        lines.append(f"  e.g. {model}: {p.get('repo')} @ {str(p.get('revision'))[:12]}, "
                     f"{len(p.get('files', []))} files")
    for line in lines:
        console.print(literal(line), soft_wrap=True, highlight=False)
    console.print(f"  (every model's repo, revision and files: {folder / META})",
                  soft_wrap=True, highlight=False, markup=False)


@app.command("answers")
@user_errors
def answers(
    dataset: Annotated[str, typer.Argument(help="A dataset name (gpqa, mmlu-pro-29) or a path.")],
    model: Annotated[str, typer.Option(help="The model whose answers to write, as the "
                                            "dataset names it.")],
    out: Annotated[Path, typer.Option(help="The CSV file to write.")],
    items: Annotated[Path | None, typer.Option(
        help="A micro-benchmark file: write only its items, read with its metric; or an "
             "adaptive test's batch (STATE.samples.json, STATE.items.txt, or the state): "
             "its pending items (default: every item).")] = None,
    metric: Annotated[str | None, typer.Option(
        help="lm-eval metric field (default: the micro-benchmark's, else the dataset's, "
             "else acc).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace OUT if it exists.")] = False,
) -> None:
    """Write one of a dataset's models' answers as the item_id,correct CSV that
    `estimate` and `compare` read: to try them, or to check a micro-benchmark on a
    known model."""
    import numpy as np

    from mdad.cli.files import check_new_file, write_text
    from mdad.cli.practice_common import note
    from mdad.data import dataset_options, read_dataset
    from mdad.data.files import check_regular_file
    from mdad.errors import ConfigError
    from mdad.practice import MicroBenchmarkFile
    from mdad.practice.answers import answers_csv, batch_items, is_batch_file, model_answers
    from mdad.practice.bundle import PASS_A_FILE, other_benchmark

    check_new_file(out, option="--out", force=force, example="answers.csv")
    bundle = None
    batch = False
    if items is not None:
        check_regular_file(items, option="--items", fix=PASS_A_FILE)  # a link loop too
        if out.resolve() == items.resolve():
            raise ConfigError(f"--out {out} is the --items file; write the answers elsewhere")
        batch = is_batch_file(items)
    if items is not None and not batch:
        bundle = MicroBenchmarkFile.load(items)
        if other_benchmark(bundle, dataset):
            raise ConfigError(f"--items {items} was selected from {bundle.dataset}, another "
                              f"benchmark than {dataset}; write the answers from "
                              f"{bundle.dataset}, or pass a micro-benchmark selected from "
                              f"{dataset}")
        if metric is not None and metric != bundle.lm_eval_metric:
            raise ConfigError(f"--metric {metric}: the micro-benchmark {items} was built on "
                              f"{bundle.lm_eval_metric}; leave out --metric")
        if "metric" in dataset_options(dataset):  # a CSV's scores are as they are
            metric = bundle.lm_eval_metric
    raw = read_dataset(dataset, metric=metric)  # missing cells stay missing: no row
    if bundle is not None and raw.matrix.sha256 != bundle.sha256:
        raise ConfigError(f"--items {items} was selected from {bundle.dataset} with sha256 "
                          f"{bundle.sha256[:12]}..., this data has "
                          f"{(raw.matrix.sha256 or '')[:12]}...; give the data it was "
                          "selected from")
    wanted = bundle.items if bundle is not None else None
    if batch:
        wanted = batch_items(items, [str(i) for i in raw.matrix.item_ids],
                             raw.spec.lm_eval_task if raw.spec else None)
    ids, scores = model_answers(raw.matrix, model, wanted)
    for message in raw.matrix.notes:  # after the errors: a refusal is one line
        note(as_options(message, ("orientation",)))
    write_text(out, answers_csv(ids, scores))
    unanswered = int(np.isnan(scores).sum())
    Console().print(literal(f"wrote {out}: {model}'s answers on {len(ids) - unanswered} "
                            f"items of {raw.name}"), soft_wrap=True, highlight=False)
    if unanswered:
        note(f"{model} has no result on {unanswered} of the {len(ids)} items, left out of "
             f"{out.name}; estimate and compare read it with --allow-partial")
    note(f"{model} is one of {raw.name}'s models, so a micro-benchmark or an adaptive "
         f"test made from {raw.name} saw its answers: an estimate from {out.name} is "
         "in-sample, likely closer to its accuracy than a new model's would be")


@app.command("pull")
@user_errors
def pull(
    source: Annotated[str, typer.Argument(
        metavar="SOURCE", help="Where from: leaderboard (the Open LLM Leaderboard v2 "
                               "details on the Hugging Face Hub).")],
    bench: Annotated[str, typer.Argument(
        metavar="BENCH", help="gpqa, gpqa-diamond, bbh, mmlu-pro or musr.")],
    models: Annotated[str, typer.Option(
        help="all, or the first N models of the hub's listing.")] = "all",
    model_list: Annotated[Path | None, typer.Option(
        help="File of model names (org/model), one per line, instead of the listing.")] = None,
    jobs: Annotated[int, typer.Option(help="Models downloaded at once.")] = 4,
    out: Annotated[Path | None, typer.Option(
        help="The dataset folder to write (default: the data cache, usable by name).")] = None,
    force: Annotated[bool, typer.Option(
        "--force", help="Replace an --out (and its partial files) holding another "
                        "benchmark's pull.")] = False,
    idle_timeout: Annotated[float, typer.Option(
        help="Seconds a read waits for a byte before the file fails.")] = 60.0,
    file_timeout: Annotated[float, typer.Option(
        help="Seconds one file may take over all its attempts (0: no limit).")] = 1800.0,
    deadline: Annotated[float, typer.Option(
        help="Seconds the whole pull may take; finished models are kept (0: no "
             "limit).")] = 0.0,
    max_retry_after: Annotated[float, typer.Option(
        help="The longest wait, in seconds, a hub's Retry-After may ask; a longer one "
             "fails the file.")] = 60.0,
) -> None:
    """Pull one benchmark's per-item results into a compact dataset (see the docs:
    how-to/pull-the-leaderboard.md).

    Ctrl-C or SIGTERM stops it at once, keeping the models finished as partial files:
    the same command again resumes."""
    import os

    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    from mdad.cli.errors import Terminated, as_options, interrupted
    from mdad.data.datasets import cache_folder
    from mdad.data.leaderboard import LIMIT_PARAMETERS, pull_leaderboard
    from mdad.errors import ConfigError

    if source != "leaderboard":
        raise ConfigError(f"SOURCE must be leaderboard; got {source!r}")
    names = _checked_model_list(model_list) if model_list is not None else None
    cache = cache_folder()
    folder = out if out is not None else cache / "leaderboard" / bench
    columns = (TextColumn("{task.description}"), BarColumn(),
               MofNCompleteColumn(), TextColumn("models"),  # 0/? until the listing is read
               TextColumn("{task.fields[rate]}"), TimeRemainingColumn())
    err = Console(stderr=True)
    # off a terminal a transient bar would still end with a blank line before any error
    with Progress(*columns, console=err, transient=True, disable=not err.is_terminal) as bar:
        task = bar.add_task(f"pulling {bench}", total=None, rate="")

        def show(state) -> None:
            rate = state.bytes_per_second / 1e6
            bar.update(task, completed=state.models_done, total=state.models_total,
                       description=f"pulling {bench}",  # past any retry line
                       rate=f"{state.bytes_streamed / 1e6:,.1f} MB at {rate:,.1f} MB/s")

        def retrying(message: str) -> None:  # the client's text, urls and errors: no markup
            bar.update(task, description=f"pulling {bench} (the hub client: "
                                         f"{literal(message)})")

        try:
            with hub_log_shown_by(retrying):
                outcome = pull_leaderboard(
                    bench, folder, models=models, model_list=names, jobs=jobs,
                    token=os.environ.get("HF_TOKEN"), progress=show, force=force,
                    idle_timeout=idle_timeout, file_timeout=file_timeout or None,
                    deadline=deadline or None, max_retry_after=max_retry_after)
        except (KeyboardInterrupt, Terminated) as stop:
            bar.stop()
            kept = next((note for note in getattr(stop, "__notes__", ())
                         if "partial files" in note), None)
            raise interrupted(stop, kept or "models finished are kept as partial files; "
                              "the same pull again resumes from them") from None
    console = Console()
    size = sum(f.stat().st_size for f in outcome.folder.iterdir() if f.is_file())
    console.print(literal(
        f"wrote {outcome.folder}: {len(outcome.pulled) + len(outcome.resumed)} models "
        f"({len(outcome.pulled)} fetched, {len(outcome.resumed)} from an earlier pull), "
        f"{size / 1e6:,.1f} MB; {outcome.bytes_streamed / 1e6:,.1f} MB streamed"),
        soft_wrap=True, highlight=False)
    for reason, skipped in outcome.skipped.items():
        console.print(literal(f"skipped {len(skipped)} models: {reason}"), soft_wrap=True,
                      highlight=False)
    for model, why in outcome.failed.items():
        console.print(literal(f"failed: {model}: {as_options(why, LIMIT_PARAMETERS)}; "
                              "pull again to retry it"), soft_wrap=True, highlight=False)
    usable = (f"leaderboard:{bench}" if outcome.folder.resolve() == (
        cache / "leaderboard" / bench).resolve() else str(outcome.folder))
    console.print(literal(f"use it as: mdad run {usable}"), soft_wrap=True, highlight=False)


def _checked_model_list(path: Path) -> list[str]:
    """The names of the --model-list file `path` (`numbered_names`), each checked as a
    Hub repo id: a bad one is an error naming the file and its line."""
    from mdad.data.files import numbered_names
    from mdad.data.leaderboard import repo_of

    numbered = numbered_names(path, option="--model-list", what="model names")
    for number, name in numbered:
        repo_of(name, where=f"--model-list {path}: line {number}")
    return [name for _, name in numbered]


@contextmanager
def hub_log_shown_by(show: Callable[[str], None]) -> Iterator[None]:
    """Within the block, each line the Hugging Face Hub client logs (its retries of a
    request) goes to `show`, the progress line, instead of stderr, so an error stays
    the one line after them; the client's own handlers come back after."""
    import logging

    import huggingface_hub.utils.logging  # noqa: F401  (it sets its handler on import)

    class Shown(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            try:
                show(" ".join(record.getMessage().split()))
            except Exception:  # as logging's own handlers: never into the client's call
                self.handleError(record)

    logger = logging.getLogger("huggingface_hub")
    if logger.getEffectiveLevel() < logging.WARNING:  # HF_HUB_VERBOSITY=info asks for them
        yield
        return
    saved = logger.handlers[:]
    logger.handlers = [Shown(logging.WARNING)]
    try:
        yield
    finally:
        logger.handlers = saved


def print_lm_eval_files(console: Console, found: LmEvalFiles) -> None:
    """The sample files read per model (oldest first within a task); the folders not
    read are among the matrix's notes."""
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


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"
