"""`mdad methods`: the selection methods a study can run, read from their classes."""

from __future__ import annotations

import inspect

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from mdad.cli.errors import literal, user_errors, visible
from mdad.cli.limits import LIGHT_MIN_MB

# How each analytic MDAD kind reads in the table.
ANALYTIC = {"uniform": "uniform sampling", "stratified": "subtask-stratified"}


@user_errors(plugin_warnings=False, needs_mb=LIGHT_MIN_MB)  # it lists broken plugins
def methods() -> None:
    """List the selection methods, what they read, and how they estimate, and the
    method plugins that failed to load, with why."""
    from mdad.selection import METHODS

    table = Table(box=box.SIMPLE_HEAD, title="selection methods (--methods NAME,... or all)",
                  title_justify="left")
    for column in ("name", "display name", "in the paper", "reads", "analytic MDAD"):
        table.add_column(column, no_wrap=True)
    descriptions = []
    for name, cls in METHODS.items():
        table.add_row(name, cls.display_name or name, "yes" if cls.in_paper else "",
                      "confidence" if cls.reads_confidence else "correctness",
                      ANALYTIC.get(cls.analytic_mdad or "", ""))
        summary = " ".join(inspect.cleandoc(cls.__doc__ or "").split("\n\n")[0].split())
        descriptions.append(f"{name}: {summary}")
    for name, error in METHODS.broken.items():  # listed, not fatal: the others work
        table.add_row(literal(name), "(broken plugin)", "", "", "")
        descriptions.append(visible(f"{name}: broken plugin, not available: {error}"))
    console = Console(highlight=False)
    if not console.is_terminal:  # piped: wide enough for the table, not 80 columns
        console = Console(highlight=False, width=120)
    console.print(table)
    console.print("Methods that read confidence use correctness where the data has none.\n")
    for line in descriptions:
        console.print(escape(line))
