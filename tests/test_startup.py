"""Fast by default (issue 13, point 6): importing `mdad` or the command line loads none
of the heavy libraries; each command loads what it needs when it runs.

Checked by what a fresh interpreter has in `sys.modules`, not by timing (the timing is
benchmarks/bench_cli_startup.py).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("matplotlib", "sklearn", "scipy", "pandas", "dask", "distributed", "pyarrow",
         "kmedoids", "lm_eval")


def heavy_modules_loaded(statement: str) -> list[str]:
    """The HEAVY top-level packages that a fresh interpreter has loaded after running
    `statement`."""
    probe = (f"import sys\n{statement}\nimport json\n"
             f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & "
             f"set({list(HEAVY)!r}))))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.parametrize("statement", [
    "import mdad",
    "import mdad.cli.app",
    # what `mdad --help` runs before it prints: every command's parameters built
    "import typer, mdad.cli.app as a; typer.main.get_command(a.app)",
])
def test_startup_loads_no_heavy_library(statement: str):
    assert heavy_modules_loaded(statement) == []


def test_the_help_loads_only_the_command_line_and_its_constants():
    """`mdad --help` builds every command's options from `mdad.defaults` and
    `mdad.data.choices`: no method, study, metric or loader module, and not numpy."""
    probe = ("import sys, json, typer, mdad.cli.app as a; "
             "typer.main.get_command(a.build_app()); "
             "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('mdad', 'numpy'))))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=120)
    loaded = set(json.loads(proc.stdout))
    light = {"mdad", "mdad._lazy", "mdad.errors", "mdad.display", "mdad.defaults",
             "mdad.data", "mdad.data.choices"}
    assert {m for m in loaded if not m.startswith("mdad.cli")} == light


@pytest.mark.parametrize("module", [
    "mdad.cli.adaptive_cmd", "mdad.cli.data_cmd", "mdad.cli.estimate_cmd", "mdad.cli.plan_cmd",
    "mdad.cli.report_cmd", "mdad.cli.practice_common", "mdad.cli.render",
    "mdad.cli.files", "mdad.report", "mdad.practice", "mdad.practice.estimate",
    "mdad.practice.compare", "mdad.practice.results", "mdad.practice.estimators",
])
def test_command_modules_load_no_heavy_library(module: str):
    """One module at a time, so a failure names the module that is not light."""
    assert heavy_modules_loaded(f"import {module}") == []


def test_the_probe_sees_a_heavy_library():
    """The check above would notice: a module that does load pandas is reported."""
    assert "pandas" in heavy_modules_loaded("import pandas")


def test_reading_study_folders_leaves_the_exported_evaluate_function_alone():
    """A submodule imported before its package's export of the same name is asked for
    binds the module to that name: `from mdad.study import evaluate` then gave the
    module once `mdad.study.folder` had been imported."""
    statement = ("import mdad.study.folder; from mdad.study import evaluate; "
                 "print(callable(evaluate))")
    shown = subprocess.run([sys.executable, "-c", statement], capture_output=True, text=True,
                           check=True).stdout
    assert shown.strip() == "True"


def test_practice_commands_on_a_csv_load_neither_pandas_nor_scipy_stats(gpqa_data, tmp_path):
    """select, data answers, plan, estimate, compare and data info on GPQA's CSV:
    pandas (0.4 s to import) parsed its cells, and scipy.stats (0.8 s) gave McNemar's
    binomial CDF, in every one of them."""
    micro, answers = tmp_path / "mb.json", tmp_path / "a.csv"
    for args in (["select", "gpqa", "--method", "random", "--size", "10", "--out", micro],
                 ["data", "answers", "gpqa", "--model", "bigscience__bloom-3b", "--items",
                  micro, "--out", answers],
                 ["plan", "gpqa", "--size", "10"], ["estimate", micro, answers],
                 ["compare", micro, answers, answers], ["data", "info", "gpqa"]):
        command = ("import sys, json\nfrom mdad.cli.app import main\n"
                   f"sys.argv = ['mdad', *{[str(a) for a in args]!r}]\n"
                   "try:\n    main()\nexcept SystemExit as stop:\n    assert not stop.code\n"
                   "print(json.dumps(sorted(m for m in sys.modules if m in "
                   "('pandas', 'scipy.stats'))))")
        proc = subprocess.run([sys.executable, "-c", command], capture_output=True,
                              text=True, check=False, timeout=120, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout.splitlines()[-1]) == [], args
