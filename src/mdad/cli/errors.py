"""Turn user errors into one line on stderr and exit code 2, never a traceback."""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer

from mdad.errors import MdadError

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


def fail(message: str) -> typer.Exit:
    print(f"mdad: error: {visible(message)}", file=sys.stderr)
    return typer.Exit(code=2)


_CONTROL = {code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F) if code != 0x09}


def visible(text: str) -> str:
    """`text` with control characters (ANSI escapes, carriage returns, newlines) made
    visible as \\xNN, so text from the data cannot move the cursor or colour the
    terminal, and an error stays on one line."""
    return str(text).translate(_CONTROL)


def literal(text: object) -> str:
    """Text from the data, for rich: control characters visible, markup escaped."""
    from rich.markup import escape

    return escape(visible(str(text)))


def user_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Decorator for CLI commands: an `MdadError` becomes a one-line error, exit 2."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except MdadError as exc:
            raise fail(as_options(str(exc), exc.parameters)) from None
        except MemoryError:
            raise fail("out of memory: this machine cannot hold the work asked for; ask "
                       "for less (fewer --runs, --resamples, --sizes or --models)") from None
        except OSError as exc:  # a file the command could not read or write
            where = f"{exc.filename}: " if exc.filename else ""
            raise fail(f"{where}{exc.strerror or exc}; check the path, its permissions and "
                       "the free space") from None

    return wrapper


# Python parameter names whose option is not simply --name-with-dashes.
OPTION_NAMES = {
    "n_runs": "--runs",
    "n_targets": "--targets",
    "n_resamples": "--resamples",
    "n_models": "--models",
    "n_workers": "--workers",
    "out_dir": "--out",
    "allow_other_version": "--allow-other-data-version",
    "study_dir": "--run",
}


def option_name(parameter: str) -> str:
    """The CLI option of a library parameter: n_runs -> --runs, data_seed -> --data-seed."""
    return OPTION_NAMES.get(parameter, "--" + parameter.replace("_", "-"))


# A quoted value ('my model', "it's") or a path (/data/model/x.csv): never rewritten.
# An apostrophe after a letter (study_dir's) opens no quote.
_VERBATIM = re.compile(r"""(?<!\w)'[^']*'(?!\w)|(?<!\w)"[^"]*"(?!\w)|\S*[/\\]\S*""")


def as_options(message: str, parameters: tuple[str, ...]) -> str:
    """`message` with each of `parameters`, where it stands as a word, named as its CLI
    option; a count before it ("300 sources") marks the plain noun, and quoted values
    and paths are the user's own words: those are left as they are."""
    pieces, start = [], 0
    for verbatim in _VERBATIM.finditer(message):
        pieces += [_named(message[start:verbatim.start()], parameters), verbatim.group()]
        start = verbatim.end()
    return "".join([*pieces, _named(message[start:], parameters)])


def _named(text: str, parameters: tuple[str, ...]) -> str:
    for parameter in parameters:
        option = option_name(parameter)
        text = re.sub(rf"(?<![\w-])(?<!\d ){re.escape(parameter)}(?![\w-])",
                      lambda _, option=option: option, text)
    return text


def split_list(text: str, option: str) -> tuple[str, ...]:
    """'a, b' -> ('a', 'b'), or a ConfigError naming the option when it is empty or has
    an empty entry ('a,,b', 'a,'), which may be a value lost in typing."""
    from mdad.errors import ConfigError

    if not text.strip():
        raise ConfigError(f"{option} is empty; give one value or more, separated by commas")
    parts = tuple(part.strip() for part in text.split(","))
    if "" in parts:
        raise ConfigError(f"{option} {text!r}: entry {parts.index('') + 1} is empty; "
                          "separate the values by single commas, with none at the ends")
    return parts


def parse_int_list(text: str, option: str) -> tuple[int, ...]:
    """'10,25,50' -> (10, 25, 50), or a ConfigError naming the option."""
    return _parse_list(text, option, int, "whole numbers")


def parse_float_list(text: str, option: str) -> tuple[float, ...]:
    """'0.02,0.04' -> (0.02, 0.04), or a ConfigError naming the option."""
    return _parse_list(text, option, float, "numbers")


def _parse_list(text: str, option: str, kind: Callable[[str], T], what: str
                ) -> tuple[T, ...]:
    """`text` split by `split_list`, each entry read by `kind`; a ConfigError naming the
    option says it takes `what` when an entry is not one."""
    from mdad.errors import ConfigError

    parts = split_list(text, option)
    try:
        return tuple(kind(part) for part in parts)
    except ValueError:
        raise ConfigError(f"{option} takes {what} separated by commas; got {text!r}"
                          ) from None


def available_cores() -> int:
    """CPU cores this process may use."""
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def literal_console(**options: object):
    """A rich console for lines that carry text from the data (model names, paths):
    no markup, no highlighting, control characters made visible."""
    from rich.console import Console

    class LiteralConsole(Console):
        def print(self, *objects: object, **kwargs: object) -> None:  # type: ignore[override]
            super().print(*(visible(o) if isinstance(o, str) else o for o in objects),
                          **kwargs)

    return LiteralConsole(markup=False, highlight=False, **options)
