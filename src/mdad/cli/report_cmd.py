"""`mdad report RUN_DIR`: figures and an HTML page for a finished run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from mdad.cli.errors import user_errors


@user_errors
def report(
    run_dir: Annotated[Path, typer.Argument(help="A folder written by `mdad run`.")],
) -> None:
    """Write RUN_DIR/report.html (self-contained) and RUN_DIR/figures/*.png, *.svg."""
    from mdad.report import write_report

    page = write_report(run_dir)
    Console().print(f"wrote {page} and {page.parent / 'figures'}")
