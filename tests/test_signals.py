"""Ctrl-C and SIGTERM end any command at once: real `mdad` processes, real signals.

Each stops within 5 s here (the goal is 2 s; a loaded two-core machine gets slack),
prints one line ``interrupted: ...`` saying what was kept and how to go on, exits 130
(SIGINT) or 143 (SIGTERM), and leaves no temporary file, staging folder or process.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import GPQA_CSV, MDAD, assert_ok, mdad_cli, shared_data

SIGNALS = [(signal.SIGINT, 130), (signal.SIGTERM, 143)]
LIMIT_SECONDS = 5.0


def _terminal_signals() -> None:
    """Ctrl-C as in a terminal, whatever this test process ignores; umask 022."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.umask(0o022)


def start(*args: object, cwd: Path) -> subprocess.Popen[str]:
    """`mdad` in a session of its own, so that its whole process group can be checked."""
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.Popen([str(MDAD), *map(str, args)], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=_terminal_signals)


def wait_until(condition, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the command never reached the point to stop it"
        time.sleep(0.02)


def group_members(group: int) -> list[str]:
    """The live (not zombie) processes of process group `group`."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            members.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
    return members


def stop(process: subprocess.Popen[str], sig: int) -> tuple[float, str]:
    """Send `sig`; the seconds until the process ended, and its stderr."""
    sent = time.monotonic()
    os.kill(process.pid, sig)
    try:
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    return time.monotonic() - sent, stderr


def assert_interrupted(process: subprocess.Popen[str], stderr: str, code: int,
                       pattern: str, progress: str | None = None) -> None:
    """Ended with `code` and one ``interrupted:`` line holding `pattern`; before it, only
    the command's own progress lines (starting with `progress`, when given), which a
    command past its first seconds prints as its fits finish."""
    assert process.returncode == code, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    lines = stderr.removesuffix("\n").split("\n")
    if progress is not None:
        lines = [line for line in lines if not line.startswith(progress)]
    assert len(lines) == 1, f"not one line:\n{stderr}"
    assert lines[0].startswith("interrupted: ") and pattern in lines[0], lines[0]
    deadline = time.monotonic() + 3
    while group_members(process.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert group_members(process.pid) == [], "processes outlived the command"


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of process `pid` so far (Linux's /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code"), SIGNALS)
@pytest.mark.parametrize(("dataset", "method", "cpu"), [
    ("gpqa", "tinybenchmarks", 3.0), ("synthetic:bbh", "anchor-points", 8.0)])
def test_select_stops_within_a_second_in_its_fits(sig: int, code: int, dataset: str,
                                                  method: str, cpu: float,
                                                  tmp_path: Path) -> None:
    """The selection and its cross-validation folds run in threads of the command's
    process, their compiled kernels without Python's lock: tinyBenchmarks' variational
    fits, and Anchor Points' k-medoids (FasterPAM on 5,761 items, which the kmedoids
    library ran holding the lock). Stopped in the middle of them, the command ends
    within a second, with its one line, and leaves no process behind."""
    if dataset == "gpqa":
        shared_data(GPQA_CSV)
    process = start("select", dataset, "--method", method, "--size", "200" if
                    method == "anchor-points" else "50", "--out", "mb.json", cwd=tmp_path)
    # past the imports and the data (under `cpu` seconds of CPU) and into the fits
    wait_until(lambda: process.poll() is not None or cpu_seconds(process.pid) > cpu)
    assert process.poll() is None, "the selection ended before it could be stopped"
    seconds, stderr = stop(process, sig)
    assert seconds < 1.0, f"took {seconds:.2f} s to stop"
    # a fit that ended before the signal has printed its progress line (past 2 s)
    assert_interrupted(process, stderr, code, "nothing was written (mdad writes each file "
                       "whole or not at all); run it again", progress="mdad select: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    shared_data(GPQA_CSV)
    folder = tmp_path_factory.mktemp("study") / "run"
    assert_ok(mdad_cli("run", "gpqa", "--methods", "random,subtask-equal", "--sizes", "10,25",
                       "--runs", "2", "--resamples", "20", "--report", "--out", folder,
                       cwd=folder.parent))
    return folder


def _report_files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*")
            if p.is_file()}


# A test-only runner: `mdad` whose figures take 0.3 s more each to save, so that a report
# is still drawing when the signal comes (a real one could finish between the check and
# the signal). The figures and the page are the real ones.
SLOW_FIGURES = """\
import sys, time
import matplotlib.figure
from mdad.cli.app import main

savefig = matplotlib.figure.Figure.savefig
def slow_savefig(self, *args, **kwargs):
    time.sleep(0.3)
    return savefig(self, *args, **kwargs)
matplotlib.figure.Figure.savefig = slow_savefig
sys.argv[0] = "mdad"
main()
"""


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code"), SIGNALS)
def test_report_stops_at_once_and_leaves_the_previous_report(sig: int, code: int,
                                                             study: Path,
                                                             tmp_path: Path) -> None:
    folder = tmp_path / "run"
    shutil.copytree(study, folder)
    before = _report_files(folder)
    runner = tmp_path / "slow_figures.py"
    runner.write_text(SLOW_FIGURES)
    env = {**os.environ, "NO_COLOR": "1"}
    process = subprocess.Popen([sys.executable, str(runner), "report", str(folder), "--force"],
                               cwd=tmp_path, env=env, text=True, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, start_new_session=True,
                               preexec_fn=_terminal_signals)
    # stop it once it has saved a figure in its staging folder: mid-way through
    wait_until(lambda: any(folder.glob(".figures.*/*")) or process.poll() is not None)
    assert process.poll() is None, "the report ended before it could be stopped"
    seconds, stderr = stop(process, sig)
    assert seconds < LIMIT_SECONDS, f"took {seconds:.1f} s to stop"
    assert_interrupted(process, stderr, code, "the report was not finished")
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".")) == []
    assert _report_files(folder) == before


@pytest.mark.slow
def test_the_next_report_removes_what_a_killed_one_left_and_nothing_else(
        study: Path, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    shutil.copytree(study, folder)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.png").write_bytes(b"the user's")
    stale = [".figures.k9x_2abc", ".figures.4194305.k9x_2abc"]  # old name; an ended pid
    for name in stale:
        (folder / name).mkdir()
        (folder / name / "mdad_vs_size_seen.png").write_bytes(b"half drawn")
    (folder / ".report.html.k9x_2abc").write_text("<html>half written")  # old page temporary
    (folder / ".report.html.abcd1234").symlink_to(victim / "keep.png")
    (folder / ".figures.zzzz1234").symlink_to(victim)  # a link: removed, never followed
    live = f".figures.{os.getpid()}.k9x_2abc"  # a report still running (this process)
    kept = [live, ".figures-mine", ".figures.notes.txt", ".report.html.bak"]
    (folder / live).mkdir()
    (folder / ".figures-mine").mkdir()
    (folder / ".figures.notes.txt").write_text("the user's")
    (folder / ".report.html.bak").write_text("the user's")
    assert_ok(mdad_cli("report", folder, "--force", cwd=tmp_path))
    hidden = sorted(p.name for p in folder.iterdir() if p.name.startswith("."))
    assert hidden == sorted(kept)
    assert sorted(p.name for p in victim.iterdir()) == ["keep.png"]
    assert (victim / "keep.png").read_bytes() == b"the user's"


def test_a_main_thread_that_cannot_act_on_a_signal_is_ended_by_the_watchdog(
        tmp_path: Path) -> None:
    """Python runs a signal's handler only between bytecodes: a library call that waits
    forever (pyarrow, when it cannot start a thread) would hold Ctrl-C off. Here the
    main thread's handler does nothing instead; the watchdog ends the process."""
    script = tmp_path / "held.py"
    script.write_text(
        "import signal, sys, time\n"
        "from mdad.cli import errors\n"
        "errors.stop_on_signals(grace=0.3)\n"
        "errors.allow_cleanup(60)\n"  # only for a main thread that heard the signal
        "signal.signal(signal.SIGINT, lambda *a: None)\n"
        "signal.signal(signal.SIGTERM, lambda *a: None)\n"
        "print('ready', flush=True)\n"
        "while True:\n"
        "    time.sleep(1)\n")
    for sig, code in SIGNALS:
        process = subprocess.Popen([sys.executable, str(script)], text=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   start_new_session=True)
        assert process.stdout.readline() == "ready\n"
        seconds, stderr = stop(process, sig)
        assert seconds < LIMIT_SECONDS
        assert process.returncode == code, stderr
        assert stderr == ("interrupted: nothing was written (mdad writes each file whole or "
                          "not at all); run it again\n")


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code"), SIGNALS)
def test_adaptive_start_stops_at_once_and_frees_its_lock(sig: int, code: int,
                                                         tmp_path: Path) -> None:
    """`adaptive start` fits and cross-validates in this process, holding the state's
    lock: it stops at once, writes no state, and the next start takes the lock."""
    shared_data(GPQA_CSV)
    args = ("adaptive", "start", "gpqa", "--budget", "50", "--batch", "5", "--out",
            "state.json")
    process = start(*args, cwd=tmp_path)
    wait_until(lambda: (tmp_path / ".state.json.lock").is_file() or process.poll() is not None)
    time.sleep(0.5)  # fitting
    assert process.poll() is None, "the start ended before it could be stopped"
    seconds, stderr = stop(process, sig)
    assert seconds < LIMIT_SECONDS, f"took {seconds:.1f} s to stop"
    assert_interrupted(process, stderr, code, "nothing was written")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".state.json.lock"]
    assert_ok(mdad_cli(*args, cwd=tmp_path))


def test_a_stop_raised_inside_a_weakref_callback_is_not_lost(tmp_path: Path) -> None:
    """A signal that lands while Python runs a weakref callback (the import system's,
    when it lands in an import) raises where Python cannot raise: it printed a
    traceback ("Exception ignored in ...") and the command went on. The stop is sent
    again instead, and raised in ordinary code, with nothing on stderr."""
    script = tmp_path / "callback.py"
    script.write_text(
        "import sys, time, weakref\n"
        "from mdad.cli import errors\n"
        "errors.stop_on_signals(grace=30)\n"
        "class Held:\n"
        "    pass\n"
        "def land(_):\n"
        "    raise STOP  # as a handler raises when the signal lands here\n"
        "try:\n"
        "    held = Held()\n"
        "    ref = weakref.ref(held, land)\n"
        "    del held\n"
        "    for _ in range(300):\n"
        "        time.sleep(0.01)\n"
        "    print('went on', flush=True)\n"
        "except (KeyboardInterrupt, errors.Terminated) as stop:\n"
        "    print(type(stop).__name__, flush=True)\n")
    for stop in ("KeyboardInterrupt()", "errors.Terminated()"):
        source = script.read_text().replace("STOP", stop)
        done = subprocess.run([sys.executable, "-c", source], capture_output=True,
                              text=True, timeout=60, preexec_fn=_terminal_signals)
        assert done.stdout == stop.removeprefix("errors.").removesuffix("()") + "\n"
        assert done.stderr == ""


def test_a_cleanup_allowed_longer_than_the_grace_runs_to_its_end_with_one_line(
        tmp_path: Path) -> None:
    """A command whose main thread heard the signal and allowed its cleanup longer than
    the grace (`mdad run` stops its workers and saves first) runs it to the end and
    prints its own line; the watchdog prints none and cuts nothing short."""
    script = tmp_path / "cleanup.py"
    script.write_text(
        "import os, sys, time\n"
        "from mdad.cli import errors\n"
        "errors.stop_on_signals(grace=0.3)\n"
        "errors.allow_cleanup(20)\n"
        "try:\n"
        "    print('ready', flush=True)\n"
        "    while True:\n"
        "        time.sleep(1)\n"
        "except (KeyboardInterrupt, errors.Terminated) as stop:\n"
        "    time.sleep(1.5)  # five times the grace\n"
        "    print('cleaned up', flush=True)\n"
        "    exit = errors.interrupted(stop, 'saved; continue with: resume')\n"
        "    time.sleep(0.1)  # still ending: the watchdog waits\n"
        "    os._exit(exit.exit_code)\n")
    for sig, code in SIGNALS:
        process = subprocess.Popen([sys.executable, str(script)], text=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   start_new_session=True, preexec_fn=_terminal_signals)
        assert process.stdout.readline() == "ready\n"
        sent = time.monotonic()
        os.kill(process.pid, sig)
        try:
            stdout, stderr = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
        assert process.returncode == code, stderr
        assert stderr == "interrupted: saved; continue with: resume\n"
        assert stdout == "cleaned up\n"
        assert 1.5 <= time.monotonic() - sent < LIMIT_SECONDS


def test_every_command_run_in_one_process_prints_its_own_interrupted_line(capsys) -> None:
    """typer's runner and the API run several commands in one process: each interrupted
    one prints its line (the mark that it was shown is the command's, not the
    process's)."""
    import typer

    from mdad.cli.errors import user_errors

    @user_errors(kept="kept this")
    def command() -> None:
        raise KeyboardInterrupt

    for _ in range(2):
        with pytest.raises(typer.Exit) as stopped:
            command()
        assert stopped.value.exit_code == 130
        assert capsys.readouterr().err == "interrupted: kept this\n"
