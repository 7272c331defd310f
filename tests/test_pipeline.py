"""The study pipeline as a Python user calls it: a request in, a study folder out, with
progress, interruption and resume, and the dataset's own defaults."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from helpers import GPQA_CSV, MMLU_PRO_CSV, shared_data

from mdad.errors import ConfigError
from mdad.study import (
    StudyConfig,
    StudyInterrupted,
    StudyRequest,
    conduct_study,
    prepare_study,
    read_study_folder,
    resume_study,
    saved_request,
)
from mdad.study.backends import choose_backend
from mdad.study.checkpoint import checkpoint_dir

SMALL = StudyConfig(methods=("random", "anchor-points"), sizes=(10, 25), n_runs=6,
                    n_resamples=40)


def request(**changes) -> StudyRequest:
    return StudyRequest("gpqa", StudyConfig(**{**SMALL.__dict__, **changes}))


def conduct(study: StudyRequest, out: Path, **options):
    return conduct_study(prepare_study(study), out, **options)


def test_a_request_round_trips_through_json(tmp_path: Path) -> None:
    csv = tmp_path / "data.csv"
    csv.write_text("item_id,m1,m2\nq1,1,0\n")
    original = StudyRequest(str(csv.relative_to(tmp_path.parent)), SMALL,
                            {"missing": "drop-models", "orientation": "items-as-rows"},
                            per_subtask=True, fractions=(0.1, 0.2))
    saved = json.loads(json.dumps(original.to_json()))
    back = StudyRequest.from_json(saved)
    assert back.config == SMALL and back.fractions == (0.1, 0.2) and back.per_subtask
    assert back.load_options == original.load_options
    assert Path(back.dataset).is_absolute() or not Path(original.dataset).exists()
    with pytest.raises(ConfigError, match="another version of mdad"):
        StudyRequest.from_json({**saved, "format": "mdad-study-request/0"})
    with pytest.raises(ConfigError, match="StudyConfig has no parameter n_items"):
        StudyRequest.from_json({**saved, "config": {**saved["config"], "n_items": 3}})
    for field, value, kind in (("threshold", "x", "float"), ("methods", 5, "tuple of str"),
                               ("sizes", [10, "25"], "tuple of int or None"),
                               ("seed", True, "int"), ("n_targets", "some", "int, 'all'")):
        # a hand-edited request: once a TypeError traceback on --resume
        with pytest.raises(ConfigError, match=rf"the saved study request is damaged .*"
                           rf"StudyConfig {field} must be {kind}.*; start a new study"):
            StudyRequest.from_json({**saved, "config": {**saved["config"], field: value}})
        # and the config alone names the parameter, in the library's terms
        with pytest.raises(ConfigError, match=rf"^StudyConfig {field} must be") as error:
            StudyConfig.from_json({**saved["config"], field: value})
        assert error.value.parameters == (field,)
    with pytest.raises(ConfigError, match="read from a JSON object; got list"):
        StudyConfig.from_json([1, 2])
    with pytest.raises(ConfigError, match=r"^fractions applies only with per_subtask"):
        StudyRequest("gpqa", fractions=(0.1,))


def test_the_dataset_defaults_apply_in_the_library() -> None:
    """mmlu-pro-29 has 29 models: its 19 sources and 10 targets come with the data, so a
    Python user gets what the CLI gets."""
    shared_data(MMLU_PRO_CSV)
    prepared = prepare_study(StudyRequest("mmlu-pro-29", StudyConfig(n_runs=2)))
    assert prepared.plan.config.sources == (19,) and prepared.plan.n_targets == 10
    gpqa = prepare_study(StudyRequest("gpqa", StudyConfig(n_runs=2)))
    assert gpqa.plan.config.sources == (300,) and gpqa.plan.n_targets == 50
    assert gpqa.plan.sizes == (10, 25, 50, 100, 200)  # GPQA's own grid
    explicit = prepare_study(StudyRequest("gpqa", StudyConfig(n_runs=2, n_targets=20,
                                                              sources=(100,))))
    assert explicit.plan.config.sources == (100,) and explicit.plan.n_targets == 20


def test_conduct_writes_the_folder_reports_progress_and_never_prints(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shared_data(GPQA_CSV)
    events = []
    outcome = conduct(request(), tmp_path / "study", progress=events.append)
    assert capsys.readouterr() == ("", "")
    folder = read_study_folder(outcome.path)
    assert folder.methods == ["random", "anchor-points"] and folder.sizes == [10, 25]
    assert outcome.tables.mdad.equals(pd.read_csv(outcome.path / "mdad.csv"))
    n_cells = 6 * 2 * 2
    cells = [e for e in events if e.stage == "cells"]
    assert cells[0].cells_done == 0 and cells[-1].cells_done == n_cells
    assert [e.cells_done for e in cells] == sorted(e.cells_done for e in cells)
    assert len(cells) == n_cells + 1  # one event per cell, in every backend
    assert all(e.cells_total == n_cells for e in cells)
    assert cells[1].remaining_seconds is not None and cells[-1].remaining_seconds == 0
    assert events[-1].stage == "metrics" and events[-1].remaining_seconds is None
    assert list(outcome.config["study"]["sources"]) == [300]
    assert outcome.config["timing"]["backend"] in ("in-process", "processes")
    assert not checkpoint_dir(outcome.path).exists()


def test_an_interrupted_study_resumes_to_the_same_numbers(tmp_path: Path) -> None:
    shared_data(GPQA_CSV)
    whole = conduct(request(), tmp_path / "whole", backend=choose_backend("in-process"))

    def stop_after_some_cells(state) -> None:
        if state.stage == "cells" and state.cells_done == 11:
            raise KeyboardInterrupt

    out = tmp_path / "stopped"
    with pytest.raises(StudyInterrupted) as info:
        conduct(request(), out, backend=choose_backend("in-process"),
                progress=stop_after_some_cells, command=["mdad", "run", "gpqa"])
    stop = info.value
    assert (stop.runs_saved, stop.cells_saved) == (2, 3)  # 4 cells per run
    assert isinstance(stop.cause, KeyboardInterrupt) and not out.exists()
    assert saved_request(out) == request()
    with pytest.raises(ConfigError, match=r"has an interrupted study .*continue it with resume"):
        conduct(request(), out)
    with pytest.raises(ConfigError, match=r"^resume .* continues the saved request"):
        conduct(request(n_runs=7), out, resume=True)
    events = []
    resumed = resume_study(out, progress=events.append,
                           command=["mdad", "run", "--resume", str(out)])
    # what repeats the study, not what resumed it (issue 38, defect 7)
    assert resumed.config["command"] == ["mdad", "run", "gpqa"]
    assert events[0].cells_resumed == 11 and events[0].cells_done == 11
    for name in ("mdad.csv", "summary.csv", "agreement.csv"):
        assert (resumed.path / name).read_bytes() == (whole.path / name).read_bytes()
    assert pd.read_parquet(resumed.path / "results.parquet").equals(
        pd.read_parquet(whole.path / "results.parquet"))


def test_library_errors_name_python_parameters(tmp_path: Path) -> None:
    shared_data(GPQA_CSV)
    with pytest.raises(ConfigError, match=r"^n_runs must be an integer >= 1; got 0") as info:
        prepare_study(request(n_runs=0))
    assert info.value.parameters == ("n_runs",)
    with pytest.raises(ConfigError, match=r"^n_workers must be >= 1"):
        choose_backend("processes", n_workers=-1)
    with pytest.raises(ConfigError, match=r"^backend must be one of"):
        choose_backend("threads")
    # one typed input each: a request must be prepared, a backend chosen
    with pytest.raises(ConfigError, match=r"^prepared must be a PreparedStudy, not "
                                          r"StudyRequest; pass prepare_study\(request\)"):
        conduct_study(request(), tmp_path / "w")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"^backend must follow") as info:
        conduct(request(), tmp_path / "v", backend="processes")
    assert info.value.parameters == ("backend",)
    with pytest.raises(ConfigError, match=r"^resume: no interrupted study found"):
        resume_study(tmp_path / "none")
    assert not any(tmp_path.iterdir())


def test_a_pipe_or_folder_in_a_checkpoint_file_s_place_is_named(tmp_path: Path) -> None:
    """A pipe as the lock once gave 'Invalid argument' naming no file; a folder as the
    saved request was called missing."""
    import os

    from mdad.study.checkpoint import LOCK, REQUEST, StudyCheckpoint

    checkpoint = StudyCheckpoint(tmp_path / "progress")
    checkpoint.folder.mkdir()
    os.mkfifo(checkpoint.folder / LOCK)
    with pytest.raises(ConfigError, match=rf"{LOCK}: the lock file of the study "
                       r"checkpointed in \S+ is not a regular file; remove it$"):
        checkpoint.lock()
    (checkpoint.folder / REQUEST).mkdir()
    with pytest.raises(ConfigError, match=rf"^resume: \S+{REQUEST}: a folder, not a file, "
                       r"where the saved request goes; remove \S+ and start a new study$"):
        checkpoint.request()


def test_a_folder_or_dead_link_in_a_saved_run_s_place_is_named(tmp_path: Path) -> None:
    """A folder as a finished run's file once failed the resumed study after it had
    recomputed the run, naming its temporary file; one as a run's cells, a traceback."""
    from mdad.study.checkpoint import StudyCheckpoint

    checkpoint = StudyCheckpoint(tmp_path / "progress")
    checkpoint.start({})
    assert checkpoint.load(0, 0) is None and checkpoint.load_cells(0, 0) == {}
    (checkpoint.folder / "study000-run00000.npz").mkdir()
    (checkpoint.folder / "study000-run00001.cells").symlink_to(tmp_path / "gone")
    assert checkpoint.finished() == (0, 0)  # neither counts as saved work
    with pytest.raises(ConfigError, match=r"^resume: \S+study000-run00000\.npz: a folder, "
                       r"not a file, where a finished run is saved; remove it, and its work "
                       r"is recomputed$"):
        checkpoint.load(0, 0)
    with pytest.raises(ConfigError, match=r"^resume: \S+study000-run00001\.cells: .*link.*, "
                       r"where an unfinished run's cells are saved; remove it"):
        checkpoint.load_cells(0, 1)


@pytest.mark.parametrize(("field", "value", "message"), [
    ("methods", (), "methods must name at least one method"),
    ("methods", ("random", "random"), "methods lists a method twice"),
    ("methods", ("nope",), "nope"),
    ("n_runs", 0, "n_runs must be an integer >= 1"),
    ("n_resamples", 0, "n_resamples must be an integer >= 1"),
    ("seed", -1, "seed must be an integer >= 0"),
    ("threshold", 1.0, r"threshold must be in \(0, 1\)"),
    ("sources", (), "sources must give at least one"),
    ("sources", (30, 30), "sources lists a count twice"),
    ("sizes", (10, 0), "sizes must be an integer >= 1"),
    ("sizes", (10, 10), "sizes lists a size twice"),
    ("n_targets", 2.5, "n_targets must be an integer or 'all'"),
])
def test_config_constraints_need_no_data(field, value, message) -> None:
    # each parameter's own rule, declared once, checked before any data is read
    from dataclasses import replace

    from mdad.errors import MdadError
    from mdad.study.config import PARAMETER_CONSTRAINTS, check_config

    assert field in PARAMETER_CONSTRAINTS
    with pytest.raises(MdadError, match=message) as error:
        check_config(replace(StudyConfig(methods=("random",)), **{field: value}))
    assert field in error.value.parameters


def test_a_dataset_s_defaults_fill_only_what_the_config_leaves_unset() -> None:
    from mdad.data import load_dataset
    from mdad.study import plan_study
    from mdad.study.config import StudyDefaults

    matrix = load_dataset("synthetic:gpqa").matrix
    defaults = StudyDefaults(sizes=(10, 20), n_targets=12, sources=(30,))
    plan = plan_study(matrix, StudyConfig(methods=("random",)), defaults=defaults)
    assert (plan.sizes, plan.n_targets, plan.config.sources) == ((10, 20), 12, (30,))
    given = plan_study(matrix, StudyConfig(methods=("random",), sizes=(5,), n_targets=8,
                                           sources=(40,)), defaults=defaults)
    assert (given.sizes, given.n_targets, given.config.sources) == ((5,), 8, (40,))
    paper = plan_study(matrix, StudyConfig(methods=("random",)))
    assert (paper.n_targets, paper.config.sources) == (50, (300,))


def test_every_backend_declares_what_the_pipeline_uses() -> None:
    # no hasattr: each backend checks itself before any work and says what it used
    import inspect

    from mdad.study.backends import BACKENDS, Backend, choose_backend

    declared = {name for name, _ in inspect.getmembers(Backend) if not name.startswith("_")}
    assert {"check", "used", "execute"} <= declared
    for name in BACKENDS:
        backend = choose_backend(name, n_workers=2)
        assert backend.check() is None
        assert backend.used == ("in-process" if name == "auto" else backend.name)
