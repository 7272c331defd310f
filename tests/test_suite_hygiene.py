"""The test suite's own rules: every test can fail."""

from __future__ import annotations

import ast
import re
from pathlib import Path

# a call that checks something: assert_*, pytest.raises / warns, pytest.fail, ...
CHECKING_CALL = re.compile(r"assert|raises|warns|fail", re.IGNORECASE)
TESTS = Path(__file__).parent


def _called(node: ast.AST) -> set[str]:
    names = set()
    for call in ast.walk(node):
        if isinstance(call, ast.Call):
            func = call.func
            names.add(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
    return names


def _checks_itself(node: ast.AST) -> bool:
    return (any(isinstance(n, ast.Assert) for n in ast.walk(node))
            or any(CHECKING_CALL.search(name) for name in _called(node)))


def unchecked_tests(folder: Path) -> list[str]:
    """``file::test`` of every test function in `folder`'s test_*.py that has no assert,
    no checking call, and calls no function of the folder that checks (transitively):
    one that passes whatever the code does."""
    trees = {path: ast.parse(path.read_text(encoding="utf-8"))
             for path in sorted(folder.glob("*.py"))}
    functions: dict[str, list[ast.AST]] = {}
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                functions.setdefault(node.name, []).append(node)
    checking = {name for name, nodes in functions.items() if any(map(_checks_itself, nodes))}
    grew = True
    while grew:  # helpers that call helpers that check
        grew = False
        for name, nodes in functions.items():
            if name not in checking and any(_called(n) & checking for n in nodes):
                checking.add(name)
                grew = True
    found = []
    for path, tree in trees.items():
        if not path.name.startswith("test_"):
            continue
        for node in ast.walk(tree):
            if (isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                    and node.name.startswith("test") and not _checks_itself(node)
                    and not _called(node) & checking):
                found.append(f"{path.name}::{node.name}")
    return found


def test_every_test_checks_something():
    assert unchecked_tests(TESTS) == []


def test_the_rule_finds_a_test_that_asserts_nothing(tmp_path: Path):
    (tmp_path / "test_a.py").write_text(
        "def helper(x):\n    assert x\n\n"
        "def test_calls_a_checking_helper():\n    helper(1)\n\n"
        "def test_raises():\n    with pytest.raises(ValueError):\n        int('x')\n\n"
        "def test_runs_only():\n    int('1')\n\n"
        "class TestThings:\n    def test_swallows(self):\n        try:\n            int('x')\n"
        "        except ValueError:\n            pass\n")
    assert unchecked_tests(tmp_path) == ["test_a.py::test_runs_only",
                                                  "test_a.py::test_swallows"]
