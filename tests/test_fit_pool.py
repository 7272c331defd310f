"""`run_fits`: fits in a thread here and in one spawned worker, or in several threads
here, same results every way."""

from __future__ import annotations

import os
import time

import pytest
from helpers import GPQA_CSV, shared_data

import mdad.practice.bundle as bundle
from mdad.data import load_dataset
from mdad.practice import select_microbenchmark
from mdad.practice.fit_pool import run_fits


def test_every_task_once_here_when_the_first_is_quick():
    tasks = [(pow, (2, k)) for k in range(6)]
    results = dict(run_fits(tasks, spawn_after=5.0))
    assert results == {k: 2 ** k for k in range(6)}


def test_a_slow_first_task_starts_the_worker_for_the_next():
    def slow_pid() -> int:  # runs here only: it need not be picklable
        time.sleep(0.5)
        return os.getpid()

    tasks = [(slow_pid, ())] + [(os.getpid, ())] * 4
    finished = list(run_fits(tasks, spawn_after=0.05))
    assert sorted(index for index, _ in finished) == [0, 1, 2, 3, 4]
    pids = dict(finished)
    assert pids[0] == os.getpid()  # the first always runs here
    assert pids[1] != os.getpid()  # sent to the worker as it started


def test_a_quick_first_task_starts_no_worker_however_long_the_rest():
    tasks = [(os.getpid, ())] + [(time.sleep, (0.1,)), (os.getpid, ())] * 3
    pids = {pid for _, pid in run_fits(tasks, spawn_after=0.05) if pid is not None}
    assert pids == {os.getpid()}
    assert list(run_fits([], spawn_after=0.0)) == []


def test_fits_in_threads_run_side_by_side_and_start_no_worker():
    started: list[float] = []

    def nap(seconds: float) -> int:
        started.append(time.monotonic())
        time.sleep(seconds)  # releases the lock, as the compiled fits do
        return os.getpid()

    tasks = [(nap, (0.3,))] * 4
    begun = time.monotonic()
    pids = dict(run_fits(tasks, spawn_after=0.0, threads=2))
    assert set(pids.values()) == {os.getpid()} and sorted(pids) == [0, 1, 2, 3]
    assert time.monotonic() - begun < 1.0  # two at a time: 0.6 s, not 1.2
    assert started[1] - started[0] < 0.2


def test_meanwhile_runs_here_while_every_queued_task_keeps_going():
    """Work beside the fits does not hold back the next fits: with no worker, every
    task is queued at once, and the threads take them up while `meanwhile` runs."""
    events: list[tuple[str, float]] = []

    def nap(seconds: float) -> None:
        events.append(("start", time.monotonic()))
        time.sleep(seconds)

    def meanwhile() -> None:
        events.append(("meanwhile", time.monotonic()))
        time.sleep(0.6)
        events.append(("meanwhile done", time.monotonic()))

    results = dict(run_fits([(nap, (0.05,))] * 6, spawn_after=None, threads=2,
                            meanwhile=meanwhile))
    assert sorted(results) == list(range(6))
    done = dict(events)["meanwhile done"]
    # six naps of 0.05 s in two threads start well before the 0.6 s beside it ends
    assert sum(kind == "start" and at < done for kind, at in events) == 6


def test_libraries_after_fit_load_only_when_asked(monkeypatch):
    import sys

    from mdad.selection.threads import load_libraries

    class Method:
        libraries = ("colorsys", "wave")
        libraries_after_fit = ("wave",)

    for module in Method.libraries:
        monkeypatch.delitem(sys.modules, module, raising=False)
    load_libraries([Method], include_after_fit=False)
    assert "colorsys" in sys.modules and "wave" not in sys.modules
    load_libraries([Method])
    assert "wave" in sys.modules


def test_an_error_in_a_thread_reaches_the_caller_and_the_rest_is_dropped():
    tasks = [(time.sleep, (0.2,)), (int, ("not a number",)), (time.sleep, (0.2,))]
    with pytest.raises(ValueError):
        dict(run_fits(tasks, spawn_after=None, threads=2))


def test_an_error_in_a_task_reaches_the_caller():
    with pytest.raises(ValueError):
        dict(run_fits([(int, ("1",)), (int, ("not a number",))], spawn_after=None))


def test_select_gives_the_same_file_with_and_without_the_worker(monkeypatch):
    shared_data(GPQA_CSV)  # fails, not skips, under CI when the data is missing
    data = load_dataset("gpqa")
    alone = select_microbenchmark(data, "anchor-points", 20, seed=3)
    monkeypatch.setattr(bundle, "SPAWN_AFTER_SECONDS", 0.0)  # the worker takes fold 1
    shared = select_microbenchmark(data, "anchor-points", 20, seed=3, spawn_worker=True)
    assert shared.to_json() == alone.to_json()
    assert shared.error_sd is not None


def test_an_error_here_stops_the_worker_without_waiting_for_its_task():
    started = time.monotonic()
    tasks = [(time.sleep, (1.0,)), (time.sleep, (60,)), (int, ("not a number",))]
    with pytest.raises(ValueError):
        dict(run_fits(tasks, spawn_after=0.05))  # the worker sleeps; the error is here
    assert time.monotonic() - started < 30
