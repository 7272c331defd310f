"""Cells saved as they finish (`--resume` after SIGKILL) and the Dask backend, both
checked to give exactly the numbers of an uninterrupted local run."""

from __future__ import annotations

import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import GPQA_CSV, MDAD, assert_ok, assert_user_error, mdad_cli, shared_data

from mdad.data import load_dataset
from mdad.study import StudyConfig, plan_study, run_study
from mdad.study.backends import AutoBackend, ProcessBackend
from mdad.study.backends.dask_cluster import DaskBackend
from mdad.study.backends.processes import set_worker_studies, worker_run
from mdad.study.cells import compute_run
from mdad.study.checkpoint import StudyCheckpoint, checkpoint_dir
from mdad.study.records import CellOutput, RunAccuracies, RunJob, RunOutput

ARGS = ("run", "gpqa", "--methods", "random,tinybenchmarks-map", "--runs", "10", "--workers", "1",
        "--resamples", "50")


def freeze(process: subprocess.Popen) -> bool:
    """SIGSTOP `process` and wait until it has stopped; False if it has ended."""
    process.send_signal(signal.SIGSTOP)
    while True:
        state = Path(f"/proc/{process.pid}/stat").read_text().rsplit(") ", 1)[1][0]
        if state not in ("R", "S", "D"):  # running, sleeping or in a system call
            return state == "T"
        time.sleep(0.001)


@pytest.mark.slow
def test_sigkill_then_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    shared_data(GPQA_CSV)
    out = tmp_path / "killed"
    progress = checkpoint_dir(out)
    process = subprocess.Popen([str(MDAD), *ARGS, "--out", str(out)], cwd=tmp_path,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def mid_run() -> bool:  # three runs saved, and cells of the next one
        return (len(list(progress.glob("*-run*.npz"))) >= 3
                and bool(list(progress.glob("*.cells"))))

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        # checked again once the process is frozen (one process: --workers 1), so a
        # run that finished meanwhile is not taken for an interrupted one
        if mid_run():
            if freeze(process) and mid_run():
                break
            process.send_signal(signal.SIGCONT)
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    finished = sorted(p.name for p in progress.glob("*-run*.npz"))
    assert 3 <= len(finished) < 10, finished
    assert list(progress.glob("*.cells")), "killed between runs: no cell to resume"
    assert not out.exists()
    # a new run into the same folder is refused: it would lose the finished runs
    assert_user_error(mdad_cli(*ARGS, "--out", out, cwd=tmp_path),
                      r"has an interrupted study .*continue it with --resume")
    assert_ok(mdad_cli("run", "--resume", out, cwd=tmp_path))
    assert not progress.exists()
    full = tmp_path / "full"
    assert_ok(mdad_cli(*ARGS, "--out", full, cwd=tmp_path))
    assert pd.read_parquet(out / "results.parquet").equals(
        pd.read_parquet(full / "results.parquet"))
    assert (out / "mdad.csv").read_bytes() == (full / "mdad.csv").read_bytes()


def test_checkpoint_round_trip_and_skipping(tmp_path: Path) -> None:
    shared_data(GPQA_CSV)
    data = load_dataset("gpqa")
    plan = plan_study(data.matrix, StudyConfig(methods=("random",), sizes=(10,), n_runs=4))
    checkpoint = StudyCheckpoint(tmp_path / "progress")
    checkpoint.start({"request": {}})
    first = run_study(data.matrix, plan, checkpoint=checkpoint)
    assert checkpoint.finished() == (4, 0)
    calls = []
    again = run_study(data.matrix, plan, checkpoint=checkpoint,
                      progress=lambda done, total: calls.append(done))
    assert np.array_equal(first.estimates, again.estimates)
    assert np.array_equal(first.seen, again.seen)
    assert calls[-1] == plan.n_cells


def test_saved_cells_are_taken_not_recomputed(tmp_path: Path) -> None:
    shared_data(GPQA_CSV)
    data = load_dataset("gpqa")
    # the MAP variant: an IRT fit shared by sizes, without the variational fit's seconds
    plan = plan_study(data.matrix, StudyConfig(methods=("random", "tinybenchmarks-map"),
                                               sizes=(10, 25), n_runs=3))
    full = run_study(data.matrix, plan)
    checkpoint = StudyCheckpoint(tmp_path / "progress")
    checkpoint.start({"request": {}})
    # run 1 was interrupted after two cells; one of them is marked to tell it apart
    cells = {}
    compute_run(data.matrix, plan, 1, on_cell=lambda cell: cells.setdefault(cell.key, cell))
    # keys are (method, size, source count), as the arrays are indexed
    marked = CellOutput(1, (1, 0, 0), cells[(1, 0, 0)].estimates + 1000.0, 2.5, ("noted",))
    checkpoint.save_cell(0, marked)
    checkpoint.save_cell(0, cells[(0, 1, 0)])
    assert checkpoint.finished() == (0, 2)
    assert set(checkpoint.load_cells(0, 1)) == {(1, 0, 0), (0, 1, 0)}
    calls = []
    resumed = run_study(data.matrix, plan, checkpoint=checkpoint,
                        progress=lambda done, total: calls.append(done))
    assert np.array_equal(resumed.estimates[1, 0, 0, 1], marked.estimates)
    expected = full.estimates.copy()
    expected[1, 0, 0, 1] = marked.estimates
    assert np.array_equal(resumed.estimates, expected)
    assert any("noted" in notice for notice in resumed.notices)
    assert calls[0] == 2 and calls[-1] == plan.n_cells  # the saved cells count as done
    assert checkpoint.finished() == (3, 0)  # each finished run replaced its cells
    # a record cut short (a kill or power loss mid-write) ends the log: the cells
    # before it are kept, it is dropped from the file, and new cells append after them
    checkpoint.save_cell(0, CellOutput(2, (0, 0, 0), cells[(0, 0, 0)].estimates, 1.0, ()))
    log = next(checkpoint.folder.glob("study000-run00002.*"))
    whole = log.stat().st_size
    checkpoint.save_cell(0, CellOutput(2, (0, 1, 0), cells[(0, 1, 0)].estimates, 1.0, ()))
    log.write_bytes(log.read_bytes()[:-5])
    assert set(checkpoint.load_cells(0, 2)) == {(0, 0, 0)} and log.stat().st_size == whole
    checkpoint.save_cell(0, CellOutput(2, (1, 0, 0), cells[(1, 0, 0)].estimates, 1.0,
                                       ("a note",)))
    again = checkpoint.load_cells(0, 2)
    assert set(again) == {(0, 0, 0), (1, 0, 0)} and again[(1, 0, 0)].notes == ("a note",)
    assert checkpoint.finished() == (3, 2)
    # a flipped byte fails the record's checksum: it and what follows are recomputed
    damaged = bytearray(log.read_bytes())
    damaged[whole + 40] ^= 0xFF
    log.write_bytes(bytes(damaged))
    assert set(checkpoint.load_cells(0, 2)) == {(0, 0, 0)}


def test_worker_processes_save_every_cell(tmp_path: Path) -> None:
    shared_data(GPQA_CSV)
    data = load_dataset("gpqa")
    plan = plan_study(data.matrix, StudyConfig(methods=("random", "anchor-points"),
                                               sizes=(10, 25), n_runs=2))
    checkpoint = StudyCheckpoint(tmp_path / "progress")
    checkpoint.start({"request": {}})
    set_worker_studies([(data.matrix, plan)])  # what a worker holds (no signal setup)
    _, out = worker_run(RunJob(0, 1), checkpoint.folder)
    cells = checkpoint.load_cells(0, 1)
    assert len(cells) == 4
    for (m, s, c), cell in cells.items():
        assert np.array_equal(cell.estimates, out.estimates[m, s, c])


def test_resume_of_a_folder_without_a_run(tmp_path: Path) -> None:
    assert_user_error(mdad_cli("run", "--resume", tmp_path / "nothing", cwd=tmp_path),
                      r"--resume: no interrupted study found")
    progress = checkpoint_dir(tmp_path / "broken")
    progress.mkdir()
    (progress / "request.json").write_text("{not json")
    assert_user_error(mdad_cli("run", "--resume", tmp_path / "broken", cwd=tmp_path),
                      r"--resume: cannot read .*request.json")
    (progress / "request.json").write_text('{"request": {"dataset": "gpqa"}}')
    assert_user_error(mdad_cli("run", "--resume", tmp_path / "broken", cwd=tmp_path),
                      r"saved study request was made by another version of mdad")


@pytest.mark.slow  # a local Dask cluster takes 10 s to start
def test_dask_local_cluster_is_bit_identical_to_local(tmp_path: Path) -> None:
    """A real local Dask cluster of 2 worker processes."""
    shared_data(GPQA_CSV)
    data = load_dataset("gpqa")
    plan = plan_study(data.matrix, StudyConfig(methods=("random", "anchor-points",
                                                        "tinybenchmarks-map"),
                                               sizes=(10, 50), n_runs=4))
    local = run_study(data.matrix, plan)
    checkpoint = StudyCheckpoint(tmp_path / "progress")
    checkpoint.start({"request": {}})
    saved = []
    original = checkpoint.save_cell
    checkpoint.save_cell = lambda study, cell: (saved.append(cell), original(study, cell))
    on_dask = run_study(data.matrix, plan, backend=DaskBackend("local", 2),
                        checkpoint=checkpoint)
    assert np.array_equal(local.estimates, on_dask.estimates)
    assert np.array_equal(local.targets, on_dask.targets)
    # every cell came back from the workers through the queue and was saved here, and
    # each finished run's file replaced its cells
    assert 0 < len(saved) <= plan.n_cells
    assert checkpoint.finished() == (plan.config.n_runs, 0)
    for cell in saved:
        m, s, c = cell.key
        assert np.array_equal(cell.estimates, local.estimates[m, s, c, cell.run])
    assert_user_error(mdad_cli("run", "gpqa", "--methods", "random", "--runs", "2",
                               "--backend", "dask", "--scheduler", "tcp://127.0.0.1:9",
                               "--out", tmp_path / "nowhere", cwd=tmp_path),
                      r"--scheduler tcp://127.0.0.1:9: cannot connect")
    assert not checkpoint_dir(tmp_path / "nowhere").exists()


@pytest.mark.slow
def test_dask_backend_through_the_cli(tmp_path: Path) -> None:
    shared_data(GPQA_CSV)
    args = ("run", "gpqa", "--methods", "random", "--runs", "3", "--resamples", "20")
    # a process of its own: a Dask cluster leaves handlers and config in its process
    assert_ok(mdad_cli(*args, "--backend", "dask", "--workers", "2", "--out",
                       tmp_path / "dask", cwd=tmp_path, process=True))
    assert_ok(mdad_cli(*args, "--out", tmp_path / "local", cwd=tmp_path))
    assert ((tmp_path / "dask" / "mdad.csv").read_bytes()
            == (tmp_path / "local" / "mdad.csv").read_bytes())


def _progress_calls(backend, tmp_path: Path, name: str):
    data = load_dataset("gpqa")
    plan = plan_study(data.matrix, StudyConfig(methods=("random", "anchor-points"),
                                               sizes=(10, 25), n_runs=4))
    checkpoint = StudyCheckpoint(tmp_path / name)
    checkpoint.start({"request": {}})
    calls: list[tuple[int, int]] = []
    result = run_study(data.matrix, plan, backend=backend, checkpoint=checkpoint,
                       progress=lambda done, total: calls.append((done, total)))
    return plan, result, calls


def test_worker_processes_count_progress_by_cell(tmp_path: Path) -> None:
    """Progress moves a cell at a time with worker processes too, never past the total,
    and the numbers equal those computed here."""
    shared_data(GPQA_CSV)
    plan, here, _ = _progress_calls(None, tmp_path, "here")
    _, spread, calls = _progress_calls(ProcessBackend(2), tmp_path, "spread")
    assert np.array_equal(here.estimates, spread.estimates)
    done = [d for d, _ in calls]
    assert calls[0] == (0, plan.n_cells) and done[-1] == plan.n_cells
    assert done == sorted(done) and len(set(done)) > plan.config.n_runs + 1  # not run by run
    assert all(total == plan.n_cells for _, total in calls)


def test_auto_backend_hands_expensive_work_to_workers(tmp_path: Path) -> None:
    """"auto" keeps cheap work here and hands the rest (with the finished cells of the
    run it was in) to processes once it outweighs their start-up; same numbers."""
    shared_data(GPQA_CSV)
    _, here, _ = _progress_calls(None, tmp_path, "here")
    cheap = AutoBackend(2, start_seconds=1e6)
    _, kept, _ = _progress_calls(cheap, tmp_path, "kept")
    assert cheap.used == "in-process"
    eager = AutoBackend(2, start_seconds=1e-6)
    plan, handed, calls = _progress_calls(eager, tmp_path, "handed")
    assert eager.used == "processes"
    assert np.array_equal(here.estimates, kept.estimates)
    assert np.array_equal(here.estimates, handed.estimates)
    assert calls[-1] == (plan.n_cells, plan.n_cells)


def test_a_file_from_another_study_or_run_is_refused(tmp_path: Path) -> None:
    import shutil
    import struct
    import zlib

    from mdad.errors import ConfigError
    from mdad.study.checkpoint import _read_records

    estimates = np.arange(3.0)
    run = RunOutput(1, np.zeros((1, 1, 1, 2)), RunAccuracies(*(np.zeros(2),) * 3),
                    np.arange(2), np.zeros(1), Counter(), np.zeros((1, 1, 1, 2)))
    ours, theirs = StudyCheckpoint(tmp_path / "ours"), StudyCheckpoint(tmp_path / "theirs")
    ours.start({"request": {"seed": 0}})
    theirs.start({"request": {"seed": 1}})
    for checkpoint in (ours, theirs):
        checkpoint.save(0, run)
        checkpoint.save_cell(0, CellOutput(2, (0, 0, 0), estimates, 1.0, ()))
    assert ours.load(0, 1) is not None and set(ours.load_cells(0, 2)) == {(0, 0, 0)}
    for name in ("study000-run00001.npz", "study000-run00002.cells"):
        shutil.copy(theirs.folder / name, ours.folder / name)
    with pytest.raises(ConfigError, match=r"run00001\.npz holds the work of another study or "
                                          r"run .*; remove it, and its work is recomputed"):
        ours.load(0, 1)
    with pytest.raises(ConfigError, match=r"run00002\.cells holds the work of another study"):
        ours.load_cells(0, 2)
    # renamed to another run of the same study: refused too
    (ours.folder / "study000-run00002.cells").rename(ours.folder / "study000-run00003.cells")
    ours.save(0, run)
    (ours.folder / "study000-run00001.npz").rename(ours.folder / "study000-run00004.npz")
    with pytest.raises(ConfigError, match=r"run00004\.npz holds the work"):
        ours.load(0, 4)
    with pytest.raises(ConfigError, match=r"run00003\.cells holds the work"):
        ours.load_cells(0, 3)
    # a record of mdad before owners (MDC2) is still read, as it was written
    legacy = struct.pack("<4s3i3dII", b"MDC2", 0, 1, 0, 1.0, 3.0, 0.5, 3, 2)
    legacy += estimates.astype("<f8").tobytes() + b"[]"
    legacy += struct.pack("<I", zlib.crc32(legacy))
    cells, end, owners = _read_records(legacy, 5)
    assert list(cells) == [(0, 1, 0)] and end == len(legacy) and owners == {None}
    assert np.array_equal(cells[(0, 1, 0)].estimates, estimates)
