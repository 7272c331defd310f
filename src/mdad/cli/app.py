"""The `mdad` command.

Every command module imports only typer, rich, the standard library and light mdad
constants at top level; the libraries a command needs load inside it, so `mdad --help`
and each command start fast.
"""

from __future__ import annotations

from typing import Annotated

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


def _print_version(value: bool) -> None:
    if value:
        from mdad import __version__

        typer.echo(f"mdad {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option(
        "--version", help="Print the version and exit.", is_eager=True,
        callback=_print_version)] = False,
) -> None:
    """How reliable is your micro-benchmark? MDAD for language-model evaluation."""


app.command("run")(run)
app.command("methods")(methods)
app.command("report")(report)
for _command in (plan, select, estimate, compare):
    app.command(_command.__name__)(_command)
app.add_typer(data_cmd.app, name="data")


def _show_flags_as_flags(command) -> None:
    """Typer's help writes <bool> after flags (--json, --help); a flag takes no value."""
    help_option = command.get_help_option(typer.Context(command))
    for param in [*command.params, help_option]:
        if getattr(param, "is_flag", False):
            param.metavar = ""
    for sub in getattr(command, "commands", {}).values():
        _show_flags_as_flags(sub)


def main() -> None:
    command = typer.main.get_command(app)
    _show_flags_as_flags(command)
    command(prog_name="mdad")


if __name__ == "__main__":
    main()
