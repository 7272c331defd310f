"""Helpers the test modules share: where the real data of ../shared/data is, running
the `mdad` command as a user does, and checking what it printed.

`python -m mdad.cli.app` does nothing (the module has no ``__main__`` guard), so the
tests call the ``mdad`` console script installed next to the interpreter.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest


def shared_data(relative: str = "") -> Path:
    """The shared real-data folder (or a path inside it).

    Missing data skips the test locally and fails it when ``CI`` is set, so CI can
    never pass without having run the real-data checks.
    """
    env = os.environ.get("MDAD_DATA")
    root = Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"
    path = root / relative
    if not path.exists():
        message = f"real data not found at {path}; set MDAD_DATA to the shared data folder"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


GPQA_CSV = "open-llm-leaderboard-v2/gpqa_main.csv"
MMLU_PRO_CSV = "mmlu-pro-tiger-lab/mmlu_pro_29_models.csv"


MDAD = Path(sys.executable).parent / "mdad"
FAST = ("--runs", "2", "--resamples", "20")


def mdad_cli(*args: object, cwd: Path | None = None, columns: int | None = None,
             process: bool = False) -> subprocess.CompletedProcess[str]:
    """Run the `mdad` command; rich's width (80 unless `columns`) and colours fixed for
    stable text. In this process (the CLI's own entry point, its output captured), as
    typer's test runner would, unless `process`: the installed command as a new
    process, for what only a process shows (its exit, signals, startup imports)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "TTY_COMPATIBLE")}
    env["NO_COLOR"] = "1"
    if columns is not None:
        env["COLUMNS"] = str(columns)
    argv = [str(MDAD), *map(str, args)]
    if process:
        return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=600, check=False)
    return _in_process(argv, cwd, env)


def _in_process(argv: list[str], cwd: Path | None, env: dict[str, str]
                ) -> subprocess.CompletedProcess[str]:
    """`mdad.cli.app`'s command run here, as the console script runs it (with the
    environment defaults its `main` sets) but without its signal watchdog, its mapping
    of interrupts and exhausted resources, and its final os._exit (a test process must
    live on; the tests of those run a process): exit code, stdout and stderr as a
    process would give them, a traceback included. Only the variables that differ are
    set, and put back."""
    import contextlib
    import io
    import traceback

    from mdad.cli import app, errors

    env = {"NUMPY_MADVISE_HUGEPAGE": "0", "OPENBLAS_NUM_THREADS": "1", **env}
    changed = {k: os.environ.get(k) for k in set(env) | set(os.environ)
               if os.environ.get(k) != env.get(k)}
    out, err = io.StringIO(), io.StringIO()
    saved_argv, saved_cwd = sys.argv, os.getcwd()
    code = 0
    try:
        for key in changed:
            if key in env:
                os.environ[key] = env[key]
            else:
                del os.environ[key]
        sys.argv = argv
        if cwd is not None:
            os.chdir(cwd)
        errors.reset_interrupt_state()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                app._main()
            except SystemExit as done:
                code = done.code if isinstance(done.code, int) else (0 if done.code is None
                                                                     else 1)
            except Exception:
                traceback.print_exc()
                code = 1
    finally:
        os.chdir(saved_cwd)
        sys.argv = saved_argv
        for key, value in changed.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def flat(text: str) -> str:
    """Text with rich's line wrapping undone (all whitespace runs as one space)."""
    return " ".join(text.split())


def assert_ok(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stdout + proc.stderr


def assert_no_out(out: Path, before: set[str] | None = None) -> None:
    """`out` was not created (or, if it existed, left as it was), and no hidden staging
    folder `.<name>.*` is left beside it."""
    if before is None:
        assert not out.exists(), f"{out} was created by a failing run"
    else:
        assert {p.name for p in out.iterdir()} == before
    leftovers = sorted(p.name for p in out.parent.glob(f".{out.name}*"))
    assert leftovers == [], f"partial output left behind: {leftovers}"


def assert_user_error(proc: subprocess.CompletedProcess[str], pattern: str) -> str:
    """Exit code 2, exactly one stderr line `mdad: error: ...` matching `pattern`."""
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2, f"exit {proc.returncode}\n{output}"
    assert "Traceback" not in output
    lines = proc.stderr.removesuffix("\n").split("\n")
    assert len(lines) == 1, f"error message is not one line:\n{proc.stderr}"
    assert lines[0].startswith("mdad: error: "), proc.stderr
    assert re.search(pattern, lines[0]), f"{pattern!r} not in {lines[0]!r}"
    return lines[0]


def gpqa_path() -> Path:
    """The real GPQA CSV of ../shared/data (see `shared.shared_data`)."""
    return shared_data(GPQA_CSV)


# ---- lm-evaluation-harness sample files

PYTHIA = "lm-eval-samples/EleutherAI__pythia-14m"
STAMP = "2024-11-26T10-50-23.349203"


def pythia_dir() -> Path:
    return shared_data(PYTHIA)


def pythia_file(task: str) -> Path:
    return pythia_dir() / f"samples_metabench_{task}_secondary_{STAMP}.jsonl"


def write_samples(directory: Path, task: str, records: list[dict], stamp: str = STAMP) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"samples_{task}_{stamp}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def mc_record(doc_id: int, lls: list[float], target: object, acc: float, **extra: object) -> dict:
    """A multiple-choice record in the harness's schema, numbers as strings like the real files."""
    return {
        "doc_id": doc_id, "doc": extra.pop("doc", {}), "target": target,
        "arguments": extra.pop("arguments", {
            f"gen_args_{k}": {"arg_0": "Q: ?\nA:", "arg_1": f" option {k}"}
            for k in range(len(lls))}),
        "resps": [[[str(v), "False"]] for v in lls],
        "filtered_resps": [[str(v), "False"] for v in lls],
        "doc_hash": "x", "prompt_hash": "y", "target_hash": "z", "acc": acc, **extra,
    }


def benchmark_script(name: str):
    """The module of benchmarks/NAME.py, imported as the scripts import each other
    (benchmarks/ on sys.path)."""
    import importlib

    folder = str(Path(__file__).resolve().parent.parent / "benchmarks")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return importlib.import_module(name)
