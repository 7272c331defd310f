"""The `mdad` command."""

from __future__ import annotations

import typer

from mdad.cli import data_cmd
from mdad.cli.estimate_cmd import compare, estimate
from mdad.cli.methods_cmd import methods
from mdad.cli.plan_cmd import plan
from mdad.cli.report_cmd import report
from mdad.cli.run_cmd import run
from mdad.cli.select_cmd import select

app = typer.Typer(
    name="mdad",
    help="How reliable is your micro-benchmark? MDAD for language-model evaluation.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.command("run")(run)
app.command("methods")(methods)
app.command("report")(report)
for _command in (plan, select, estimate, compare):
    app.command(_command.__name__)(_command)
app.add_typer(data_cmd.app, name="data")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
