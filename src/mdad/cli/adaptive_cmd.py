"""`mdad adaptive start | next | estimate`: test one new model adaptively with lm-eval.

`start` and `next` change a test's files (the state and its batch file) under one lock
per state, ``.<state name>.lock`` beside it: a second writer stops at once, naming the
first one's process. Every file is replaced whole (`mdad.safe_io.atomic_write`), so
`estimate`, which only reads, needs no lock.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from mdad.cli.errors import literal_console, user_errors
from mdad.cli.files import check_new_file
from mdad.cli.practice_common import (
    AllowMixedSettings,
    JsonOption,
    censored_ends_note,
    data_metric,
    load_practice_data,
    note,
    print_json,
)
from mdad.data.choices import MissingPolicy
from mdad.display import points
from mdad.errors import ConfigError

if TYPE_CHECKING:
    from mdad.practice.adaptive import AdaptiveTest

app = typer.Typer(help="Test one new model adaptively, batch by batch, with lm-eval.",
                  no_args_is_help=True, rich_markup_mode=None)


def _batch_files(state: Path) -> tuple[Path, Path]:
    """Where a test's batches go, beside its state: an lm-eval samples file for a test
    on lm-eval items, a list of item ids otherwise."""
    return state.with_suffix(".samples.json"), state.with_suffix(".items.txt")


def _batch_file_of(test: AdaptiveTest, state: Path) -> Path:
    """The one of `_batch_files` that `test` writes."""
    samples, ids = _batch_files(state)
    return ids if test.lm_eval_items is None else samples


@contextmanager
def _locked(state: Path) -> Iterator[None]:
    """Hold the test's lock (`FileLock` on ``.<state name>.lock`` beside it), and
    remove what killed runs left: mdad's own temporaries of the state and its batch
    files (`remove_stale_temporaries`), nothing else. A file named ``.<state
    name>.tmp``, as an earlier mdad wrote through, is left alone: it may be the
    user's, and nothing of mdad reads or writes that name now."""
    from mdad.safe_io import FileLock, remove_stale_temporaries

    with FileLock(state.with_name(f".{state.name}.lock"), f"the adaptive test {state}"):
        for name in (state.name, *(batch.name for batch in _batch_files(state))):
            remove_stale_temporaries(state.parent, name)
        yield


def _write_batch(test: AdaptiveTest, state: Path) -> None:
    """Write the pending batch beside the state."""
    from mdad.safe_io import atomic_write

    batch = _batch_file_of(test, state)
    if test.lm_eval_items is None:
        text = "".join(f"{item}\n" for item in test.pending)
    else:
        text = json.dumps(test.samples_json()) + "\n"
    atomic_write(batch, text.encode("utf-8"))


def _say_how_to_run_the_batch(test: AdaptiveTest, state: Path) -> None:
    console = literal_console()
    batch = _batch_file_of(test, state)
    if test.lm_eval_items is None:
        console.print(f"next batch: {len(test.pending)} items in {batch}; give them to the "
                      f"model and pass its answers as a CSV item_id,correct to `mdad "
                      f"adaptive next {state} RESULTS.csv`")
        return
    console.print(f"next batch: {len(test.pending)} items in {batch}")
    # commands to copy: never wrapped, at any width or through a pipe
    console.print(f"run it: lm-eval run --model ... --tasks {','.join(test.tasks())} "
                  f"--samples {batch} --log_samples --output_path RESULTS", soft_wrap=True)
    console.print(f"then: mdad adaptive next {state} RESULTS", soft_wrap=True)


def _print_estimate(test: AdaptiveTest, as_json: bool) -> None:
    from dataclasses import asdict

    estimate = test.estimate()
    if as_json:
        print_json({**asdict(estimate), "dataset": test.dataset, "method": test.method,
                    "metric": test.metric, "round": test.round})
        return
    if estimate.beyond:
        note("even the strongest (or weakest) of the models the interval was calibrated "
             "on would rarely give this estimate: this model may lie beyond them, "
             "where the interval extrapolates (widened, on an assumption)")
    censored_ends_note(estimate)
    state = "FINAL" if estimate.finished else "so far"
    literal_console().print(
        f"estimate ({state}, {estimate.answered} of {estimate.budget} items of "
        f"{test.dataset}, {test.metric}): {points(estimate.accuracy)} points, 95% interval "
        f"{points(estimate.low)} to {points(estimate.high)} ({estimate.interval_how}; "
        f"cross-validated error {points(estimate.cv_error)} points for this many items; "
        f"ability standard error {estimate.ability_standard_error:.3f}); {estimate.reason}")


@app.command("start")
@user_errors
def start(
    dataset: Annotated[str, typer.Argument(help="A dataset name or path (as `mdad run`).")],
    budget: Annotated[int, typer.Option(help="The most items the model answers.")],
    out: Annotated[Path, typer.Option(help="The state file to write (JSON).")],
    batch: Annotated[int, typer.Option(help="Items per lm-eval call.")] = 1,
    target_se: Annotated[float | None, typer.Option(
        help="Stop early once the ability's standard error is below this.")] = None,
    method: Annotated[str, typer.Option(
        help="adaptive (a 1-D IRT fit), adaptive-md (3-D) or adaptive-cv (dimension, "
             "prior and stop chosen by cross-validation for the budget).")] = "adaptive",
    metric: Annotated[str | None, typer.Option(
        help="lm-eval metric field, for an lm-eval samples folder (as `mdad run`).")] = None,
    missing: Annotated[MissingPolicy, typer.Option(help="Missing cells, as in `mdad run`."
                                                   )] = MissingPolicy.DROP_ITEMS,
    seed: Annotated[int, typer.Option(help="Seed of the fits and folds.")] = 0,
    allow_mixed_settings: AllowMixedSettings = False,
    force: Annotated[bool, typer.Option("--force", help="Replace OUT if it exists.")] = False,
) -> None:
    """Fit the item model on a dataset's models and write the first batch."""
    from mdad.practice.adaptive import start_adaptive_test

    _check_outputs(out, force)  # before the lock: a folder that is missing has none
    with _locked(out):
        _check_outputs(out, force)  # again: another start may have written it meanwhile
        data = load_practice_data(dataset, missing=missing, metric=metric,
                                  allow_mixed_settings=allow_mixed_settings)
        test = start_adaptive_test(data, budget=budget, batch=batch, target_se=target_se,
                                   method=method, metric=data_metric(data, metric),
                                   seed=seed)
        test.save(out)
        console = literal_console()
        if test.choice is not None:
            console.print(f"chosen by cross-validation: {test.choice.describe()}")
        console.print(
            f"wrote {out}: an adaptive test of up to {test.budget} items ({method}, batches "
            f"of {test.batch}) over {len(test.item_ids)} items of {data.name}, fitted on "
            f"{data.matrix.n_models} models; cross-validated error "
            f"{points(test.cv_error[0])} points before any answer, "
            f"{points(test.cv_error[-1])} after {test.budget}")
        _write_batch(test, out)
        _say_how_to_run_the_batch(test, out)


def _check_outputs(out: Path, force: bool) -> None:
    """The state file and both batch files `start` may write, checked before any work."""
    check_new_file(out, option="--out", force=force, example="state.json")
    for batch_file in _batch_files(out):  # either may be written
        check_new_file(batch_file, option="--out (its batch file)", force=force,
                       folder_fix="remove that folder, or choose another --out")


@app.command("next")
@user_errors
def next_batch(
    state: Annotated[Path, typer.Argument(help="The state file of `mdad adaptive start`.")],
    results: Annotated[Path, typer.Argument(
        help="The model's results on the batch: an lm-eval --log_samples folder or file, "
             "or a CSV item_id,correct.")],
    metric: Annotated[str | None, typer.Option(
        help="lm-eval metric field (default: the one the test was started on).")] = None,
    allow_mixed_settings: AllowMixedSettings = False,
    as_json: JsonOption = False,
) -> None:
    """Record the model's answers on the pending batch, then write the next batch or
    print the final estimate."""
    from mdad.practice.adaptive import check_state_file

    check_state_file(state)  # first: no lock file is made beside a state that is missing
    with _locked(state):
        _next_batch(state, results, metric, as_json, allow_mixed_settings)


def _next_batch(state: Path, results: Path, metric: str | None, as_json: bool,
                allow_mixed_settings: bool = False) -> None:
    """`next`'s read-modify-write of the state and its batch file, under the lock."""
    from mdad.practice.adaptive import AdaptiveTest

    test = AdaptiveTest.load(state)
    if not test.pending:
        raise ConfigError(f"{state}: the test is finished ({test.estimate().answered} items "
                          f"answered), no batch is pending; its estimate: `mdad adaptive "
                          f"estimate {state}`")
    recorded = test.apply_results(results, metric=metric,
                                  allow_mixed_settings=allow_mixed_settings)
    finished = test.estimate().finished
    batch = _batch_file_of(test, state)
    if not finished:
        test.next_items()
        check_new_file(batch, option="the batch file", force=True,
                       folder_fix="remove that folder")
        # the batch first: should the state then fail to save, it still waits for the
        # answers just applied, and the same `next` again goes on from there
        _write_batch(test, state)
    test.save(state)  # the answers and the next batch, at once
    if recorded.extra:
        note(f"{results} has {recorded.extra} items that are not in the batch; they are "
             "not recorded")
    if not as_json:
        literal_console().print(f"recorded {recorded.scores.size} answers (round "
                                f"{test.round})")
    _print_estimate(test, as_json)
    if not finished:
        _say_how_to_run_the_batch(test, state)
        return
    # the last batch's file would send lm-eval to items already answered
    if batch.is_file():
        batch.unlink()
        if not as_json:
            literal_console().print(f"the test is finished: removed {batch}, the batch it "
                                    "answered", soft_wrap=True)  # a path stays whole


@app.command("estimate")
@user_errors
def estimate(
    state: Annotated[Path, typer.Argument(help="The state file of `mdad adaptive start`.")],
    as_json: JsonOption = False,
) -> None:
    """The estimate from the answers recorded so far, with its 95% interval."""
    from mdad.practice.adaptive import AdaptiveTest

    _print_estimate(AdaptiveTest.load(state), as_json)
