"""mdad.safe_io: atomic writes that follow no planted link, locks that a second writer
meets at once, Hub ids that cannot become paths, CSV cells safe from formula injection."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mdad.errors import ConfigError, DataError
from mdad.safe_io import (
    TEMP_SUFFIX,
    FileLock,
    atomic_write,
    check_hub_id,
    csv_text,
    csv_text_read,
    remove_stale_temporaries,
    safe_component,
)


def test_atomic_write_replaces_a_planted_link_and_never_writes_through_it(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    target = tmp_path / "state.json"
    target.symlink_to(victim)
    for stale in (".state.json.tmp", ".state.json.tmp.npz", f".state.json.x{TEMP_SUFFIX}"):
        (tmp_path / stale).symlink_to(victim)
    atomic_write(target, b"new")
    assert victim.read_text() == "keep me"
    assert not target.is_symlink() and target.read_bytes() == b"new"


def test_atomic_write_mode_follows_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        atomic_write(tmp_path / "a", b"x")
    finally:
        os.umask(old)
    assert (tmp_path / "a").stat().st_mode & 0o777 == 0o644


def test_a_failed_write_leaves_no_temporary_and_names_the_target(tmp_path):
    def boom(handle):
        handle.write(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError) as info:
        atomic_write(tmp_path / "out.npz", boom)
    assert info.value.filename == str(tmp_path / "out.npz")
    assert list(tmp_path.iterdir()) == []

    with pytest.raises(KeyboardInterrupt):
        atomic_write(tmp_path / "out.npz", lambda h: (_ for _ in ()).throw(KeyboardInterrupt))
    assert list(tmp_path.iterdir()) == []


def _ended_pid() -> int:
    return int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True).stdout)


def test_stale_temporaries_go_and_nothing_else(tmp_path):
    dead = _ended_pid()
    (tmp_path / f".a.json.{dead}.xyz_1234{TEMP_SUFFIX}").write_text("left by a killed run")
    (tmp_path / f".a.json.{os.getpid()}.xyz_1234{TEMP_SUFFIX}").write_text("being written")
    (tmp_path / f".a.json.xyz_1234{TEMP_SUFFIX}").write_text("of mdad before pids")
    (tmp_path / f".a.json.csv.{dead}.xyz_1234{TEMP_SUFFIX}").write_text("another file's")
    (tmp_path / f".b.npz.{dead}.qqqq_123{TEMP_SUFFIX}").symlink_to(tmp_path / "elsewhere")
    (tmp_path / f".a.json.{dead}.too_long_name{TEMP_SUFFIX}").write_text("not mdad's")
    (tmp_path / "a.json").write_text("{}")
    assert len(remove_stale_temporaries(tmp_path, "a.json")) == 2
    assert len(remove_stale_temporaries(tmp_path, "a.[js]on")) == 0  # a name, no pattern
    assert len(remove_stale_temporaries(tmp_path)) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([
        f".a.json.{os.getpid()}.xyz_1234{TEMP_SUFFIX}",
        f".a.json.{dead}.too_long_name{TEMP_SUFFIX}", "a.json"])


def test_reading_the_umask_never_changes_it_under_threads(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    from mdad.safe_io import file_mode

    old = os.umask(0o022)
    try:
        with ThreadPoolExecutor(8) as pool:
            modes = set(pool.map(lambda _: file_mode(), range(2000)))
        assert modes == {0o644} and os.umask(0o022) == 0o022
    finally:
        os.umask(old)


def test_a_second_writer_stops_at_once_naming_the_first_ones_pid(tmp_path):
    lock = tmp_path / ".x.lock"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from mdad.safe_io import FileLock
        FileLock({str(lock)!r}, "the test").acquire()
        print("held", flush=True)
        time.sleep(30)
        """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ConfigError, match=rf"in use by process {holder.pid} "):
            FileLock(lock, "the test").acquire()
    finally:
        holder.kill()
        holder.wait()
    with FileLock(lock, "the test"):  # the kernel freed it with the process
        pass


def test_a_planted_link_or_pipe_is_no_lock_file(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (tmp_path / "link.lock").symlink_to(victim)
    with pytest.raises(ConfigError, match=r"link\.lock"):
        FileLock(tmp_path / "link.lock", "x").acquire()
    os.mkfifo(tmp_path / "pipe.lock")
    with pytest.raises(ConfigError, match="not a regular file"):
        FileLock(tmp_path / "pipe.lock", "x").acquire()
    assert victim.read_text() == "keep"
    os.link(victim, tmp_path / "hard.lock")
    with pytest.raises(ConfigError, match="hard link"):
        FileLock(tmp_path / "hard.lock", "x").acquire()
    assert victim.read_text() == "keep"


@pytest.mark.parametrize("repo", ["open-llm-leaderboard/org__model-details",
                                  "open-llm-leaderboard/Qwen__Qwen2.5-7B-Instruct-details"])
def test_hub_ids_of_the_leaderboard_pass(repo):
    assert check_hub_id(repo, where="x") == repo


@pytest.mark.parametrize("repo", ["open-llm-leaderboard//abs/dir/victim-details",
                                  "open-llm-leaderboard/../../../victim-details",
                                  "open-llm-leaderboard/..", "a/b/c", "a/", "/b",
                                  "a/b\0c", "a/.hidden", "a/x--y", "a/" + "x" * 97])
def test_ids_that_could_become_paths_are_refused(repo):
    with pytest.raises(DataError, match="not a Hugging Face Hub repo id"):
        check_hub_id(repo, where="the listing")


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a\\b", "a\0b", "x" * 201])
def test_unsafe_file_names_are_refused(name):
    with pytest.raises(DataError, match="cannot be a file name"):
        safe_component(name, where="x")


@pytest.mark.parametrize(("cell", "safe"), [("=HYPERLINK(\"x\")", "'=HYPERLINK(\"x\")"),
                                           ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
                                           ("-2+3", "'-2+3"), ("@SUM(A1)", "'@SUM(A1)"),
                                           ("\tx", "'\tx"), ("'quoted", "''quoted"),
                                           ("plain", "plain"), (3.5, 3.5), (-1, -1)])
def test_formula_cells_are_neutralised(cell, safe):
    assert csv_text(cell) == safe


@given(st.text())
def test_neutralised_text_reads_back_exactly(text):
    assert csv_text_read(csv_text(text)) == text
    assert not str(csv_text(text)).startswith(("=", "+", "-", "@", "\t", "\r"))


def test_a_written_file_is_whole_after_kill_mid_write(tmp_path: Path):
    target = tmp_path / "big.bin"
    target.write_bytes(b"old")
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from mdad.safe_io import atomic_write
        def slow(handle):
            handle.write(b"x" * 1000)
            print("writing", flush=True)
            time.sleep(30)
        atomic_write({str(target)!r}, slow)
        """)], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "writing"
    child.kill()
    child.wait()
    assert target.read_bytes() == b"old"
    assert len(remove_stale_temporaries(tmp_path, "big.bin")) == 1  # its pid has ended


def test_stale_staging_of_ended_processes_goes_and_nothing_else(tmp_path: Path):
    from mdad.safe_io import make_staging, remove_stale_staging

    target = tmp_path / "out"
    mine = make_staging(target)  # this process is alive: kept
    assert mine.name.startswith(f".out.mdad-staging-{os.getpid()}-")
    ended = _ended_pid()
    dead = tmp_path / f".out.mdad-staging-{ended}-abcd_123"
    old = tmp_path / ".out.mdad-staging-abcd_123"  # before mdad named the process
    other = tmp_path / ".other.mdad-staging-abcd_123"
    for folder in (dead, old, other):
        (folder / "sub").mkdir(parents=True)
    victim = tmp_path / "victim"
    (victim / "keep").mkdir(parents=True)
    link = tmp_path / ".out.mdad-staging-zzzz1234"
    link.symlink_to(victim)
    assert sorted(p.name for p in remove_stale_staging(target)) == sorted(
        p.name for p in (dead, old, link))
    assert mine.is_dir() and other.is_dir() and (victim / "keep").is_dir()


@pytest.mark.parametrize(("exc", "out"), [
    (MemoryError(), True), (OSError(28, "No space left on device"), True),
    (OSError(24, "Too many open files"), True),
    (ValueError("Unknown error: Failed to launch worker thread: Resource temporarily "
                "unavailable"), True),
    (RuntimeError("can't start new thread"), True),
    (ValueError("Parquet magic bytes not found in footer"), False),
    (OSError(2, "No such file or directory"), False)])
def test_running_out_tells_resources_from_damaged_input(exc, out):
    from mdad.errors import running_out

    assert running_out(exc) is out
