"""The public API at the top of the package (issue 13, point 1): every name in
`mdad.__all__` resolves, lazily, to the object of the module that owns it."""

from __future__ import annotations

import importlib
import importlib.metadata
import pkgutil
import subprocess
import sys

import pytest

import mdad
import mdad.data
import mdad.practice
import mdad.report
from mdad.errors import ConfigError, DataError, MdadError


@pytest.mark.parametrize("name", mdad.__all__)
def test_every_public_name_resolves(name: str):
    assert getattr(mdad, name) is not None


def test_all_lists_every_lazy_name_and_the_errors():
    assert len(set(mdad.__all__)) == len(mdad.__all__)
    assert set(mdad.__all__) == {*mdad._EXPORTS, "MdadError", "ConfigError", "DataError",
                                 "__version__"}


def test_names_are_the_owning_modules_objects():
    assert mdad.load_dataset is mdad.data.load_dataset
    assert mdad.read_results is mdad.data.read_results
    assert mdad.ResponseMatrix is mdad.data.ResponseMatrix
    assert mdad.MdadError is MdadError and mdad.ConfigError is ConfigError
    assert mdad.DataError is DataError
    from mdad.metrics.mdad import DEFAULT_THRESHOLD, first_crossing_mdad
    from mdad.practice.results import read_model_scores

    assert mdad.DEFAULT_THRESHOLD == DEFAULT_THRESHOLD == 0.8
    assert mdad.first_crossing_mdad is first_crossing_mdad
    assert mdad.read_model_scores is read_model_scores


def test_one_read_results_only():
    """`read_results` reads many models into a matrix; one model's scores on a
    micro-benchmark are `read_model_scores`, a different name."""
    assert mdad.read_results is not mdad.read_model_scores
    assert "read_results" not in mdad.practice.__all__
    with pytest.raises(AttributeError, match="read_results"):
        _ = mdad.practice.read_results


def test_version_is_the_installed_one():
    assert mdad.__version__ == importlib.metadata.version("mdad")


def test_dir_lists_the_lazy_names():
    assert set(mdad.__all__) <= set(dir(mdad))
    assert set(mdad.practice.__all__) <= set(dir(mdad.practice))
    assert set(mdad.report.__all__) <= set(dir(mdad.report))


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = mdad.nothing_here
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = mdad.practice.nothing_here
    with pytest.raises(ImportError):
        exec("from mdad import nothing_here", {})


@pytest.mark.parametrize("package", [mdad.practice, mdad.report])
def test_subpackage_names_resolve(package):
    for name in package.__all__:
        assert getattr(package, name) is getattr(
            importlib.import_module(package._EXPORTS[name]), name)


def _packages() -> list[str]:
    return ["mdad", *(module.name for module in pkgutil.walk_packages(mdad.__path__, "mdad.")
                      if module.ispkg)]


@pytest.mark.parametrize("package", _packages())
def test_no_public_name_is_also_a_submodule(package: str):
    """Loading a submodule sets the package attribute of its name to the module, so an
    export of the same name (a function `plan` beside a module `plan`) would turn into
    the module once anything imports it (`from mdad.study import evaluate` did)."""
    module = importlib.import_module(package)
    submodules = {info.name for info in pkgutil.iter_modules(module.__path__)}
    assert not submodules & set(getattr(module, "__all__", ())), package


def test_exports_survive_their_modules_loading_first():
    """Fresh interpreter, every submodule loaded before the names are looked up: the
    order of imports is the point."""
    probe = ("import importlib, pkgutil, mdad\n"
             "for info in pkgutil.walk_packages(mdad.__path__, 'mdad.'):\n"
             "    importlib.import_module(info.name)\n"
             "from mdad.study import evaluate\n"
             "from mdad.practice import plan\n"
             "print(evaluate.__module__, plan.__module__, plan is mdad.plan)")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["mdad.study.evaluation", "mdad.practice.sizing", "True"]
