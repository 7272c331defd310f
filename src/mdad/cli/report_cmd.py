"""`mdad report RUN_DIR`: figures and an HTML page for a finished run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from mdad.cli.errors import literal, user_errors
from mdad.errors import ConfigError


@user_errors(kept="the report was not finished: the previous one, if any, is kept (its page "
                  "perhaps replaced), and the next report removes what this one left; run "
                  "it again with --force")
def report(
    run_dir: Annotated[Path, typer.Argument(help="A folder written by `mdad run`.")],
    force: Annotated[bool, typer.Option(
        "--force", help="Replace an existing report.html and figures/.")] = False,
) -> None:
    """Write RUN_DIR/report.html (self-contained) and RUN_DIR/figures/*.png, *.svg."""
    from mdad.report import write_report

    existing = [name for name in ("report.html", "figures") if (run_dir / name).exists()]
    if existing and not force:
        raise ConfigError(f"{run_dir} already has {' and '.join(existing)}; pass --force to "
                          "replace them")
    page = write_report(run_dir)
    Console().print(f"wrote {literal(page)} and {literal(page.parent / 'figures')}")
