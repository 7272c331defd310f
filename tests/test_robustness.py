"""Hostile input and faults: one clear line and exit 2, never a traceback; no orphan
process; one run owns a folder; nothing the user asked for is ignored silently."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import FAST, GPQA_CSV, MDAD, assert_ok, assert_user_error, flat, mdad_cli, shared_data

from mdad.errors import DataError
from mdad.practice.bundle import MicroBenchmarkFile
from mdad.study.checkpoint import LOCK, checkpoint_dir

SLOW_RUN = ("run", "gpqa", "--methods", "random,tinybenchmarks-map", "--runs", "80",
            "--resamples", "20")


def small_csv(path: Path, names: list[str], *, missing: bool = False) -> Path:
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(rng.integers(0, 2, size=(40, len(names))), columns=names)
    frame = frame.astype(object)
    if missing:
        frame.iloc[3, 0] = ""
    frame.insert(0, "item_id", [f"q{i}" for i in range(40)])
    frame.to_csv(path, index=False)
    return path


def start(args: tuple[str, ...], out: Path, cwd: Path) -> subprocess.Popen[str]:
    """`mdad` in a session of its own, so that its whole process group can be checked."""
    return subprocess.Popen([str(MDAD), *args, "--out", str(out)], cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=_default_signals)


def _default_signals() -> None:
    """Ctrl-C as in a terminal, whatever this test process ignores."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_for_work(out: Path, timeout: float = 120.0) -> None:
    progress = checkpoint_dir(out)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not list(progress.glob("*-run*.*")):
        time.sleep(0.05)
    assert list(progress.glob("*-run*.*")), "no cell finished in time"


def group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


# ------------------------------------------------------------------ processes, signals


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["local", "dask"])
def test_sigkill_leaves_no_process_behind(backend: str, tmp_path: Path) -> None:
    shared_data(GPQA_CSV)
    out = tmp_path / "run"
    process = start((*SLOW_RUN, "--workers", "2", "--backend", backend), out, tmp_path)
    wait_for_work(out)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    deadline = time.monotonic() + 5
    while group_alive(process.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = group_alive(process.pid)
    if alive:
        os.killpg(process.pid, signal.SIGKILL)
    assert not alive, "worker processes outlived the killed run by 5 s"


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_prints_one_resume_line(sig: int, code: int, tmp_path: Path) -> None:
    shared_data(GPQA_CSV)
    out = tmp_path / "run"
    process = start((*SLOW_RUN, "--workers", "2"), out, tmp_path)
    wait_for_work(out)
    os.kill(process.pid, sig)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == code, f"{stdout[-500:]}\n{stderr}"
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    # one line, the run's own, after its cleanup: the watchdog prints no second one
    assert len(lines) == 1 and lines[0].startswith("interrupted: "), stderr
    assert " saved in " in lines[0], stderr  # the run's own count of what it saved
    assert f"continue with: mdad run --resume {out.name}" in flat(stderr).replace(
        str(out), out.name)
    assert not group_alive(process.pid) or time.sleep(3) or not group_alive(process.pid)
    assert_ok(mdad_cli("run", "--resume", out, cwd=tmp_path))


# --------------------------------------------------------------------- output folders


@pytest.mark.parametrize(("out", "pattern"), [
    ("/proc/mdad-out", r"--out /proc/mdad-out: cannot write there"),
    ("a" * 250, r"cannot write there \(File name too long\)"),
])
def test_unwritable_out_is_refused_before_any_work(out: str, pattern: str,
                                                   tmp_path: Path) -> None:
    started = time.monotonic()
    assert_user_error(mdad_cli("run", "gpqa", *FAST, "--out", out, cwd=tmp_path), pattern)
    assert time.monotonic() - started < 30


def test_out_may_be_a_symlink_to_an_empty_folder(tmp_path: Path) -> None:
    shared_data(GPQA_CSV)
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert_ok(mdad_cli("run", "gpqa", *FAST, "--methods", "random", "--sizes", "10",
                       "--out", "link", cwd=tmp_path))
    assert (tmp_path / "real" / "mdad.csv").is_file()


# ------------------------------------------------------------------------ option values


@pytest.mark.parametrize(("args", "pattern"), [
    (("gpqa", "--sources", "5,10,5"), r"--sources lists a count twice: 5,10,5"),
    (("synthetic:gpqa", "--data-seed", "-1"), r"--data-seed must be an integer >= 0; got -1"),
    (("gpqa", "--backend", "dask", "--scheduler", "not a url"),
     r"--scheduler not a url: cannot connect .*tcp://host:8786"),
    (("gpqa", "--scheduler", "tcp://127.0.0.1:1"),
     r"--scheduler applies only with --backend dask"),
])
def test_bad_option_values_are_one_line(args: tuple[str, ...], pattern: str,
                                        tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert_user_error(mdad_cli("run", *args, *FAST, "--out", out, cwd=tmp_path), pattern)
    assert not out.exists()


def test_a_metric_the_data_does_not_hold_is_refused(tmp_path: Path) -> None:
    shared_data(GPQA_CSV)
    proc = mdad_cli("run", "gpqa", *FAST, "--methods", "random", "--sizes", "10",
                    "--metric", "acc", "--out", tmp_path / "out", cwd=tmp_path)
    assert_user_error(proc, r"--metric acc: the gpqa data holds acc_norm scores only")
    assert_ok(mdad_cli("run", "gpqa", *FAST, "--methods", "random", "--sizes", "10",
                       "--metric", "acc_norm", "--out", tmp_path / "same", cwd=tmp_path))
    csv = small_csv(tmp_path / "plain.csv", [f"m{k}" for k in range(12)])
    assert_user_error(mdad_cli("data", "info", csv, "--metric", "acc", cwd=tmp_path),
                      r"--metric is not an option of the wide-csv loader")


# ----------------------------------------------------------------- text from the data


def test_model_names_are_printed_literally(tmp_path: Path) -> None:
    names = ["[/bold]", "[red]x[/red]", "evil\x1b[31m", *(f"m{k}" for k in range(9))]
    data = small_csv(tmp_path / "names.csv", names, missing=True)
    proc = mdad_cli("run", data, "--methods", "random", "--runs", "2", "--targets", "4",
                    "--sources", "5", "--sizes", "5", "--missing", "drop-models",
                    "--out", tmp_path / "out", cwd=tmp_path)
    assert_ok(proc)
    assert "[/bold]" in flat(proc.stderr)  # the dropped model, named as it is
    assert "\x1b" not in proc.stdout + proc.stderr


def test_an_error_never_sends_control_characters(tmp_path: Path) -> None:
    proc = mdad_cli("run", "no\x1b[31msuch", *FAST, cwd=tmp_path)
    line = assert_user_error(proc, r"no\\x1b\[31msuch")
    assert "\x1b" not in line


# ------------------------------------------------------------------ checkpoints, resume


def interrupted_run(tmp_path: Path, name: str = "run") -> Path:
    """A run killed after its first finished run file."""
    shared_data(GPQA_CSV)
    out = tmp_path / name
    args = ("run", "gpqa", "--methods", "random,tinybenchmarks-map", "--runs", "6",
            "--workers", "1", "--resamples", "20")
    process = start(args, out, tmp_path)
    progress = checkpoint_dir(out)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list(progress.glob("*-run*.npz")):
        time.sleep(0.02)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert list(progress.glob("*-run*.npz")) and not out.exists()
    return out


@pytest.mark.slow
def test_truncated_run_checkpoint_is_recomputed(tmp_path: Path) -> None:
    out = interrupted_run(tmp_path)
    for path in checkpoint_dir(out).glob("*-run*.npz"):
        path.write_bytes(path.read_bytes()[:100])
    assert_ok(mdad_cli("run", "--resume", out, cwd=tmp_path))
    assert (out / "mdad.csv").is_file()


@pytest.mark.slow
def test_resume_from_elsewhere_refuses_extras_and_cleans_staging(tmp_path: Path) -> None:
    out = interrupted_run(tmp_path)
    assert_user_error(mdad_cli("run", "gpqa", "--resume", out, cwd=tmp_path),
                      r"continues the saved request as it was; drop DATASET")
    assert_user_error(mdad_cli("run", "--resume", out, "--runs", "3", "--workers", "1",
                               cwd=tmp_path), r"drop --runs, or start")  # --workers is free
    # a second process on the folder stops at once, naming the first
    lock = os.open(checkpoint_dir(out) / LOCK, os.O_RDWR)
    fcntl.flock(lock, fcntl.LOCK_EX)
    os.pwrite(lock, b"424242\n", 0)
    try:
        assert_user_error(mdad_cli("run", "--resume", out, cwd=tmp_path),
                          r"is in use by process 424242")
    finally:
        os.close(lock)
    stale = tmp_path / f".{out.name}.mdad-staging-abcd1234"  # a kill in the final write
    stale.mkdir()
    (stale / "mdad.csv").write_text("partial")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert_ok(mdad_cli("run", "--resume", out.resolve(), cwd=elsewhere))
    assert not stale.exists() and (out / "mdad.csv").is_file()


# ------------------------------------------------------------------ files commands write


def test_select_never_overwrites_without_force(tmp_path: Path) -> None:
    shared_data(GPQA_CSV)
    args = ("select", "gpqa", "--method", "random", "--size", "10", "--format", "lm-eval")
    assert_ok(mdad_cli(*args, "--out", "mb.json", cwd=tmp_path))
    before = (tmp_path / "mb.json").read_bytes()
    assert_user_error(mdad_cli(*args, "--seed", "3", "--out", "mb.json", cwd=tmp_path),
                      r"--out mb.json already exists; .*--force")
    assert (tmp_path / "mb.json").read_bytes() == before
    assert_ok(mdad_cli(*args, "--seed", "3", "--out", "mb.json", "--force", cwd=tmp_path))
    assert (tmp_path / "mb.json").read_bytes() != before
    assert not list(tmp_path.glob(".mb.json.*"))  # no temporary file left


@pytest.mark.parametrize(("out", "pattern"), [
    (".", r"--out \. is a folder; give a file name"),
    ("/proc/mdad.json", r"--out /proc/mdad.json: cannot write there"),
    ("no/such/mb.json", r"the folder no/such does not exist"),
    ("afile/mb.json", r"--out afile/mb.json: afile is a file, not a folder"),
])
def test_select_unwritable_out_is_one_line(out: str, pattern: str, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("a file where a folder would be\n")
    assert_user_error(mdad_cli("select", "gpqa", "--method", "random", "--size", "10",
                               "--out", out, cwd=tmp_path), pattern)


# ----------------------------------------------------------------- messages that help


@pytest.mark.parametrize(("text", "pattern"), [
    ("item_id;m1;m2\nq1;1;0\nq2;0;1\n", r"separated by semicolons; save it comma-separated"),
    ("item_id,m1,m2\nq1,True,False\nq2,False,True\n", r"written as true/false; write them "
                                                       r"as 1 and 0"),
])
def test_csv_messages_say_what_is_wrong(text: str, pattern: str, tmp_path: Path) -> None:
    (tmp_path / "data.csv").write_text(text)
    assert_user_error(mdad_cli("data", "info", "data.csv", cwd=tmp_path), pattern)


def test_empty_pool_says_item_ids(tmp_path: Path) -> None:
    shared_data(GPQA_CSV)
    (tmp_path / "pool.txt").write_text("# nothing\n\n")
    assert_user_error(mdad_cli("select", "gpqa", "--method", "random", "--size", "5",
                               "--pool", "pool.txt", "--out", "mb.json", cwd=tmp_path),
                      r"--pool pool.txt: the file lists no item ids")


def test_another_benchmark_is_refused_whatever_the_flag(tmp_path: Path) -> None:
    shared_data(GPQA_CSV)
    assert_ok(mdad_cli("select", "gpqa", "--method", "random", "--size", "10", "--out",
                       "mb.json", cwd=tmp_path))
    (tmp_path / "answers.csv").write_text("item_id,correct\n0,1\n")
    assert_user_error(mdad_cli("estimate", "mb.json", "answers.csv", "--dataset",
                               "mmlu-pro-29", "--allow-other-data-version", cwd=tmp_path),
                      r"--dataset mmlu-pro-29 is another benchmark than the "
                      r"micro-benchmark's \(gpqa\)")


def test_estimate_prints_model_names_literally(tmp_path: Path) -> None:
    shared_data(GPQA_CSV)
    assert_ok(mdad_cli("select", "gpqa", "--method", "random", "--size", "10", "--out",
                       "mb.json", cwd=tmp_path))
    items = MicroBenchmarkFile.load(tmp_path / "mb.json").items
    rows = "".join(f"{item},1\n" for item in items)
    (tmp_path / "[bold]x.csv").write_text("item_id,correct\n" + rows)
    proc = mdad_cli("estimate", "mb.json", "[bold]x.csv", cwd=tmp_path)
    assert_ok(proc)
    assert "[bold]x: estimated accuracy" in flat(proc.stdout)


def test_report_force_replaces_a_file_named_figures_and_refuses_a_folder_for_the_page(
        small_study: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    shutil.copytree(small_study, out)
    (out / "report.html").write_text("an earlier report")
    (out / "figures").mkdir()
    assert_user_error(mdad_cli("report", out, cwd=tmp_path),
                      r"already has report.html and figures; pass --force")
    (out / "figures").rmdir()
    (out / "figures").write_text("in the way")
    assert_ok(mdad_cli("report", out, "--force", cwd=tmp_path))
    assert (out / "figures").is_dir() and any((out / "figures").glob("*.png"))
    (out / "report.html").unlink()
    (out / "report.html").mkdir()
    before = sorted(p.name for p in out.iterdir())
    assert_user_error(mdad_cli("report", out, "--force", cwd=tmp_path),
                      r"^mdad: error: \S+report\.html: a folder, not a file, where the "
                      r"report's page goes; remove it$")
    assert sorted(p.name for p in out.iterdir()) == before  # no temporary file left


def test_report_force_never_deletes_a_users_file_in_figures(small_study: Path,
                                                             tmp_path: Path) -> None:
    out = tmp_path / "run"
    shutil.copytree(small_study, out)
    assert_ok(mdad_cli("report", out, cwd=tmp_path))
    figures = sorted(p.name for p in (out / "figures").iterdir())
    for name, make in (("notes.txt", lambda p: p.write_text("mine")),
                       ("drafts", lambda p: p.mkdir())):
        make(out / "figures" / name)
        assert_user_error(mdad_cli("report", out, "--force", cwd=tmp_path),
                          rf"^mdad: error: \S+figures holds {name}, which is not a figure; "
                          r"the report replaces that folder whole, so move it out first$")
        assert (out / "figures" / name).exists()
        (out / "figures" / name).rename(tmp_path / name)
    assert_ok(mdad_cli("report", out, "--force", cwd=tmp_path))
    assert sorted(p.name for p in (out / "figures").iterdir()) == figures


def test_a_report_that_fails_leaves_the_previous_one_and_no_temporary_file(
        small_study: Path, tmp_path: Path, monkeypatch) -> None:
    import mdad.report.html as html

    out = tmp_path / "run"
    shutil.copytree(small_study, out)
    monkeypatch.setattr(html, "all_figures", lambda study: [])  # what is drawn is no matter
    html.write_report(out)
    (out / "figures" / "kept.png").write_bytes(b"an earlier figure")
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    figures = (out / "figures").stat().st_ino

    def failing(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(html, "render_page", failing)
    with pytest.raises(OSError, match="No space left"):
        html.write_report(out)
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before  # the page, figures and study as they were; nothing hidden added
    assert (out / "figures").stat().st_ino == figures  # not replaced by a page-less report


def test_a_full_disk_is_one_line_and_resumable(tmp_path: Path, monkeypatch) -> None:
    """The real `run` command in this process, with saving a run failing as on a full
    disk after the first: one line naming the file and how to go on, and the saved run
    is kept for --resume."""
    import errno

    from typer.testing import CliRunner

    from mdad.cli.app import app
    from mdad.study.checkpoint import StudyCheckpoint

    shared_data(GPQA_CSV)
    original = StudyCheckpoint.save
    saved: list[int] = []

    def save(self, study, out) -> None:
        if saved:
            raise OSError(errno.ENOSPC, "No space left on device", str(self.folder / "x.npz"))
        original(self, study, out)
        saved.append(out.run)

    monkeypatch.setattr(StudyCheckpoint, "save", save)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["run", "gpqa", "--methods", "random", "--sizes", "10",
                                      "--runs", "3", "--workers", "1", "--out", "run"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    line = flat(result.output)
    assert "No space left on device; 1 finished run and" in line
    assert "continue with --resume run" in line
    monkeypatch.setattr(StudyCheckpoint, "save", original)
    assert_ok(mdad_cli("run", "--resume", "run", cwd=tmp_path))


@pytest.mark.parametrize(("args", "pattern"), [
    (("--runs", "100001"), r"--runs must be an integer in 1\.\.100,000 \(the memory"),
    (("--runs", "99999999999999999999"), r"--runs must be an integer in 1\.\.100,000"),
    (("--resamples", "1000001"), r"--resamples must be an integer in 1\.\.1,000,000"),
])
def test_a_study_too_large_to_hold_is_refused_before_any_work(
        args: tuple[str, ...], pattern: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert_user_error(mdad_cli("run", "gpqa", "--methods", "random", *args, "--out", out,
                               cwd=tmp_path), pattern)
    assert not out.exists()


@pytest.mark.parametrize("command", [
    ("select", "gpqa", "--method", "random", "--size", "5", "--out", "x.json"),
    ("adaptive", "start", "gpqa", "--budget", "3", "--out", "s.json"),
])
def test_a_negative_seed_is_one_line(command: tuple[str, ...], tmp_path: Path) -> None:
    assert_user_error(mdad_cli(*command, "--seed", "-1", cwd=tmp_path),
                      r"--seed must be an integer >= 0; got -1")


@pytest.mark.parametrize(("config", "mdad_csv", "pattern"), [
    ("[]", "method,size,sources,split,mdad\nrandom,10,5,seen,4.5\n",
     r"config\.json: not a study configuration"),
    ("study",
     "method,size,sources,split,mdad\n", r"mdad\.csv: no rows; rerun the study"),
    ("study",
     "method,size,sources,split,mdad\nrandom,10,5,seen,4.5\n", r"mdad\.csv: no column"),
    ("study",
     "method,size,sources,split,mdad,reached\nrandom,10,5,seen,,True\n",
     r"mdad\.csv: row 2 is marked reached but its mdad is not a number in \[0, 1\]"),
    ("study",
     "method,size,sources,split,mdad,reached\nrandom,10,5,seen,4.5,True\n",
     r"mdad\.csv: row 2 is marked reached but its mdad is not a number in \[0, 1\]"),
    ("study",
     "method,size,sources,split,mdad,reached,pairs\nrandom,10,5,seen,0.04,True,10\n"
     "random,10,5,seen,0.04,True,-3\n", r"mdad\.csv: row 3, column pairs: -3 is not a count"),
    ("study",
     "method,size,sources,split,mdad,reached,pairs\nrandom,10,5,seen,0.04,True,2.5\n",
     r"mdad\.csv: row 2, column pairs: 2\.5 is not a count"),
    ("study",
     "method,size,sources,split,mdad,reached,pairs\nrandom,0,5,seen,0.04,True,2\n",
     r"mdad\.csv: row 2, column size: 0 is not a count"),
])
def test_report_refuses_a_folder_that_holds_no_study(config: str, mdad_csv: str,
                                                     pattern: str, tmp_path: Path,
                                                     small_study: Path) -> None:
    """"study": a real study's config.json, of the method random."""
    folder = tmp_path / "run"
    folder.mkdir()
    if config == "study":
        study = json.loads((small_study / "config.json").read_text())
        study["study"]["methods"] = ["random"]
        config = json.dumps(study)
    (folder / "config.json").write_text(config)
    columns = mdad_csv.splitlines()[0]
    if "no column" in pattern:  # drop the split column
        mdad_csv = mdad_csv.replace(",split", "").replace(",seen", "")
    (folder / "mdad.csv").write_text(mdad_csv)
    (folder / "summary.csv").write_text(columns.replace(",split", "") + "\n")
    pd.DataFrame({"method": ["random"]}).to_parquet(folder / "results.parquet")
    from mdad.report.html import write_report

    with pytest.raises(DataError, match=pattern):  # the command's line: checked above
        write_report(folder)


@pytest.mark.parametrize(("command", "pattern"), [
    (("plan", "gpqa", "--size", "100"), r"--target-models needs at least 2 models"),
    (("run", "gpqa", "--methods", "random", "--targets", "10", "--out", "out"),
     r"--targets and --target-models both say which models are targets; give one"),
])
def test_target_models_that_cannot_be_used_as_asked(command: tuple[str, ...], pattern: str,
                                                    gpqa_data, tmp_path: Path) -> None:
    models = gpqa_data.matrix.model_names
    names = tmp_path / "models.txt"
    names.write_text(f"{models[0]}\n" if command[0] == "plan" else f"{models[0]}\n{models[1]}\n")
    assert_user_error(mdad_cli(*command, "--target-models", names, cwd=tmp_path), pattern)
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def small_study(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("study") / "run"
    assert_ok(mdad_cli("run", "gpqa", "--methods", "random,subtask-equal", "--sizes", "10,25",
                       "--runs", "2", "--resamples", "20", "--out", folder,
                       cwd=folder.parent))
    return folder


def _cut(path: Path, keep: int) -> None:
    path.write_bytes(path.read_bytes()[:keep])


def _repeat_line(path: Path, line: int, old: str | None = None, new: str = "") -> None:
    """Insert a copy of line `line` (0: the header) after it, with `old` made `new`."""
    lines = path.read_text().splitlines(keepends=True)
    lines.insert(line + 1, lines[line] if old is None else lines[line].replace(old, new, 1))
    path.write_text("".join(lines))


def _edit_config(folder: Path, edit) -> None:
    config = json.loads((folder / "config.json").read_text())
    edit(config)
    (folder / "config.json").write_text(json.dumps(config))


def _replace(path: Path, old: str, new: str) -> None:
    """`old` made `new`, once; the test's damage must have happened."""
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


def _set_threshold(folder: Path, value: object) -> None:
    config = json.loads((folder / "config.json").read_text())
    config["study"]["threshold"] = value
    (folder / "config.json").write_text(json.dumps(config))


@pytest.mark.parametrize(("damage", "pattern"), [
    (lambda f: (f / "mdad.csv").write_text((f / "mdad.csv").read_text().replace(
        "\nrandom,", "\nbogus,", 1)),
     r"mdad\.csv: row 2, column method: 'bogus' is not one of the study's methods"),
    (lambda f: _cut(f / "summary.csv", (f / "summary.csv").read_text().index("\n") + 1),
     r"summary\.csv: no row for random at 10 items and 300 sources, which mdad\.csv has"),
    (lambda f: _cut(f / "agreement.csv", 50),
     r"agreement\.csv: row 2 is not a bin of an agreement curve"),
    (lambda f: (f / "agreement.csv").write_text("".join(
        line for line in (f / "agreement.csv").read_text().splitlines(keepends=True)
        if ",25,300,unseen," not in line or line.startswith("random,"))),
     r"agreement\.csv: no curve for subtask-equal at 25 items \(unseen split, 300 sources\)"),
    (lambda f: _cut(f / "config.json", 100),
     r"config\.json: cannot read it \(.*\); rerun the study"),
    (lambda f: _cut(f / "results.parquet", 200), r"results\.parquet: cannot read it"),
    # a row twice, with other numbers: which one is the study's would be a guess
    (lambda f: _repeat_line(f / "mdad.csv", 1, "0.", "0.9"),
     r"mdad\.csv: rows 2 and 3 both have method random, size 10, sources 300, split seen"),
    (lambda f: _repeat_line(f / "summary.csv", 1),
     r"summary\.csv: 2 rows for random at 10 items and 300 sources"),
    (lambda f: _repeat_line(f / "summary.csv", 1, "random,10,", "random,50,"),
     r"summary\.csv: a row for random at 50 items and 300 sources, which mdad\.csv does not "
     r"have"),
    (lambda f: _set_threshold(f, "abc"),
     r"config\.json: the study's threshold 'abc' is not a probability between 0 and 1"),
    (lambda f: _set_threshold(f, 1.5), r"config\.json: the study's threshold 1\.5 is not"),
    (lambda f: _set_threshold(f, True), r"config\.json: the study's threshold True is not"),
    (lambda f: _edit_config(f, lambda c: c["dataset"].pop("sha256")),
     r"config\.json: field dataset\.sha256 is missing, not text"),
    (lambda f: _edit_config(f, lambda c: c["study"].update(methods=5)),
     r"config\.json: field study\.methods is 5, not a list"),
    (lambda f: _edit_config(f, lambda c: c["study"].update(target_models=5)),
     r"config\.json: field study\.target_models is 5, not a list or null"),
    (lambda f: _edit_config(f, lambda c: c.update(dataset="gpqa")),
     r"config\.json: field dataset\.name is missing, not text"),
    (lambda f: _repeat_line(f / "agreement.csv", 1),  # its pairs would count twice
     r"agreement\.csv: rows 2 and 3 both have method random, size 10, sources 300, split "
     r"seen, gap 0\.0"),
    (lambda f: ((f / "agreement.csv").unlink(), (f / "agreement.csv").mkdir()),
     r"agreement\.csv: a folder, not a file; rerun the study"),
    (lambda f: (f / "mdad.csv").write_text("".join(
        line for line in (f / "mdad.csv").read_text().splitlines(keepends=True)
        if ",unseen," not in line)),
     r"mdad\.csv: method random, size 10, sources 300 has a row for one split only"),
    (lambda f: pd.read_parquet(f / "results.parquet").drop(columns="estimate").to_parquet(
        f / "results.parquet"), r"results\.parquet: no column estimate"),
    (lambda f: pd.read_parquet(f / "results.parquet").astype({"estimate": str}).to_parquet(
        f / "results.parquet"), r"results\.parquet: column estimate holds \S+, not numbers"),
    (lambda f: _replace(f / "mdad.csv", ",True,", ",no,"),
     r"mdad\.csv: row 2, column reached: 'no' is not True or False"),
    (lambda f: _replace(f / "mdad.csv", ",seen,", ",Seen,"),
     r"mdad\.csv: row 2, column split: 'Seen' is not a split \(seen, unseen\)"),
    (lambda f: _replace(f / "mdad.csv", ",0.8,", ",0.5,"),
     r"mdad\.csv: row 2, column threshold: 0\.5 is not the study's threshold 0\.8"),
    (lambda f: _replace(f / "mdad.csv", ",0.8,", ",abc,"),
     r"mdad\.csv: row 2, column threshold: 'abc' is not a number"),
    (lambda f: _replace(f / "summary.csv", "\nrandom,10,300,0.", "\nrandom,10,300,x"),
     r"summary\.csv: row 2, column mae_seen: 'x\d+' is not a number"),
    (lambda f: _set_threshold(f, 0), r"config\.json: the study's threshold 0 is not"),
    (lambda f: _set_threshold(f, 1.0), r"config\.json: the study's threshold 1\.0 is not"),
    (lambda f: _set_threshold(f, float("nan")),
     r"config\.json: the study's threshold nan is not"),
    (lambda f: ((f / "summary.csv").unlink(), (f / "summary.csv").mkdir()),
     r"summary\.csv: a folder, not a file; rerun the study"),
])
def test_report_names_the_damaged_file_and_writes_nothing(small_study: Path, damage, pattern,
                                                          tmp_path: Path) -> None:
    """In this process (the command's one-line error is checked below, once): the
    report reads the folder as `plan --run` and `select --run` do."""
    from mdad.report.html import write_report

    folder = tmp_path / "run"
    shutil.copytree(small_study, folder)
    damage(folder)
    before = sorted(p.name for p in folder.iterdir())
    with pytest.raises(DataError, match=pattern + ".*another folder$"):
        write_report(folder)
    assert sorted(p.name for p in folder.iterdir()) == before  # nothing written


def test_the_command_names_a_damaged_study_file_in_one_line(small_study: Path,
                                                            tmp_path: Path) -> None:
    folder = tmp_path / "run"
    shutil.copytree(small_study, folder)
    _repeat_line(folder / "mdad.csv", 1)
    for command in (("report", folder), ("plan", "gpqa", "--size", "10", "--run", folder)):
        assert_user_error(mdad_cli(*command, cwd=tmp_path),
                          r"mdad\.csv: rows 2 and 3 both have .*another folder$")


def test_links_to_nothing_and_pipes_are_named_not_read(tmp_path: Path) -> None:
    """A pipe would block the read; a dangling or looping link is not 'no such file'."""
    import os

    mb = tmp_path / "mb.json"
    assert_ok(mdad_cli("select", "gpqa", "--method", "random", "--size", "5", "--out", mb,
                       cwd=tmp_path))
    os.mkfifo(tmp_path / "pipe.csv")
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    (tmp_path / "gone.csv").symlink_to(tmp_path / "nothing.csv")
    pipe = r"pipe\.csv: not a regular file or folder \(a device, pipe or socket\)"
    link = r"a symbolic link to nothing \(its target is missing, or links loop\)"
    for command, pattern in [
        (("estimate", mb, "pipe.csv"), pipe),
        (("data", "info", "pipe.csv"), pipe),
        (("estimate", mb, "loop1"), r"loop1: " + link),
        (("data", "info", "loop1"), r"loop1: " + link),
        (("run", "gone.csv", "--out", "o"), r"gone\.csv: " + link),
        # each of these once waited forever for a writer to the pipe
        (("estimate", "pipe.csv", mb), pipe),
        (("select", "gpqa", "--method", "random", "--size", "5", "--pool", "pipe.csv",
          "--out", "p.json"), r"--pool " + pipe),
        (("plan", "gpqa", "--gap", "0.05", "--target-models", "pipe.csv"),
         r"--target-models " + pipe),
        (("data", "answers", "gpqa", "--model", "bigscience__bloom-3b", "--items",
          "pipe.csv", "--out", "a.csv"), r"--items " + pipe),
        (("adaptive", "estimate", "pipe.csv"), pipe),
        (("adaptive", "next", "pipe.csv", mb), pipe),
        # --force once put a regular file in place of the pipe (or of /dev/null)
        (("select", "gpqa", "--method", "random", "--size", "5", "--out", "pipe.csv",
          "--force"), r"--out " + pipe + "; choose a file name"),
        (("data", "answers", "gpqa", "--model", "bigscience__bloom-3b", "--out", "gone.csv",
          "--force"), r"--out gone\.csv: " + link),
        # a link loop once raised RuntimeError in Path.resolve
        (("data", "answers", "gpqa", "--model", "bigscience__bloom-3b", "--items", "loop1",
          "--out", "a.csv"), r"--items loop1: " + link),
        (("run", "gpqa", "--methods", "random", "--out", "loop1"),
         r"--out loop1: " + link + "; choose another folder"),
    ]:
        assert_user_error(mdad_cli(*command, cwd=tmp_path), pattern)


def test_a_pipe_named_like_lm_eval_samples_is_named_not_read(tmp_path: Path) -> None:
    import os

    model = tmp_path / "results" / "org__model"
    model.mkdir(parents=True)
    os.mkfifo(model / "samples_leaderboard_gpqa_main_2024-06-01T12-00-00.000000.jsonl")
    for command in (("data", "info", "results"), ("run", "results", "--out", "o")):
        assert_user_error(mdad_cli(*command, cwd=tmp_path),
                          r"samples_leaderboard_gpqa_main_\S+\.jsonl: not a regular file or "
                          r"folder \(a device, pipe or socket\), named like an lm-eval samples "
                          r"file; remove it or rename it$")


def test_adaptive_results_in_a_pipe_are_named_not_read(tmp_path: Path, gpqa_data) -> None:
    import os

    from mdad.practice.adaptive import start_adaptive_test

    test = start_adaptive_test(gpqa_data, budget=4, batch=2)
    os.mkfifo(tmp_path / "pipe.csv")
    with pytest.raises(DataError, match=r"pipe\.csv: not a regular file or folder"):
        test.apply_results(tmp_path / "pipe.csv")
    assert test.round == 0 and not test.applied


def test_a_pipe_in_place_of_a_study_file_is_named(small_study: Path, tmp_path: Path) -> None:
    import os
    import shutil

    folder = tmp_path / "run"
    shutil.copytree(small_study, folder)
    (folder / "mdad.csv").unlink()
    os.mkfifo(folder / "mdad.csv")
    assert_user_error(mdad_cli("report", folder, cwd=tmp_path),
                      r"mdad\.csv: not a regular file or folder .*another folder")
