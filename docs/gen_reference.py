"""Writes the generated reference pages when the site is built (mkdocs-gen-files):
the CLI reference from each command's own `--help`, the Python API reference over
the exported names (`__all__`), and the methods page from the method registry.
Nothing here is written by hand, so none of it can drift from the code."""

from __future__ import annotations

import importlib
import inspect
import os
import subprocess
import sys

import mkdocs_gen_files

HELP_WIDTH = "100"


def command_help(*words: str) -> str:
    """`mdad WORDS --help`, as a user's terminal of 100 columns shows it."""
    env = {**os.environ, "COLUMNS": HELP_WIDTH, "TERM": "dumb", "NO_COLOR": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", "from mdad.cli.app import main; main()", *words, "--help"],
        capture_output=True, text=True, env=env, check=True)
    return proc.stdout.rstrip()


def commands() -> list[tuple[str, ...]]:
    """Every command path, groups before their commands, in `mdad --help`'s order."""
    import typer

    from mdad.cli.app import COMMANDS

    paths: list[tuple[str, ...]] = []
    for name, (module, attribute) in COMMANDS.items():
        paths.append((name,))
        target = getattr(importlib.import_module(module), attribute)
        if isinstance(target, typer.Typer):
            group = typer.main.get_command(target)
            paths.extend((name, sub) for sub in group.commands)
    return paths


def cli_page() -> str:
    lines = ["# CLI reference", "",
             "Generated from each command's `--help` when the site is built.", "",
             "```text", command_help(), "```", ""]
    for path in commands():
        lines += [f"## `mdad {' '.join(path)}`", "", "```text", command_help(*path), "```", ""]
    return "\n".join(lines)


def public_packages() -> list[str]:
    """mdad and every package of it with an `__all__` (the public API), the CLI's aside."""
    import pkgutil

    import mdad

    names = ["mdad"]
    for info in pkgutil.walk_packages(mdad.__path__, "mdad."):
        if info.ispkg and not info.name.startswith("mdad.cli"):
            if hasattr(importlib.import_module(info.name), "__all__"):
                names.append(info.name)
    return names


def api_page() -> str:
    lines = ["# Python API reference", "",
             "Generated from the docstrings of every exported name (`__all__`) when the "
             "site is built. Other modules are internal: see [Python API](python-api.md).",
             ""]
    for package in public_packages():
        module = importlib.import_module(package)
        lines += [f"## `{package}`", ""]
        for name in module.__all__:
            obj = getattr(module, name)
            if name.startswith("__") or not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            home = f"{obj.__module__}.{obj.__qualname__}"
            if package != "mdad" and home in seen:
                continue
            seen.add(home)
            lines += [f"::: {home}", "    options:", "      heading_level: 3",
                      "      show_root_heading: true", "      show_root_full_path: false",
                      ""]
        constants = [name for name in module.__all__ if not name.startswith("__")
                     and not (inspect.isclass(getattr(module, name))
                              or inspect.isfunction(getattr(module, name)))]
        if constants:
            lines += ["Constants: " + ", ".join(f"`{name}`" for name in constants) + ".", ""]
    return "\n".join(lines)


def methods_page() -> str:
    from mdad.selection import METHODS

    lines = ["# Methods reference", "",
             "Generated from the method registry (`mdad.selection.METHODS`) when the site "
             "is built; `mdad methods` prints the same. The methods explained: "
             "[The selection methods](../explanation/methods.md).", "",
             "| method | name in figures | in the paper | reads confidences | analytic MDAD "
             "| faster variant |", "|---|---|---|---|---|---|"]
    for name, cls in METHODS.items():
        fast = vars(cls).get("fast_variant") or ""
        lines.append(f"| `{name}` | {cls.display_name} | {'yes' if cls.in_paper else 'no'} "
                     f"| {'yes' if cls.reads_confidence else 'no'} "
                     f"| {cls.analytic_mdad or 'no'} | {f'`{fast}`' if fast else ''} |")
    lines.append("")
    for name, cls in METHODS.items():
        doc = inspect.cleandoc(cls.__doc__ or "")
        lines += [f"## `{name}`", "", doc, ""]
    return "\n".join(lines)


seen: set[str] = set()
for path, text in (("reference/cli.md", cli_page()), ("reference/api.md", api_page()),
                   ("reference/methods.md", methods_page())):
    with mkdocs_gen_files.open(path, "w") as handle:
        handle.write(text)
