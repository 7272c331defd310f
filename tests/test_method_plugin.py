"""A method from another package, in one file (tests/method_plugin_fixture), found
through a real ``mdad.methods`` entry point (a dist-info folder on PYTHONPATH, read by
importlib.metadata) and driven through the real CLI: methods, run, report, select,
estimate. Plus the registry's refusals (a plugin that fails to import, a name clash, an
entry point named otherwise than its method), none of which stops a command that does
not ask for that plugin; and a plugin's method that cannot build every size."""

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


BROKEN = ("broken = mdad_broken_method:Nope", "mdad_broken_method",
          "import a_module_that_does_not_exist\n")
BROKEN_ERROR = ("method plugin broken = mdad_broken_method:Nope (entry point group "
                "mdad.methods) failed to load: ModuleNotFoundError: No module named "
                "'a_module_that_does_not_exist'; fix or uninstall it")
# a study of a small leaderboard (`_small_csv`) takes seconds and needs no shared data
SMALL_RUN = ("--orientation", "items-as-rows", "--runs", "2", "--resamples", "20",
             "--targets", "10", "--sources", "20", "--workers", "1")


def _small_csv(folder: Path, n_models: int = 40, n_items: int = 100) -> Path:
    """A small leaderboard, one row per item, one subtask: a seen pool of n_items / 2."""
    rng = np.random.default_rng(0)
    correct = (rng.normal(size=(n_models, n_items)) + rng.normal(size=(n_models, 1))
               + rng.normal(size=(1, n_items)) > 0).astype(int)
    lines = ["item_id," + ",".join(f"m{k}" for k in range(n_models))]
    lines += [f"q{i}," + ",".join(map(str, correct[:, i])) for i in range(n_items)]
    path = folder / "small.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def one_error(proc: subprocess.CompletedProcess[str]) -> str:
    """The message of a command that failed as a user error does: exit 2, one line
    ``mdad: error: ...`` on stderr, no traceback."""
    assert proc.returncode == 2, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("mdad: error: "), (
        proc.stderr)
    return proc.stderr.removeprefix("mdad: error: ").rstrip("\n")


def methods_listing(proc: subprocess.CompletedProcess[str]) -> tuple[dict[str, str], str]:
    """`mdad methods`' table rows by name, and its whole text with line breaks undone."""
    out = ok(proc)
    rows = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    return rows, " ".join(out.split())


def python(code: str, path: list[Path]) -> str:
    """The stdout of `code` run by a fresh interpreter with `path` on PYTHONPATH: the
    registry as a program sees it, its entry points read for real."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, path))}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_a_plugin_that_fails_to_import_is_listed_as_broken_the_others_work(tmp_path: Path):
    root = _dist_info(tmp_path / "site", "broken", *BROKEN)
    proc = mdad("methods", cwd=tmp_path, path=[root, FIXTURE])
    rows, text = methods_listing(proc)
    assert proc.stderr == ""  # the listing says it: no warning besides
    assert "(broken plugin)" in rows["broken"] and "Toy (shrunk mean)" in rows["toy"]
    assert f"broken: broken plugin, not available: {BROKEN_ERROR}" in text
    # asked for by name, it is its own error; the working plugin and built-ins answer
    out = python(
        "from mdad.errors import ConfigError\n"
        "from mdad.selection import METHODS, get_method, method_class\n"
        "for name in ('broken', 'brokn'):\n"
        "    try:\n"
        "        method_class(name)\n"
        "    except ConfigError as exc:\n"
        "        print(exc)\n"
        "print('broken' in METHODS, 'toy' in METHODS, sorted(METHODS.broken))\n"
        "print(type(get_method('toy')).__name__, type(get_method('random')).__name__)\n",
        [root, FIXTURE])
    lines = out.splitlines()
    assert lines[0] == BROKEN_ERROR
    assert lines[1].startswith("unknown method 'brokn' (did you mean 'broken'?); choose from: "
                               "random, ")
    assert lines[1].endswith(", toy; method plugins that failed to load: broken")
    assert lines[2:] == ["False True ['broken']", "ToyMethod UniformRandom"]


def test_a_broken_plugin_stops_only_the_commands_that_ask_for_it(tmp_path: Path):
    """`mdad run DATA --methods random` runs with a broken plugin installed, and warns
    of it in one line; asking for the broken one is its one-line error."""
    root = _dist_info(tmp_path / "site", "broken", *BROKEN)
    data = _small_csv(tmp_path)
    proc = mdad("run", data, "--methods", "random", "--sizes", "10", *SMALL_RUN,
                "--out", tmp_path / "run", cwd=tmp_path, path=[root])
    ok(proc)
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [f"warning: {BROKEN_ERROR}"], proc.stderr
    assert (tmp_path / "run" / "mdad.csv").is_file()
    proc = mdad("run", data, "--methods", "random,broken", "--sizes", "10", *SMALL_RUN,
                "--out", tmp_path / "again", cwd=tmp_path, path=[root])
    assert one_error(proc) == BROKEN_ERROR
    assert not (tmp_path / "again").exists()


def test_a_plugin_may_not_take_a_built_in_name(tmp_path: Path):
    code = ("from mdad.selection import MethodDefaults, MicroBenchmark, register\n"
            "@register('random')\n"
            "class Impostor(MethodDefaults):\n"
            "    def select(self, pool, size, *, rng):\n"
            "        return MicroBenchmark.plain_mean(list(range(size)))\n")
    root = _dist_info(tmp_path / "site", "impostor", "impostor = mdad_impostor",
                      "mdad_impostor", code)
    rows, text = methods_listing(mdad("methods", cwd=tmp_path, path=[root]))
    assert ("impostor: broken plugin, not available: method plugin impostor = mdad_impostor "
            "registers 'random', a name already taken by a built-in or another plugin; "
            "rename it") in text
    assert "uniform sampling" in rows["random"]  # the built-in, untouched


@pytest.mark.parametrize("entry, code, message", [
    ("helper = mdad_helper:make", "def make():\n    return None\n",
     r"method plugin helper = mdad_helper:make: names function <function make at .*>, "
     r"neither a method class nor a module; point the entry point at the class"),
    ("helper = mdad_helper", "VALUE = 1\n",
     r"method plugin helper = mdad_helper: the module registers no method; decorate its "
     r"class with @mdad.selection.register\(NAME\) or point the entry point at the class"),
])
def test_an_entry_point_that_registers_nothing_is_refused(tmp_path: Path, entry: str,
                                                          code: str, message: str):
    import re

    root = _dist_info(tmp_path / "site", "helper", entry, "mdad_helper", code)
    _, text = methods_listing(mdad("methods", cwd=tmp_path, path=[root]))
    assert re.search(f"helper: broken plugin, not available: {message}", text), text
    proc = mdad("run", _small_csv(tmp_path), "--methods", "helper", *SMALL_RUN,
                "--out", tmp_path / "run", cwd=tmp_path, path=[root])
    assert re.fullmatch(message, one_error(proc))


EVERY_OTHER = ("import numpy as np\n"
               "from mdad.selection import MethodDefaults, MicroBenchmark, register\n"
               "@register({name!r})\n"
               "class EveryOther(MethodDefaults):\n"
               "    '''Every other item.'''\n"
               "    def select(self, pool, size, *, rng):\n"
               "        return MicroBenchmark.plain_mean(np.arange(0, 2 * size, 2))\n")


UNNAMED = ("method plugin module mdad_every_other registers {name!r}, which no entry point "
           "of mdad.methods names (or its own failed to load); give it its own entry point "
           "({name} = \"mdad_every_other:{cls}\")")


@pytest.mark.parametrize("entry, code, broken, works", [
    ("every-other = mdad_every_other:EveryOther", EVERY_OTHER.format(name="everyother"),
     {"every-other": "method plugin every-other = mdad_every_other:EveryOther: the entry "
                     "point is named 'every-other' but its class EveryOther is registered "
                     "as 'everyother'; rename the entry point to everyother or register the "
                     "class as every-other",
      "everyother": UNNAMED.format(name="everyother", cls="EveryOther")}, None),
    ("every-other = mdad_every_other", EVERY_OTHER.format(name="everyother"),
     {"every-other": "method plugin every-other = mdad_every_other: the entry point is "
                     "named 'every-other' but its module registers 'everyother'; rename the "
                     "entry point to everyother or register the method as every-other",
      "everyother": UNNAMED.format(name="everyother", cls="EveryOther")}, None),
    ("every-other = mdad_every_other", EVERY_OTHER.format(name="every-other")
     + "@register('stowaway')\nclass Stowaway(EveryOther):\n    pass\n",
     {"stowaway": UNNAMED.format(name="stowaway", cls="Stowaway")}, "every-other"),
], ids=["class", "module", "unnamed"])
def test_an_entry_point_named_otherwise_than_its_method_is_refused(
        tmp_path: Path, entry: str, code: str, broken: dict[str, str], works: str | None):
    """The entry point's name is the method's: a method registered under another name
    makes a broken plugin, named by its entry point, with both names and the fix; a
    method that no entry point names is not the package's either, and says so."""
    root = _dist_info(tmp_path / "site", "every-other", entry, "mdad_every_other", code)
    rows, text = methods_listing(mdad("methods", cwd=tmp_path, path=[root, FIXTURE]))
    for name, message in broken.items():
        assert f"{name}: broken plugin, not available: {message}" in text
    assert "toy" in rows and (works is None or "broken" not in rows[works])
    data = _small_csv(tmp_path)
    for name, message in broken.items():
        proc = mdad("run", data, "--methods", name, *SMALL_RUN, "--out", tmp_path / "run",
                    cwd=tmp_path, path=[root])
        assert one_error(proc) == message


def test_two_entry_points_may_name_two_methods_of_one_module(tmp_path: Path):
    code = (EVERY_OTHER.format(name="every-other")
            + "@register('every-second')\nclass EverySecond(EveryOther):\n"
              "    '''Every second item.'''\n")
    root = _dist_info(tmp_path / "site", "pair", "every-other = mdad_pair:EveryOther\n"
                      "every-second = mdad_pair", "mdad_pair", code)
    rows, text = methods_listing(mdad("methods", cwd=tmp_path, path=[root]))
    assert "every-other" in rows and "every-second" in rows and "broken plugin" not in text


CAPPED = ("import numpy as np\n"
          "from mdad.selection import MethodDefaults, MicroBenchmark\n"
          "class Capped(MethodDefaults):\n"
          "    '''A random subset of at most 30 items.'''\n"
          "    @classmethod\n"
          "    def max_size_for(cls, subtask_sizes):\n"
          "        return min(30, int(np.sum(subtask_sizes)))\n"
          "    def select(self, pool, size, *, rng):\n"
          "        return MicroBenchmark.plain_mean(rng.permutation(pool.n_items)[:size])\n")


def test_sizes_a_plugin_cannot_build_are_dropped_for_it_alone(tmp_path: Path):
    """A method that builds at most 30 items from a 50-item seen pool beside random, at
    the default sizes (10, 25, 50 here): random keeps 50, and the tables and the report
    cope with a method of fewer sizes."""
    import pandas as pd

    root = _dist_info(tmp_path / "site", "capped", "capped = mdad_capped:Capped",
                      "mdad_capped", CAPPED)
    run_dir = tmp_path / "run"
    proc = mdad("run", _small_csv(tmp_path), "--methods", "random,capped", *SMALL_RUN,
                "--out", run_dir, cwd=tmp_path, path=[root])
    ok(proc)
    notice = ("sizes 50 dropped for method capped: it can build at most 30 items from this "
              "seen pool (random keeps them)")
    assert f"note: {notice}" in " ".join(proc.stderr.split())
    assert "sizes 50 dropped:" not in proc.stderr  # dropped for no other method

    def sizes(table: pd.DataFrame) -> dict[str, list[int]]:
        return {str(m): sorted(set(map(int, rows["size"])))
                for m, rows in table.groupby("method", observed=True, sort=False)}

    expected = {"random": [10, 25, 50], "capped": [10, 25]}
    for name in ("mdad.csv", "summary.csv", "agreement.csv"):
        assert sizes(pd.read_csv(run_dir / name)) == expected, name
    results = pd.read_parquet(run_dir / "results.parquet")
    assert sizes(results) == expected and results.estimate.notna().all()
    assert len(results) == 2 * 10 * (3 + 2)  # runs x targets x (random's + capped's sizes)
    config = json.loads((run_dir / "config.json").read_text())
    assert config["study"]["sizes"] == [10, 25, 50]
    assert config["study"]["dropped_sizes"] == {"capped": [50]}
    assert notice in config["notices"]
    shown = [line.split()[:2] for line in proc.stdout.splitlines()
             if line.split()[:1] in (["random"], ["capped"])]
    assert shown == [["random", "10"], ["random", "25"], ["random", "50"],
                     ["capped", "10"], ["capped", "25"]]

    ok(mdad("report", run_dir, cwd=tmp_path, path=[root]))
    page = " ".join((run_dir / "report.html").read_text(encoding="utf-8").split())
    assert "capped is not run at 50 items: it cannot build that many from the seen pool." in page


def test_no_verdict_depends_on_the_order_plugins_load_in(tmp_path: Path):
    """Review: a plugin that imports another's module and then fails took that module's
    method down with it ("registers no method"), and a package whose module-form entry
    point registers its method in a submodule was refused. Every verdict now reads
    what all of them registered. A plugin that calls sys.exit() on import is broken,
    not the end of every command."""
    site = tmp_path / "site"
    _dist_info(site, "good", "good = mdad_good", "mdad_good",
               EVERY_OTHER.format(name="good"))
    _dist_info(site, "abroken", "abroken = mdad_abroken", "mdad_abroken",
               "import mdad_good\nraise RuntimeError('abroken: no config')\n")
    _dist_info(site, "exits", "exits = mdad_exits", "mdad_exits",
               "import sys\nsys.exit('plugin exits: missing config')\n")
    package = site / "mdad_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from mdad_pkg import inner\n")
    (package / "inner.py").write_text(EVERY_OTHER.format(name="pkg-method"))
    _dist_info(site, "pkg", "pkg-method = mdad_pkg")
    rows, text = methods_listing(mdad("methods", cwd=tmp_path, path=[site]))
    assert "broken" not in rows["good"] and "broken" not in rows["pkg-method"]
    assert ("abroken: broken plugin, not available: method plugin abroken = mdad_abroken "
            "(entry point group mdad.methods) failed to load: RuntimeError: abroken: no "
            "config; fix or uninstall it") in text
    assert ("exits: broken plugin, not available: method plugin exits = mdad_exits (entry "
            "point group mdad.methods) failed to load: SystemExit: plugin exits: missing "
            "config; fix or uninstall it") in text
    proc = mdad("run", _small_csv(tmp_path), "--methods", "random,good,pkg-method",
                "--sizes", "10", *SMALL_RUN, "--out", tmp_path / "run", cwd=tmp_path,
                path=[site])
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2 and all("abroken" in w or "exits" in w for w in warnings)
