"""A method from another package, in one file (tests/method_plugin_fixture), found
through a real ``mdad.methods`` entry point (a dist-info folder on PYTHONPATH, read by
importlib.metadata) and driven through the real CLI: methods, run, report, select,
estimate. Plus the registry's refusals: a plugin that fails to import, a name clash."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import GPQA_CSV, shared_data

FIXTURE = Path(__file__).resolve().parent / "method_plugin_fixture"
TOY_LABEL = "Toy (shrunk mean) (toy)"


def mdad(*args: object, cwd: Path, path: list[Path] = (FIXTURE,), data: Path | None = None
         ) -> subprocess.CompletedProcess[str]:
    """`python -m mdad ARGS` with `path` on PYTHONPATH, wide and colourless output, and
    the shared data folder `data` (as MDAD_DATA) when given."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    if data is not None:
        env["MDAD_DATA"] = str(data)
    env.update(NO_COLOR="1", COLUMNS="250",
               PYTHONPATH=os.pathsep.join([*map(str, path), env.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "mdad", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


def ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stdout + proc.stderr
    return proc.stdout


def test_methods_lists_the_plugin_with_what_its_class_says(tmp_path: Path):
    out = ok(mdad("methods", cwd=tmp_path))
    rows = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert "Toy (shrunk mean)" in rows["toy"] and "correctness" in rows["toy"]
    assert "yes" not in rows["toy"]  # not in the paper, no analytic MDAD
    assert "Every other item from a random start" in rows["toy:"]  # its description
    # the built-in ones read from their classes too, in registry order, plugin last
    names = [line.split()[0] for line in out.splitlines()
             if line.split() and line.split()[0] in ("random", "subtask-equal", "toy")]
    assert names == ["random", "subtask-equal", "toy"]
    assert "uniform sampling" in rows["random"] and "subtask-stratified" in rows[
        "subtask-equal"]
    # without the entry point, no toy
    assert "toy" not in ok(mdad("methods", cwd=tmp_path, path=[])).split()


@pytest.mark.slow
def test_run_report_select_estimate_with_the_plugin(tmp_path: Path):
    shared_data(GPQA_CSV)
    data = shared_data()
    run_dir = tmp_path / "run"
    ok(mdad("run", "gpqa", "--runs", "2", "--sizes", "10", "--methods", "random,toy",
            "--resamples", "20", "--workers", "1", "--out", run_dir, cwd=tmp_path, data=data))
    import pandas as pd

    mdad_table = pd.read_csv(run_dir / "mdad.csv")
    assert set(mdad_table.method) == {"random", "toy"}
    ok(mdad("report", run_dir, cwd=tmp_path))
    page = next(run_dir.rglob("*.html")).read_text(encoding="utf-8")
    assert TOY_LABEL in page and "Random (uniform) (random)" in page
    legend = (next(run_dir.rglob("mdad_vs_size_seen.svg"))).read_text(encoding="utf-8")
    assert TOY_LABEL in legend and "#123456" in legend.lower()

    bundle_path = tmp_path / "toy.json"
    ok(mdad("select", "gpqa", "--method", "toy", "--size", "10", "--seed", "3",
            "--out", bundle_path, cwd=tmp_path, data=data))
    bundle = json.loads(bundle_path.read_text())
    assert bundle["method"] == "toy" and bundle["estimator"]["kind"] == "toy-shrunk-mean"
    assert bundle["estimator"]["shrink"] == 0.75
    assert bundle["error_sd"] is not None and bundle["mdad_how"] == "random-analytic"
    items = [int(i) for i in bundle["items"]]
    assert np.all(np.diff(items) == 2)  # the toy's every other item

    from mdad.data import load_dataset

    matrix = load_dataset("gpqa").matrix
    assert bundle["estimator"]["prior"] == pytest.approx(float(matrix.correctness.mean()))
    column = {str(item): k for k, item in enumerate(matrix.item_ids)}
    answers = matrix.correctness[5, [column[i] for i in bundle["items"]]].astype(float)
    results = tmp_path / "model.csv"
    results.write_text("item_id,correct\n" + "".join(
        f"{i},{int(a)}\n" for i, a in zip(bundle["items"], answers, strict=True)))
    answer = json.loads(ok(mdad("estimate", bundle_path, results, "--json", cwd=tmp_path)))
    expected = 0.75 * answers.mean() + 0.25 * bundle["estimator"]["prior"]
    assert answer["accuracy"] == pytest.approx(expected, abs=1e-12)


def _dist_info(root: Path, name: str, entry: str, module: str | None = None,
               code: str = "") -> Path:
    """A minimal installed distribution under `root`: dist-info with one entry point,
    and optionally a module beside it."""
    info = root / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[mdad.methods]\n{entry}\n")
    if module:
        (root / f"{module}.py").write_text(code)
    return root


def test_a_plugin_that_fails_to_import_is_one_line_naming_it(tmp_path: Path):
    root = _dist_info(tmp_path / "site", "broken", "broken = mdad_broken_method:Nope",
                      "mdad_broken_method", "import a_module_that_does_not_exist\n")
    proc = mdad("methods", cwd=tmp_path, path=[root])
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1
    assert "method plugin broken = mdad_broken_method:Nope" in proc.stderr
    assert "ModuleNotFoundError: No module named 'a_module_that_does_not_exist'" in proc.stderr


def test_a_plugin_may_not_take_a_built_in_name(tmp_path: Path):
    code = ("from mdad.selection import MethodDefaults, MicroBenchmark, register\n"
            "@register('random')\n"
            "class Impostor(MethodDefaults):\n"
            "    def select(self, pool, size, *, rng):\n"
            "        return MicroBenchmark.plain_mean(list(range(size)))\n")
    root = _dist_info(tmp_path / "site", "impostor", "impostor = mdad_impostor",
                      "mdad_impostor", code)
    proc = mdad("methods", cwd=tmp_path, path=[root])
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "method plugin impostor = mdad_impostor registers 'random'" in proc.stderr


@pytest.mark.parametrize("entry, code, message", [
    ("helper = mdad_helper:make", "def make():\n    return None\n",
     r"method plugin helper = mdad_helper:make: names function <function make at .*>, "
     r"neither a method class nor a module; point the entry point at the class"),
    ("empty = mdad_helper", "VALUE = 1\n",
     r"method plugin empty = mdad_helper: the module registers no method; decorate its "
     r"class with @mdad.selection.register\(NAME\)"),
])
def test_an_entry_point_that_registers_nothing_is_refused(tmp_path: Path, entry: str,
                                                          code: str, message: str):
    import re

    root = _dist_info(tmp_path / "site", "helper", entry, "mdad_helper", code)
    proc = mdad("methods", cwd=tmp_path, path=[root])
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert re.search(message, proc.stderr), proc.stderr
