"""Resources running out, and the temporaries of every writer.

Low memory (an address-space limit set in the child), a worker killed as the OOM
killer kills, and a full disk each give one line and exit 2: the cause, the file if
any, and how to go on; never a traceback. Every file `mdad` writes goes through a
unique temporary: a link planted at an old fixed temporary name, at a stale
temporary or at the output itself never leads a write elsewhere.
"""

from __future__ import annotations

import errno
import os
import resource
import signal
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import numpy as np
import pytest
from helpers import GPQA_CSV, MDAD, assert_ok, assert_user_error, shared_data

from mdad.cli.errors import resource_message, smaller_options


def _limited(kilobytes: int):
    def limit() -> None:
        os.umask(0o022)
        resource.setrlimit(resource.RLIMIT_AS, (kilobytes * 1024, kilobytes * 1024))
    return limit


# the libraries' own failures under a limit, past mdad's refusal below 1 GB (tested below)
NO_FLOOR = {**os.environ, "NO_COLOR": "1", "MDAD_MIN_ADDRESS_SPACE_MB": "0"}


def mdad_limited(*args: object, cwd: Path, kilobytes: int,
                 env: dict[str, str] = NO_FLOOR) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(MDAD), *map(str, args)], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=120, check=False,
                          preexec_fn=_limited(kilobytes))


# ---------------------------------------------------------------- the one-line messages


@pytest.mark.parametrize(("exc", "pattern"), [
    (MemoryError(), r"^out of memory \(MemoryError\); ask for less \(lower --size\) or "
                    r"free some memory \(close other programs\), then run it again$"),
    (ImportError("libx.so: failed to map segment from shared object", name="_imaging"),
     r"^out of memory loading _imaging \(libx\.so: failed to map segment"),
    (RuntimeError("can't start new thread"), r"^out of memory or threads: cannot start"),
    (SystemError("error return without exception set"),
     r"^out of memory, most likely: a compiled library failed without saying why "
     r"\(error return without exception set\), as they do when memory runs out \(with "
     r"memory to spare, that library has a bug\); ask"),
    (SystemError("<function _find_and_load at 0x7f62acd17ce0> returned NULL without "
                 "setting an exception"),  # matplotlib's import at 350 MB (CI, Python 3.11)
     r"^out of memory, most likely: a compiled library failed without saying why "
     r"\(<function _find_and_load at 0x7f62acd17ce0> returned NULL without setting an"),
    (SystemError("creation of module _x failed without setting an exception"), None),
    (ValueError("Error tokenizing data. C error: out of memory"),
     r"^out of memory or threads \(Error tokenizing data\. C error: out of memory\); ask"),
    (BrokenProcessPool("A process in the process pool was terminated abruptly"),
     r"^a worker process ended abruptly \(killed: .*\); ask for less"),
    (OSError(errno.ENOSPC, "No space left on device", "/data/mb.json"),
     r"^/data/mb\.json: No space left on device; free some space, then run it again$"),
    (OSError(errno.EMFILE, "Too many open files"), r"^too many open files .*ulimit -n"),
    (OSError(errno.EACCES, "Permission denied", "/x"),
     r"^/x: Permission denied; check the path, its permissions and the free space$"),
])
def test_a_resource_running_out_is_one_line_with_its_cause(exc: BaseException,
                                                           pattern: str | None) -> None:
    import re

    line = resource_message(exc, ["--size"])
    if pattern is None:  # a broken extension's mark, not memory: its traceback is kept
        assert line is None, line
        return
    assert line is not None and "\n" not in line and re.search(pattern, line), line


AGAIN_ON_THE_WAY_OUT = """\
from mdad.cli import app, errors

def command():
    raise errors.fail("out of memory (MemoryError); ask for less (lower --size)")

def exit_without_memory(*args, **kwargs):
    raise MemoryError

app._main = lambda: command()
errors.typer.Exit = exit_without_memory  # building the exit runs out of memory too
app.main()
"""


def test_memory_running_out_again_after_the_error_line_adds_no_second_line() -> None:
    """CI met it under a 300 MB limit: `select` printed its line, memory ran out again on
    the way out, and the last-resort handler printed a second, shorter one."""
    proc = subprocess.run([sys.executable, "-c", AGAIN_ON_THE_WAY_OUT], capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        "mdad: error: out of memory (MemoryError); ask for less (lower --size)"]


def test_memory_running_out_again_while_reading_the_error_is_still_one_line() -> None:
    """Under a 300 MB limit `select` printed its line, memory ran out on the way out,
    and again as `main` looked at that error: a traceback, exit code 1 (2 of 20 runs)."""
    script = AGAIN_ON_THE_WAY_OUT + "\n".join([
        "", "import sys", "def reading(*args, **kwargs):", "    raise MemoryError",
        "errors.resource_message = reading", "sys.exit(app.main())"])
    assert script.count("\napp.main()\n") == 1
    script = script.replace("\napp.main()\n", "\n", 1)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        "mdad: error: out of memory (MemoryError); ask for less (lower --size)"]


def test_no_memory_left_to_print_the_line_still_exits_2_without_a_traceback() -> None:
    script = "\n".join([
        "from mdad.cli import app, errors", "def no_memory(*args, **kwargs):",
        "    raise MemoryError", "app._main = no_memory", "errors.print_error = no_memory",
        "app.main()"])
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=False)
    assert (proc.returncode, proc.stderr) == (2, "")


def test_pyarrow_errors_are_recognised_without_importing_pyarrow_first() -> None:
    import pyarrow.lib

    assert resource_message(pyarrow.lib.ArrowMemoryError("malloc of size 64 failed"))
    thread = resource_message(pyarrow.lib.ArrowException(
        "Unknown error: Failed to launch worker thread: Resource temporarily unavailable"))
    assert thread and thread.startswith("out of memory in pyarrow (Unknown error: Failed")
    assert resource_message(pyarrow.lib.ArrowException("an unrelated bug")) is None
    assert resource_message(ValueError("a bug")) is None  # its traceback is kept


def test_the_advice_names_the_commands_own_options_and_how_to_go_on() -> None:
    # `mdad run`'s options as its command gets them; `adaptive next` has none of these
    run = smaller_options({"runs": 50, "resamples": 1000, "sizes": None, "models": None,
                           "workers": 0, "dataset": "gpqa"})
    assert run == ["--runs", "--resamples", "--workers"]
    assert smaller_options({"state": "s.json", "results": "r", "metric": None}) == []
    line = resource_message(MemoryError(), [])
    assert line == ("out of memory (MemoryError); free some memory (close other programs), "
                    "then run it again")
    stopped = MemoryError()
    stopped.add_note("continue with: mdad run --resume runs/x")
    assert resource_message(stopped, run).endswith(
        "or free some memory (close other programs), then continue with: mdad run --resume "
        "runs/x")
    wrapped = RuntimeError("a library's own error")  # raised while memory ran out
    wrapped.__context__ = MemoryError()
    assert resource_message(wrapped, run).startswith("out of memory (MemoryError)")


def test_below_one_gigabyte_of_memory_limit_a_command_is_refused_in_one_line(
        monkeypatch) -> None:
    from mdad.cli.limits import memory_floor_line

    monkeypatch.delenv("MDAD_MIN_ADDRESS_SPACE_MB", raising=False)
    mib = 2**20
    line = memory_floor_line(limits={"-v": (264 * mib, None), "-d": (None, None)})
    assert line == ("this command needs a memory limit of at least 1024 MB (below it the "
                    "scientific libraries can hang or crash as they load), and here `ulimit -v` "
                    "is 264 MB: raise it (ulimit -S -v unlimited); or set "
                    "MDAD_MIN_ADDRESS_SPACE_MB=0 to try anyway, then run it again")
    # one byte short is short (and not rounded up to the need), the need itself is not
    assert "`ulimit -v` is 1023 MB:" in memory_floor_line(limits={"-v": (1024 * mib - 1, None)})
    assert memory_floor_line(limits={"-v": (1024 * mib, None)}) is None
    assert memory_floor_line(limits={"-v": (None, None), "-d": (None, None)}) is None
    assert memory_floor_line(limits={}) is None
    # every limit below the need is named; bash's `ulimit -v N` would set the hard limit
    # too, so the soft one is raised, up to the hard one
    line = memory_floor_line(limits={"-v": (500 * mib, 2048 * mib), "-d": (700 * mib, None),
                                     "-x": (2048 * mib, None)})
    assert ("here `ulimit -v` is 500 MB and `ulimit -d` is 700 MB: raise them (ulimit -S -v "
            "2097152; ulimit -S -d unlimited); or set") in line
    # a hard limit below the need: only a privileged process raises it
    line = memory_floor_line(limits={"-v": (600 * mib, 800 * mib), "-d": (900 * mib, None)})
    assert line.endswith(
        "here `ulimit -v` is 600 MB and `ulimit -d` is 900 MB: raise it (ulimit -S -d "
        "unlimited); `ulimit -v`'s hard limit is 800 MB, which usually only the administrator "
        "can raise; or set MDAD_MIN_ADDRESS_SPACE_MB=0 to try anyway, then run it again")
    assert memory_floor_line(256, limits={"-v": (256 * mib, None)}) is None
    assert "at least 256 MB" in memory_floor_line(256, limits={"-v": (255 * mib, None)})
    # the setting replaces every command's need (shown rounded up); 0 lifts it
    monkeypatch.setenv("MDAD_MIN_ADDRESS_SPACE_MB", " 0 ")
    assert memory_floor_line(limits={"-v": (mib, None)}) is None
    monkeypatch.setenv("MDAD_MIN_ADDRESS_SPACE_MB", "200")
    assert memory_floor_line(limits={"-v": (200 * mib, None)}) is None
    assert "at least 200 MB" in memory_floor_line(256, limits={"-v": (199 * mib, None)})
    monkeypatch.setenv("MDAD_MIN_ADDRESS_SPACE_MB", "1000.4")
    assert "at least 1001 MB" in memory_floor_line(limits={"-v": (1000 * mib, None)})
    monkeypatch.setenv("MDAD_MIN_ADDRESS_SPACE_MB", "1e6")
    assert "at least 1000000 MB" in memory_floor_line(limits={"-v": (mib, None)})
    for wrong in ("lots", "nan", "inf", "-1"):
        monkeypatch.setenv("MDAD_MIN_ADDRESS_SPACE_MB", wrong)
        assert memory_floor_line(limits={"-v": (mib, None)}) == (
            f"MDAD_MIN_ADDRESS_SPACE_MB={wrong!r} must be a number of MB, 0 or more (0: no "
            "floor); fix it or unset it")
        # read only where a limit is set
        assert memory_floor_line(limits={"-v": (None, None)}) is None


def test_the_fits_compiled_pass_loads_before_the_fit_threads(monkeypatch) -> None:
    """A load that failed (memory) in one fit thread left `mdad.irt._map_pass` half made
    for the other: `adaptive start` under 480 MB printed a traceback ("cannot import
    name 'loglik_and_gradient'"). The pass now loads in the caller's thread."""
    import importlib.abc
    import threading

    from mdad.practice import adaptive

    loaded_in: list[str] = []

    class Watch(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name == "mdad.irt._map_pass":
                loaded_in.append(threading.current_thread().name)
            return None

    monkeypatch.delitem(sys.modules, "mdad.irt._map_pass", raising=False)
    monkeypatch.setattr(sys, "meta_path", [Watch(), *sys.meta_path])
    scores = (np.random.default_rng(0).random((40, 12)) < 0.5).astype(float)
    adaptive._run([(adaptive._fold_fit, (scores, 1, np.random.default_rng(k), np.arange(5)))
                   for k in range(2)], scores)
    assert loaded_in == [threading.current_thread().name]


# ------------------------------------------------------------------------- real processes


# the floor as users meet it: no MDAD_MIN_ADDRESS_SPACE_MB
WITH_FLOOR = {k: v for k, v in NO_FLOOR.items() if k != "MDAD_MIN_ADDRESS_SPACE_MB"}


@pytest.mark.parametrize("command", [
    ("select", "gpqa", "--method", "random", "--size", "10", "--out", "mb.json"),
    ("plan", "gpqa", "--size", "10"),
    ("run", "gpqa", "--methods", "random", "--out", "study"),
    ("report", "study"),
    ("adaptive", "start", "gpqa", "--budget", "20", "--out", "state.json"),
    ("data", "info", "synthetic:gpqa"),  # a fit: hung at 550 MB
    ("select", "gpqa", "--method", "random", "--size", "10", "--out", "--help"),
])
def test_under_the_hanging_limits_a_command_is_refused_at_once(command: tuple[str, ...],
                                                                tmp_path: Path) -> None:
    """At 260 to 290 MB `select` and `plan` hung in scipy's OpenBLAS, Ctrl-C unanswered;
    up to 780 MB `report`, `run` and `adaptive start` could abort or crash (measured
    2026-12-07). Below 1 GB each is now refused before any library loads."""
    proc = subprocess.run([str(MDAD), *command], cwd=tmp_path, env=WITH_FLOOR, text=True,
                          capture_output=True, timeout=20, check=False,
                          preexec_fn=_limited(270_000))
    assert_user_error(proc, r"error: this command needs a memory limit of at least 1024 MB")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", [("methods",), ("--version",), ("select", "--help"),
                                     ("data",), ("adaptive", "start", "--help")])
def test_help_and_the_method_list_run_under_the_hanging_limits(command: tuple[str, ...],
                                                               tmp_path: Path) -> None:
    proc = subprocess.run([str(MDAD), *command], cwd=tmp_path, env=WITH_FLOOR, text=True,
                          capture_output=True, timeout=20, check=False,
                          preexec_fn=_limited(270_000))
    if command == ("data",):  # a group alone prints its usage, with click's exit code 2
        assert proc.returncode == 2 and proc.stderr.startswith("Usage: mdad data"), proc.stderr
    else:
        assert proc.returncode == 0 and proc.stdout and not proc.stderr, proc.stderr


def test_a_data_segment_limit_is_refused_too(tmp_path: Path) -> None:
    """`ulimit -d` 100,000 KB: OpenBLAS gave up in its own line, with exit code 1."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_DATA, (100_000 * 1024, 100_000 * 1024))

    proc = subprocess.run([str(MDAD), "select", "gpqa", "--method", "random", "--size", "10",
                           "--out", "mb.json"], cwd=tmp_path, env=WITH_FLOOR, text=True,
                          capture_output=True, timeout=20, check=False, preexec_fn=limit)
    assert_user_error(proc, r"here `ulimit -d` is 97 MB: `ulimit -d`'s hard limit is 97 MB, which")
    assert list(tmp_path.iterdir()) == []


LIMITS_KB = (300_000, 400_000, 450_000)


@pytest.mark.slow
@pytest.mark.parametrize("kilobytes", LIMITS_KB)
@pytest.mark.parametrize("command", [
    ("select", "gpqa", "--method", "random", "--size", "10", "--out", "mb.json"),
    ("plan", "gpqa", "--size", "10"),
    ("data", "info", "gpqa"),
])
def test_low_memory_is_one_line_or_success(command: tuple[str, ...], kilobytes: int,
                                           tmp_path: Path) -> None:
    """Under an address-space limit the command succeeds or says, in one line, that
    memory ran out and how to go on; the advice names only its own options. At the
    lowest limit, `select` and `plan` must fail (so that the one line is what is
    checked); `data info gpqa` needs so little that it succeeds there, and below it
    OpenBLAS aborts before mdad runs (measured 140,000 to 300,000 KB, 2026-12-04)."""
    shared_data(GPQA_CSV)
    proc = mdad_limited(*command, cwd=tmp_path, kilobytes=kilobytes)
    if kilobytes == min(LIMITS_KB) and command[0] != "data":
        assert proc.returncode == 2, f"did not run out of memory:\n{proc.stderr}"
    if proc.returncode == 0:
        return
    line = assert_user_error(proc, r"out of memory|cannot start a thread")
    assert line.endswith("then run it again")
    assert "--runs" not in line and "--resamples" not in line
    if command[0] == "data":
        assert "ask for less" not in line  # `data info gpqa` has nothing to lower
    assert not (tmp_path / "mb.json").exists()


@pytest.mark.slow
def test_report_under_low_memory_never_hangs(tmp_path: Path) -> None:
    """At 430,000 KB pyarrow could not start a thread and waited for it forever; the
    report now fails in one line, or Ctrl-C ends it at once (the watchdog). At the
    lower limit it must fail in one line (measured: numpy cannot map a library), so
    that the one line is what is checked."""
    shared_data(GPQA_CSV)
    folder = tmp_path / "run"
    assert_ok(subprocess.run([str(MDAD), "run", "gpqa", "--methods", "random", "--sizes", "10",
                              "--runs", "2", "--resamples", "20", "--out", str(folder)],
                             cwd=tmp_path, capture_output=True, text=True, timeout=300))
    lowest = 350_000
    for kilobytes in (lowest, 430_000):
        process = subprocess.Popen([str(MDAD), "report", str(folder), "--force"], text=True,
                                   env=NO_FLOOR, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   start_new_session=True, preexec_fn=_limited(kilobytes))
        try:
            _, stderr = process.communicate(timeout=15)
        except subprocess.TimeoutExpired:  # held in a library: Ctrl-C must still work
            assert kilobytes != lowest, f"the report held at {kilobytes} KB"
            os.kill(process.pid, signal.SIGINT)
            _, stderr = process.communicate(timeout=5)
            assert process.returncode == 130, stderr
            assert stderr.startswith("interrupted: the report was not finished"), stderr
            continue
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
        assert process.returncode in (0, 2), stderr
        if kilobytes == lowest:
            assert process.returncode == 2, f"did not run out of memory:\n{stderr}"
        assert "Traceback" not in stderr and len(stderr.strip().splitlines()) <= 1, stderr
        assert process.returncode == 0 or "out of memory" in stderr, stderr
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".")) == []


@pytest.mark.slow
def test_a_killed_fit_worker_is_one_line(tmp_path: Path) -> None:
    """The OOM killer ends a process with SIGKILL: select's fit worker, killed so, is one
    line naming it and how to go on, and no micro-benchmark file. (tinyBenchmarks'
    compiled fits run in threads, with no worker, and so does its MAP fit from a
    million models x items: on 150 models x 5,761 items it is slow enough to start one.)"""
    from mdad.data import load_dataset

    names = load_dataset("synthetic:bbh").matrix.model_names[:150]
    (tmp_path / "models.txt").write_text("\n".join(map(str, names)) + "\n")
    process = subprocess.Popen([str(MDAD), "select", "synthetic:bbh", "--models", "models.txt",
                                "--method", "tinybenchmarks-map", "--size", "50",
                                "--out", "mb.json"],
                               cwd=tmp_path, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True)
    worker = None
    deadline = time.monotonic() + 120
    while worker is None and time.monotonic() < deadline and process.poll() is None:
        found = subprocess.run(["pgrep", "-g", str(process.pid), "-f", "spawn_main"],
                               capture_output=True, text=True).stdout.split()
        worker = int(found[0]) if found else None
        time.sleep(0.05)
    assert worker is not None, "the fit worker never started"
    time.sleep(0.5)
    os.kill(worker, signal.SIGKILL)
    stdout, stderr = process.communicate(timeout=120)
    errors = [line for line in stderr.splitlines() if not line.startswith("mdad select: ")]
    proc = subprocess.CompletedProcess(process.args, process.returncode, stdout,
                                       "\n".join(errors) + "\n")
    line = assert_user_error(proc, r"a worker process ended abruptly")
    assert line.endswith("ask for less (lower --models or --size) or free some memory "
                         "(close other programs), then run it again")
    assert not (tmp_path / "mb.json").exists()


def test_a_full_disk_is_one_line_naming_the_file(tmp_path: Path, monkeypatch) -> None:
    """`select`'s write fails as on a full disk: one line naming the file."""
    from typer.testing import CliRunner

    import mdad.safe_io
    from mdad.cli.app import app

    shared_data(GPQA_CSV)

    def full(path, content) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(mdad.safe_io, "atomic_write", full)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["select", "gpqa", "--method", "random", "--size", "10",
                                      "--out", "mb.json"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.output.strip().splitlines()[-1] == (
        "mdad: error: mb.json: No space left on device; free some space, then run it again")


# ------------------------------------------------------------------ planted links, modes


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's")
    return victim


def test_select_writes_through_no_planted_link_and_as_the_umask_allows(
        tmp_path: Path) -> None:
    shared_data(GPQA_CSV)
    victim = _victim(tmp_path)
    (tmp_path / "mb.json").symlink_to(victim)
    (tmp_path / ".mb.json.k9x_2abc.mdad-tmp").symlink_to(victim)  # a killed writer's
    (tmp_path / ".mb.json.tmp").symlink_to(victim)  # a fixed name of the past
    proc = subprocess.run([str(MDAD), "select", "gpqa", "--method", "random", "--size", "10",
                           "--out", "mb.json", "--force", "--format", "lm-eval"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          preexec_fn=lambda: os.umask(0o022))
    assert_ok(proc)
    assert victim.read_text() == "the user's"
    for name in ("mb.json", "mb.samples.json"):
        path = tmp_path / name
        assert not path.is_symlink() and path.is_file()
        assert path.stat().st_mode & 0o777 == 0o644, oct(path.stat().st_mode)
    assert not (tmp_path / ".mb.json.k9x_2abc.mdad-tmp").is_symlink()  # removed
    assert (tmp_path / ".mb.json.tmp").is_symlink()  # not mdad's today: left alone


def test_report_writes_through_no_planted_link(tmp_path: Path) -> None:
    shared_data(GPQA_CSV)
    folder = tmp_path / "run"
    assert_ok(subprocess.run([str(MDAD), "run", "gpqa", "--methods", "random", "--sizes", "10",
                              "--runs", "2", "--resamples", "20", "--out", str(folder)],
                             cwd=tmp_path, capture_output=True, text=True, timeout=300))
    victim = _victim(tmp_path)
    victim_dir = tmp_path / "victim-dir"
    victim_dir.mkdir()
    (victim_dir / "a.png").write_bytes(b"the user's")
    (folder / "report.html").symlink_to(victim)
    (folder / ".report.html.k9x_2abc").symlink_to(victim)  # the old page temporary's name
    (folder / ".figures.k9x_2abc").symlink_to(victim_dir)
    assert_ok(subprocess.run([str(MDAD), "report", str(folder), "--force"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=300,
                             preexec_fn=lambda: os.umask(0o022)))
    assert victim.read_text() == "the user's"
    assert sorted(p.name for p in victim_dir.iterdir()) == ["a.png"]
    page = folder / "report.html"
    assert not page.is_symlink() and page.stat().st_mode & 0o777 == 0o644
    assert (folder / "figures").stat().st_mode & 0o777 == 0o755
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith(".")) == []


def _run_output(run: int):
    from mdad.study.records import RunAccuracies, RunOutput

    return RunOutput(run, np.zeros((1, 1, 1, 2)), RunAccuracies(*np.zeros((3, 2))),
                     np.arange(2), np.zeros(1), Counter(), np.zeros((1, 1, 1, 2)))


def test_the_checkpoint_writes_through_no_planted_link(tmp_path: Path) -> None:
    from mdad.study.checkpoint import StudyCheckpoint
    from mdad.study.records import CellOutput

    victim = _victim(tmp_path)
    folder = tmp_path / ".run.progress"
    folder.mkdir()
    planted = [".request.json.tmp", "study000-run00000.tmp.npz",
               ".request.json.k9x_2abc.mdad-tmp", ".study000-run00000.npz.k9x_2abc.mdad-tmp"]
    for name in [*planted, "request.json.x", "study000-run00000.npz"]:
        (folder / name).symlink_to(victim)
    checkpoint = StudyCheckpoint(folder)
    checkpoint.lock()  # the holder removes what a killed study left
    assert not any((folder / name).is_symlink() for name in planted)
    assert (folder / "request.json.x").is_symlink()  # not a temporary: left alone
    checkpoint.start({"request": {"dataset": "gpqa"}})
    checkpoint.save(0, _run_output(0))
    (folder / "study000-run00001.cells").symlink_to(victim)
    with pytest.raises(OSError):
        checkpoint.save_cell(0, CellOutput(1, (0, 10, 5), np.zeros(2), 0.0, (), (1.0, 1.0)))
    assert victim.read_text() == "the user's"
    for name in ("request.json", "study000-run00000.npz"):
        assert not (folder / name).is_symlink()
        assert (folder / name).stat().st_mode & 0o777 == 0o666 & ~_umask()
    assert checkpoint.finished() == (1, 0)
    assert checkpoint.load(0, 0) is not None
    checkpoint.unlock()
    (folder / "lock").unlink()
    (folder / "lock").symlink_to(victim)  # truncated and written through, once
    with pytest.raises(Exception, match="lock file"):
        StudyCheckpoint(folder).lock()
    assert victim.read_text() == "the user's"


def test_compact_writes_through_no_planted_link(tmp_path: Path) -> None:
    from mdad.data import ResponseMatrix
    from mdad.data.compact import load_compact, write_compact

    victim_dir = tmp_path / "victim"
    victim_dir.mkdir()
    folder = tmp_path / "data" / "bench"
    folder.parent.mkdir()
    folder.symlink_to(victim_dir)  # an empty folder, linked
    stale = folder.parent / ".bench.mdad-staging-k9x_2abc"  # a killed write's (old name)
    stale.mkdir()
    (stale / "correctness.npy").write_bytes(b"half")
    ended = folder.parent / ".bench.mdad-staging-4194305-k9x_2abc"  # an ended process's
    ended.mkdir()
    linked = folder.parent / ".bench.mdad-staging-zzzz1234"
    linked.symlink_to(victim_dir)
    live = folder.parent / f".bench.mdad-staging-{os.getpid()}-k9x_2abc"  # still writing
    live.mkdir()
    matrix = ResponseMatrix(np.array([[1.0, 0.0], [0.0, 1.0]]), ["a", "b"], ["t/0", "t/1"],
                            ["t", "t"])
    write_compact(folder, matrix, {"metric": "acc"})
    assert not folder.is_symlink() and folder.is_dir()
    assert list(victim_dir.iterdir()) == []
    assert folder.stat().st_mode & 0o777 == 0o777 & ~_umask()
    assert load_compact(folder).n_models == 2
    assert sorted(p.name for p in folder.parent.iterdir()) == sorted(["bench", live.name])


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


@pytest.mark.slow
def test_a_run_whose_worker_is_killed_names_its_resume_command(tmp_path: Path) -> None:
    """The OOM killer takes one of `mdad run`'s workers after a run was saved: one line
    that ends with the resume command, and the resumed study equals an unbroken one."""
    from mdad.study.checkpoint import checkpoint_dir

    shared_data(GPQA_CSV)
    # enough runs that the workers are still busy once the first run is saved
    args = ["run", "gpqa", "--methods", "random,tinybenchmarks", "--sizes", "10,25",
            "--runs", "20", "--workers", "2", "--resamples", "20"]
    out = tmp_path / "run"
    process = subprocess.Popen([str(MDAD), *args, "--out", str(out)], cwd=tmp_path,
                               text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True)
    deadline = time.monotonic() + 120
    while (time.monotonic() < deadline and process.poll() is None
           and not list(checkpoint_dir(out).glob("*-run*.npz"))):
        time.sleep(0.02)
    workers = subprocess.run(["pgrep", "-g", str(process.pid), "-f", "spawn_main"],
                             capture_output=True, text=True).stdout.split()
    assert workers and process.poll() is None, "no worker process to kill"
    os.kill(int(workers[-1]), signal.SIGKILL)
    stdout, stderr = process.communicate(timeout=120)
    proc = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    line = assert_user_error(proc, r"a worker process ended abruptly")
    assert line.endswith(f"then continue with: mdad run --resume {out}"), line
    assert_ok(subprocess.run([str(MDAD), "run", "--resume", str(out)], cwd=tmp_path,
                             capture_output=True, text=True, timeout=300))
    whole = tmp_path / "whole"
    assert_ok(subprocess.run([str(MDAD), *args, "--out", str(whole)], cwd=tmp_path,
                             capture_output=True, text=True, timeout=300))
    assert (out / "mdad.csv").read_text() == (whole / "mdad.csv").read_text()
