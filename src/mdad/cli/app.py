"""The `mdad` command.

Every command module imports only typer, rich, the standard library and light mdad
constants at top level; the libraries a command needs load inside it, so `mdad --help`
and each command start fast.
"""

from __future__ import annotations

import atexit
import importlib
import logging
import os
import sys
from typing import Annotated

import typer

# command -> (module, attribute): a function, or the Typer app of a command group
COMMANDS = {
    "run": ("mdad.cli.run_cmd", "run"),
    "methods": ("mdad.cli.methods_cmd", "methods"),
    "report": ("mdad.cli.report_cmd", "report"),
    "plan": ("mdad.cli.plan_cmd", "plan"),
    "select": ("mdad.cli.select_cmd", "select"),
    "estimate": ("mdad.cli.estimate_cmd", "estimate"),
    "compare": ("mdad.cli.estimate_cmd", "compare"),
    "adaptive": ("mdad.cli.adaptive_cmd", "app"),
    "data": ("mdad.cli.data_cmd", "app"),
}


def _print_version(value: bool) -> None:
    if value:
        from mdad._version import version

        typer.echo(f"mdad {version()}")
        raise typer.Exit()


def _root(
    version: Annotated[bool, typer.Option(
        "--version", help="Print the version and exit.", is_eager=True,
        callback=_print_version)] = False,
) -> None:
    """How reliable is your micro-benchmark? MDAD for language-model evaluation."""


def build_app(only: str | None = None) -> typer.Typer:
    """The `mdad` app with every command, or with command `only` alone (none for ""):
    running one command imports that command's module only."""
    app = typer.Typer(
        name="mdad",
        help="How reliable is your micro-benchmark? MDAD for language-model evaluation.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
        rich_markup_mode=None,  # plain help: typer's rich help costs 30 ms at every start
    )
    app.callback()(_root)
    for name, (module, attribute) in COMMANDS.items():
        if only is None or name == only:
            target = getattr(importlib.import_module(module), attribute)
            if isinstance(target, typer.Typer):
                app.add_typer(target, name=name)
            else:
                app.command(name)(target)
    return app


def __getattr__(name: str) -> object:
    if name == "app":  # the whole app, built when asked for (tests drive it)
        return build_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _show_flags_as_flags(command) -> None:
    """Typer's help writes <bool> after flags (--json, --help); a flag takes no value."""
    help_option = command.get_help_option(typer.Context(command))
    for param in [*command.params, help_option]:
        if getattr(param, "is_flag", False):
            param.metavar = ""
    for sub in getattr(command, "commands", {}).values():
        _show_flags_as_flags(sub)


def main() -> None:
    """The `mdad` console script: `_main`, with Ctrl-C, SIGTERM and a resource running
    out (memory, threads) turned into one line wherever they strike, and an interrupted
    command ending at once."""
    from mdad.cli import errors

    errors.reset_interrupt_state()  # a fresh line, if main runs twice in one process
    errors.stop_on_signals()  # SIGTERM takes Ctrl-C's path: cleanup, one line
    logging.raiseExceptions = False  # a handler failing (no memory) prints no half-traceback
    logging.getLogger().addFilter(_not_hashlib_fallback)
    # multiprocessing's resource tracker, a process of its own started with these
    # options, removes the semaphores a worker terminated on Ctrl-C left, and warns of
    # each in two lines: noise after the interrupted line
    sys.warnoptions.append("ignore:resource_tracker:UserWarning")
    # numpy asks the kernel for huge pages for its large arrays; where the kernel then
    # compacts memory to find them (transparent huge pages' "madvise" defrag, common),
    # a first touch of a few hundred MB stalls for seconds: Anchor Points' distance
    # matrices took twice as long (benchmarks/bench_hugepages.py). Read by numpy at its
    # import, here and in every worker this command starts; the user's setting wins.
    os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
    # Every fit and cell runs with one BLAS thread (threadpoolctl) and nothing else is
    # large enough to want more; OpenBLAS's own threads, started when a library loads,
    # made that load spin forever where memory ran short (an address-space limit), with
    # no Ctrl-C. The user's setting wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        _main()
    except SystemExit as done:
        if done.code not in (130, 143):
            raise
        code = done.code
    except (KeyboardInterrupt, errors.Terminated) as stop:  # before a command ran
        code = errors.interrupted(stop).exit_code
    except Exception as exc:
        try:
            message = errors.resource_message(exc)
        except MemoryError:  # memory ran out again, reading the exception
            message = "out of memory (MemoryError); free some memory, then run it again"
        if message is None:
            raise
        if not errors.failed():  # else memory ran out again after the command's own line
            try:
                errors.print_error(message)
            except MemoryError:
                pass  # the exit code still says it
        raise SystemExit(2) from None
    # Interrupted (130, 143), its cleanup run: end now rather than wait for threads still
    # in a fit or a read (Python joins them at exit, which took up to a minute). The
    # atexit functions still run: multiprocessing's release its semaphores. No public
    # call runs them without that join first (sys.exit joins the threads, then runs
    # them; a timer's os._exit would cut the join short and skip them), so this uses
    # atexit's private _run_exitfuncs; a Python without it takes the public way,
    # sys.exit, which is slower (the threads' join) but ends all the same.
    run_exit_functions = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_functions is None:
        raise SystemExit(code)
    run_exit_functions()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _not_hashlib_fallback(record: logging.LogRecord) -> bool:
    """False for hashlib's traceback when OpenSSL cannot be loaded (low memory): it then
    uses its built-in hashes, and the command goes on or fails in one line of its own."""
    return not (record.name == "root" and str(record.msg).startswith("code for hash"))


def _main() -> None:
    # the first word that is not an option names the command (the root has only flags)
    name = next((arg for arg in sys.argv[1:] if not arg.startswith("-")), None)
    if name is None and "--version" in sys.argv[1:]:
        name = ""  # --version is eager: it needs no command
    command = typer.main.get_command(build_app(name if name in COMMANDS or name == "" else None))
    _show_flags_as_flags(command)
    # click's exceptions, wherever this typer takes click from (it vendors it from 0.27)
    click_errors = sys.modules[typer.BadParameter.__module__]
    try:
        code = command.main(prog_name="mdad", standalone_mode=False)
    except getattr(click_errors, "NoArgsIsHelpError", ()) as error:  # a group alone: its help
        error.show()
        raise SystemExit(error.exit_code) from None
    except click_errors.UsageError as error:  # click's own is four lines: usage, hint, blank, error
        from mdad.cli.errors import fail

        where = f"; see '{error.ctx.command_path} --help'" if error.ctx else ""
        raise SystemExit(fail(f"{error.format_message().rstrip('.')}{where}").exit_code
                         ) from None
    except click_errors.ClickException as error:
        error.show()
        raise SystemExit(error.exit_code) from None
    except typer.Abort:
        print("Aborted!", file=sys.stderr)
        raise SystemExit(1) from None
    # without standalone mode, click returns an Exit's code (--help: 0) or the command's
    raise SystemExit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
