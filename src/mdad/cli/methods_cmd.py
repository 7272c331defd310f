"""`mdad methods`: the selection methods a study can run."""

from __future__ import annotations

import inspect

from rich import box
from rich.console import Console
from rich.table import Table

from mdad.cli.errors import user_errors
from mdad.selection import METHODS
from mdad.study import PAPER_METHODS


@user_errors
def methods() -> None:
    """List the selection methods, what they read, and how they estimate."""
    table = Table(box=box.SIMPLE_HEAD, title="selection methods (--methods NAME,... or all)",
                  title_justify="left")
    table.add_column("name", no_wrap=True)
    table.add_column("in the paper")
    table.add_column("reads")
    table.add_column("description")
    for name, cls in METHODS.items():
        summary = " ".join(inspect.cleandoc(cls.__doc__ or "").split("\n\n")[0].split())
        table.add_row(name, "yes" if name in PAPER_METHODS else "",
                      "confidence" if cls.reads_confidence else "correctness", summary)
    Console().print(table)
    Console().print("Methods that read confidence use correctness where the data has none.")
