"""Turn user errors into one line on stderr and exit code 2, never a traceback."""

from __future__ import annotations

import functools
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

import typer

from mdad.cli.limits import MIN_MB, memory_floor_line
from mdad.errors import MdadError

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


def print_error(message: str) -> None:
    """The command's one ``mdad: error:`` line, on stderr."""
    print(f"mdad: error: {visible(message)}", file=sys.stderr)
    _state["failed"] = True


def fail(message: str) -> typer.Exit:
    """`print_error`, and the exit with code 2 to raise."""
    print_error(message)
    return typer.Exit(code=2)


def failed() -> bool:
    """Whether the running command printed its ``mdad: error:`` line."""
    return bool(_state["failed"])


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


class Terminated(BaseException):
    """SIGTERM, raised in the main thread (see `stop_on_signals`) so that a command stops
    as on Ctrl-C: its cleanup runs, and `user_errors` prints one line."""


def raise_terminated(signum: int, frame: object) -> None:
    """SIGTERM's handler (`signal.signal(signal.SIGTERM, raise_terminated)`): raise
    `Terminated` in the main thread, noting that it heard the signal."""
    _state["heard"] = True
    raise Terminated()


def _raise_interrupt(signum: int, frame: object) -> None:
    """Ctrl-C as Python's own handler, noting that the main thread heard it."""
    _state["heard"] = True
    raise KeyboardInterrupt()


# Seconds the main thread has, after Ctrl-C or SIGTERM, to clean up and end by itself.
INTERRUPT_GRACE_SECONDS = 1.5
# The running command's `kept`; whether its interrupted line was printed; whether the main
# thread heard the signal (raised it: its cleanup is under way); how long a command
# whose cleanup is under way may take in all (`allow_cleanup`), in seconds from the
# signal; and whether its error line was printed (`print_error`).
_state: dict[str, Any] = {"kept": None, "shown": False, "heard": False,
                          "cleanup": INTERRUPT_GRACE_SECONDS, "failed": False}


def reset_interrupt_state(kept: str | None = None) -> None:
    """Start a command afresh: its interrupted and error lines not yet printed (one
    process may run several commands: typer's test runner, the API), `kept` for the
    watchdog, and the usual cleanup bound."""
    _state.update(kept=kept, shown=False, heard=False, cleanup=INTERRUPT_GRACE_SECONDS,
                  failed=False)


def allow_cleanup(seconds: float) -> None:
    """Let the running command's cleanup take up to `seconds` after Ctrl-C or SIGTERM
    (instead of `INTERRUPT_GRACE_SECONDS`), when the main thread heard the signal, i.e.
    it is running that cleanup; a main thread stuck where Python never acts on a signal
    still ends after the grace. For `mdad run`, which stops its workers (up to 10 s
    each) and saves what they finished before it prints its line."""
    _state["cleanup"] = max(float(seconds), INTERRUPT_GRACE_SECONDS)


def stop_on_signals(grace: float = INTERRUPT_GRACE_SECONDS) -> None:
    """Make SIGTERM raise `Terminated` in the main thread, as Ctrl-C raises
    KeyboardInterrupt (call from the main thread, once); and end the process `grace`
    seconds after either, with the ``interrupted:`` line, if the main thread has not
    ended by then: Python acts on a signal only between bytecodes, so a library call
    that waits forever (pyarrow's reader when it cannot start a thread) would ignore
    both. Cleanup skipped so is a killed command's, which the next one undoes. A
    command that heard the signal and needs longer for its cleanup says so with
    `allow_cleanup`. A stop raised where Python cannot raise it (a weakref callback) is
    sent again (`_interruption_again`)."""
    signal.signal(signal.SIGTERM, raise_terminated)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not ignored
        signal.signal(signal.SIGINT, _raise_interrupt)
    sys.unraisablehook = functools.partial(_interruption_again, sys.unraisablehook)
    try:
        read, write = os.pipe()
        os.set_blocking(write, False)
        # the C-level handler writes each signal's number here at once, held main or not
        signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        threading.Thread(target=_watch, args=(read, grace), daemon=True,
                         name="mdad-interrupt-watchdog").start()
    except (OSError, RuntimeError, ValueError):  # no thread or pipe to spare: no watchdog
        pass


def _interruption_again(previous: Callable[[Any], object], unraisable: Any) -> None:
    """`sys.unraisablehook`: a handler that raised where Python cannot raise (a weakref
    callback, such as the import system's when the signal lands in an import) would
    print a traceback and lose the stop; instead the signal is sent again, and lands in
    ordinary code. Anything else goes to the `previous` hook."""
    stop = unraisable.exc_value
    if not isinstance(stop, KeyboardInterrupt | Terminated):
        previous(unraisable)
        return
    import _thread

    # from another thread, a moment later: sent from here, the handler would run at
    # once, inside this hook; should it land in a callback again, it comes back here
    again = signal.SIGINT if isinstance(stop, KeyboardInterrupt) else signal.SIGTERM
    timer = threading.Timer(0.05, _thread.interrupt_main, args=(again,))
    timer.daemon = True
    timer.start()


def _watch(descriptor: int, grace: float) -> None:
    """Wait for SIGINT or SIGTERM on the wakeup pipe; `grace` seconds later, end, unless
    the main thread heard the signal and its command allowed a longer cleanup
    (`allow_cleanup`): then end when that ends, or once the command printed its line."""
    wanted = {int(signal.SIGINT), int(signal.SIGTERM)}
    while not (got := [n for n in os.read(descriptor, 64) if n in wanted]):
        pass
    start = time.monotonic()
    time.sleep(grace)
    extended = False
    while (not _state["shown"] and _state["heard"]
           and time.monotonic() - start < _state["cleanup"]):
        extended = True  # the command's cleanup is under way: its line will follow
        time.sleep(0.05)
    if extended and _state["shown"]:  # printed late: the command ends by itself, let it
        time.sleep(grace)
    stop = KeyboardInterrupt() if got[0] == signal.SIGINT else Terminated()
    code = interrupted(stop, _state["kept"]).exit_code
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)


# Options that make a command's work, and so its memory, smaller, in the order named.
SMALLER_WORK = ("runs", "resamples", "sizes", "sources", "targets", "models", "size",
                "budget", "workers", "jobs")


def smaller_options(options: dict[str, object]) -> list[str]:
    """The options among `SMALLER_WORK` the command was given a value of (its defaults
    included; an option left unset, None, is one the work does not depend on)."""
    return [option_name(name) for name in SMALLER_WORK
            if options.get(name) is not None and options.get(name) is not False]


def interrupted(stop: BaseException, kept: str | None = None) -> typer.Exit:
    """Print ``interrupted: <what was kept>; <how to go on>`` for Ctrl-C or SIGTERM and
    return the exit (130 for Ctrl-C, 143 for SIGTERM, as a shell reports them)."""
    if kept is None:
        from mdad.cli.files import WRITTEN

        done = (f"only {' and '.join(map(str, WRITTEN))} "
                f"{'was' if len(WRITTEN) == 1 else 'were'} written" if WRITTEN
                else "nothing was written")
        kept = f"{done} (mdad writes each file whole or not at all); run it again"
    if not _state["shown"]:  # once, whether the command or the watchdog gets here first
        _state["shown"] = True
        print(f"interrupted: {visible(kept)}", file=sys.stderr, flush=True)
    return typer.Exit(code=130 if isinstance(stop, KeyboardInterrupt) else 143)


def warn_broken_plugins() -> None:
    """One ``warning:`` line on stderr per method plugin that failed to load, when the
    command consulted the method registry (its entry points were read): the command
    went on without it, and the line says what failed and how to fix it."""
    registry = sys.modules.get("mdad.selection.registry")
    if registry is None or not registry.METHODS.plugins_loaded:
        return
    broken = registry.METHODS.broken
    if broken:
        from rich.console import Console

        err = Console(stderr=True, highlight=False, soft_wrap=True)
        for error in broken.values():
            err.print(f"[yellow]warning:[/] {literal(error)}")


def user_errors(command: Callable[P, R] | None = None, *, kept: str | None = None,
                plugin_warnings: bool = True, needs_mb: int = MIN_MB) -> Any:
    """Decorator for CLI commands (``@user_errors`` or ``@user_errors(kept=...)``): an
    `MdadError`, a resource running out (memory, threads, a worker process, disk space,
    open files) or a file that cannot be read or written becomes one line and exit 2;
    Ctrl-C and SIGTERM (see `stop_on_signals`) become one line ``interrupted: ...`` and
    exit 130 / 143. Never a traceback for these.

    A command that succeeds after consulting the method registry warns, one line each,
    of the method plugins that failed to load (`warn_broken_plugins`), unless
    `plugin_warnings` is False (`mdad methods` lists them itself). A command that fails
    prints its one line only: a broken plugin it asked for is that line.

    `kept` says what an interrupt leaves and how to go on; by default, that no file is
    half written and which ones this command finished (see `mdad.cli.files.WRITTEN`).
    Out of memory, the advice names the command's own options that make its work
    smaller (see `smaller_options`), or only to free memory when it has none.

    Under a memory limit below `needs_mb` MB the command does not start: one line, exit
    2 (`mdad.cli.limits`); help has been answered by then.
    """
    if command is None:
        return functools.partial(user_errors, kept=kept, plugin_warnings=plugin_warnings,
                                 needs_mb=needs_mb)

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        if (short := memory_floor_line(needs_mb)) is not None:
            raise fail(short)
        # a fresh line per invocation; `kept` for the watchdog, which cannot know what
        # a resumable command saved
        reset_interrupt_state(kept if kept is not None or "resume" not in kwargs else (
            f"stopped before its own cleanup ended; what it finished is saved: continue "
            f"with: mdad {command.__name__} --resume "
            f"{kwargs.get('resume') or kwargs.get('out') or 'OUT_FOLDER'}"))
        try:
            result = command(*args, **kwargs)
        except typer.Exit as done:  # the command's own exit (a RuntimeError): as it is
            if plugin_warnings and done.exit_code == 0:
                warn_broken_plugins()
            raise
        except (KeyboardInterrupt, Terminated) as stop:
            raise interrupted(stop, kept) from None
        except MdadError as exc:
            raise fail(as_options(str(exc), exc.parameters)) from None
        except Exception as exc:
            message = resource_message(exc, smaller_options(kwargs))
            if message is None:
                raise  # a bug: its traceback is what a report needs
            raise fail(message) from None
        if plugin_warnings:
            warn_broken_plugins()
        return result

    return wrapper


# Messages of an ImportError or OSError that mean memory ran out while loading a library.
_NO_MEMORY_TEXT = ("failed to map segment", "cannot allocate memory", "cannot map",
                   "failed to allocate", "out of memory", "std::bad_alloc")
# What CPython says when a C function returned an error without setting an exception,
# from the evaluation loop and from a call (e.g. an import under an address-space
# limit); not its words for a module or slot that failed so, a broken extension's mark
_NO_EXCEPTION_SET = ("error return without exception set",
                     "returned NULL without setting an exception")


def resource_message(exc: BaseException, options: list[str] | tuple[str, ...] = ()
                     ) -> str | None:
    """One line for `exc` when it, or an exception it was raised from, is a resource
    running out or a file that failed: its cause, the file (if any), what to do, and
    how to go on (a note ``continue with: ...`` added to the exception, else "run it
    again"). None for any other exception.

    `options` are the command's options that make its work smaller (`smaller_options`).
    Pyarrow's errors are recognised by name, so that pyarrow is not imported to check.
    """
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 8:
        seen.append(current)
        line = _resource_line(current, options)
        if line is not None:
            notes = [n for c in seen for n in getattr(c, "__notes__", ())
                     if str(n).startswith("continue with: ")]
            return f"{line}, then {notes[0] if notes else 'run it again'}"
        current = current.__cause__ or current.__context__
    if isinstance(exc, OSError):  # a file the command could not read or write
        where = f"{exc.filename}: " if exc.filename else ""
        return (f"{where}{exc.strerror or exc}; check the path, its permissions and the "
                "free space")
    return None


def _resource_line(exc: BaseException, options: list[str] | tuple[str, ...]) -> str | None:
    """Cause and advice for one exception, or None when it is not a resource's."""
    import errno

    names = {cls.__name__ for cls in type(exc).__mro__}
    text = str(exc)
    where = f"{exc.filename}: " if isinstance(exc, OSError) and exc.filename else ""
    less = (f"ask for less (lower {_or(options)}) or free some memory (close other "
            "programs)" if options else "free some memory (close other programs)")
    if isinstance(exc, MemoryError) or "ArrowMemoryError" in names:
        return f"{where}out of memory ({type(exc).__name__}); {less}"
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)):
        return f"{where}{exc.strerror or 'no space left on device'}; free some space"
    if isinstance(exc, OSError) and exc.errno == errno.ENOMEM:
        return f"{where}out of memory ({exc.strerror}); {less}"
    if isinstance(exc, OSError) and exc.errno in (errno.EMFILE, errno.ENFILE):
        return (f"{where}too many open files ({exc.strerror}); raise the limit (ulimit -n) "
                "or close other programs")
    if isinstance(exc, ImportError | OSError) and any(
            t in text.lower() for t in _NO_MEMORY_TEXT):
        library = getattr(exc, "name", None) or "a library"
        return f"out of memory loading {library} ({visible(text)[:120]}); {less}"
    if isinstance(exc, SystemError) and any(t in text for t in _NO_EXCEPTION_SET):
        # a C extension whose allocation failed, and which set no MemoryError
        return (f"out of memory, most likely: a compiled library failed without saying "
                f"why ({visible(text)[:80]}), as they do when memory runs out (with memory "
                f"to spare, that library has a bug); {less}")
    if isinstance(exc, RuntimeError) and "can't start new thread" in text:
        return f"out of memory or threads: cannot start a thread; {less}"
    if "BrokenProcessPool" in names or "BrokenExecutor" in names:
        return ("a worker process ended abruptly (killed: the system kills processes so "
                f"when memory runs out); {less}")
    if "ArrowException" in names and any(
            t in text.lower() for t in ("memory", "alloc", "thread")):
        return f"out of memory in pyarrow ({visible(text)[:120]}); {less}"
    from mdad.errors import running_out

    if running_out(exc):  # what a reader re-raised as no fault of its file (pandas' C parser)
        return f"out of memory or threads ({visible(text)[:120]}); {less}"
    return None


def _or(options: list[str] | tuple[str, ...]) -> str:
    """'--a', '--a or --b', '--a, --b or --c'."""
    return options[0] if len(options) == 1 else f"{', '.join(options[:-1])} or {options[-1]}"


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


def literal_console(**options: object):
    """A rich console for lines that carry text from the data (model names, paths):
    no markup, no highlighting, control characters made visible."""
    from rich.console import Console

    class LiteralConsole(Console):
        def print(self, *objects: object, **kwargs: object) -> None:  # type: ignore[override]
            super().print(*(visible(o) if isinstance(o, str) else o for o in objects),
                          **kwargs)

    return LiteralConsole(markup=False, highlight=False, **options)
