"""`mdad methods`: the selection methods a study can run, read from their classes."""

from __future__ import annotations

import inspect

from rich import box
from rich.console import Console
from rich.table import Table

from mdad.cli.errors import user_errors
from mdad.selection import METHODS

# How each analytic MDAD kind reads in the table.
ANALYTIC = {"uniform": "yes (uniform)", "stratified": "yes (subtask-stratified)"}


@user_errors
def methods() -> None:
    """List the selection methods, what they read, and how they estimate."""
    table = Table(box=box.SIMPLE_HEAD, title="selection methods (--methods NAME,... or all)",
                  title_justify="left")
    table.add_column("name", no_wrap=True)
    table.add_column("display name")
    table.add_column("in the paper")
    table.add_column("reads")
    table.add_column("analytic MDAD")
    table.add_column("description")
    for name, cls in METHODS.items():
        summary = " ".join(inspect.cleandoc(cls.__doc__ or "").split("\n\n")[0].split())
        table.add_row(name, cls.display_name or name, "yes" if cls.in_paper else "",
                      "confidence" if cls.reads_confidence else "correctness",
                      ANALYTIC.get(cls.analytic_mdad or "", ""), summary)
    Console().print(table)
    Console().print("Methods that read confidence use correctness where the data has none.")
