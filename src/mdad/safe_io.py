"""Writing files safely: no planted link followed, no half-written file, one writer at a
time, nothing named by the data outside the folder it belongs in.

Every file `mdad` writes goes through `atomic_write`: a temporary file with a unique
name, created exclusively (``O_EXCL``; a symbolic link in its place is never followed),
flushed to disk, then renamed over the target, which is replaced (a link there is
replaced, never written through). Temporaries and staging folders carry their process
id, so that a later run removes those a killed one left, and never a live writer's
(`remove_stale_temporaries`, `remove_stale_staging`).
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import stat
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from mdad.errors import ConfigError, DataError

TEMP_SUFFIX = ".mdad-tmp"
STAGING = "mdad-staging-"  # marks the folders mdad stages a whole folder in
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "'")
# mkstemp's and mkdtemp's random part: 8 of these characters
_RANDOM = r"[a-z0-9_]{8}"
_UMASK_LOCK = threading.Lock()


def _umask() -> int:
    """The process's umask, read without changing it where Linux tells it: setting it
    to read it races every thread that creates a file meanwhile (the pull's workers)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    with _UMASK_LOCK:  # elsewhere: private for the instant it is read, never open
        umask = os.umask(0o077)
        os.umask(umask)
    return umask


def file_mode() -> int:
    """The mode a new file gets under the process's umask (0o644 under umask 022):
    `tempfile` makes its files private (0o600), which a written result should not be."""
    return 0o666 & ~_umask()


def folder_mode() -> int:
    """The mode `mkdir` gives a folder under the process's umask (0o755 under 022)."""
    return 0o777 & ~_umask()


def process_alive(pid: int) -> bool:
    """Whether process `pid` exists (this one included; another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def make_staging(target: str | Path) -> Path:
    """A new, unique folder beside `target` to build it in before renaming it into
    place: ``.<name>.mdad-staging-<pid>-<random>``, with a folder's usual mode. The
    process id in its name lets `remove_stale_staging` tell a killed writer's leftover
    from a live one's work."""
    target = Path(target)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.{STAGING}{os.getpid()}-",
                                    dir=target.parent))
    # mkdtemp makes it private, the result is not; by descriptor, so that a link swapped
    # in at its name is not what gets the mode
    descriptor = os.open(staging, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        os.fchmod(descriptor, folder_mode())
    finally:
        os.close(descriptor)
    return staging


def remove_stale_staging(target: str | Path) -> list[Path]:
    """Remove the staging folders (`make_staging`) of `target` whose process has
    ended, and those of mdad before it named the process (``.<name>.mdad-staging-
    <random>``). Nothing else, and never through a link. Returns what was removed."""
    target = Path(target)
    pattern = re.compile(rf"^\.{re.escape(target.name)}\.{STAGING}(?:(\d+)-)?{_RANDOM}$")
    removed: list[Path] = []
    if not target.parent.is_dir():
        return removed
    for entry in target.parent.iterdir():
        match = pattern.match(entry.name)
        if match is None or (match[1] and process_alive(int(match[1]))):
            continue
        if entry.is_symlink():
            entry.unlink(missing_ok=True)  # the link goes, never what it points to
        elif entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            continue
        removed.append(entry)
    return removed


def atomic_write(path: str | Path, content: bytes | Callable[[BinaryIO], None]) -> None:
    """Write `content` (bytes, or a function that writes to a binary handle) to `path`
    through a unique temporary file beside it, renamed into place.

    The file appears complete or not at all; a link at `path` is replaced, not followed;
    the temporary is removed on any failure, Ctrl-C included.

    Raises
    ------
    OSError
        Naming `path`, not the temporary (a full disk: ENOSPC).
    """
    path = Path(path)
    # the process id in the name: `remove_stale_temporaries` spares a live writer's
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{os.getpid()}.",
                                         suffix=TEMP_SUFFIX)
    try:
        with os.fdopen(handle, "wb") as out:
            if callable(content):
                content(out)
            else:
                out.write(content)
            out.flush()
            os.fsync(out.fileno())
            os.fchmod(out.fileno(), file_mode())  # by descriptor: no name to swap
        os.replace(temporary, path)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def remove_stale_temporaries(folder: str | Path, name: str | None = None) -> list[Path]:
    """Remove the temporaries `atomic_write` left in `folder` (of file `name` only, if
    given) when a run was killed: ``.<name>.<pid>.<random>.mdad-tmp`` of a process that
    has ended (or without a pid, as mdad wrote them before it named the process). A live
    writer's are spared; links are removed, never followed. Returns what went."""
    folder = Path(folder)
    named = re.escape(name) if name else ".+?"  # the shortest: a pid is read as one
    pattern = re.compile(rf"^\.{named}\.(?:(\d+)\.)?{_RANDOM}{re.escape(TEMP_SUFFIX)}$")
    removed = []
    for path in folder.iterdir():
        match = pattern.match(path.name)
        if match is None or (match[1] and process_alive(int(match[1]))):
            continue
        if path.is_symlink() or path.is_file():
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


class FileLock:
    """An exclusive, non-blocking lock on `path` (a lock file, created if missing) for
    as long as the holder lives: the kernel releases it when the process ends, however
    it ends, so a killed writer never leaves the folder locked.

    `what` says what the lock guards, for the error a second writer gets.
    """

    def __init__(self, path: str | Path, what: str) -> None:
        self.path = Path(path)
        self.what = what
        self._descriptor: int | None = None

    def acquire(self) -> FileLock:
        """Take the lock, or stop at once.

        Raises
        ------
        ConfigError
            When another process holds it (naming its pid), or the lock file is a link,
            folder, pipe or device.
        """
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(
            os, "O_NONBLOCK", 0)  # a planted pipe must not block the open
        try:
            descriptor = os.open(self.path, flags, 0o644)
        except OSError as exc:
            raise ConfigError(f"{self.path}: cannot open the lock file of {self.what} "
                              f"({exc.strerror}); remove it if it is a link, folder or "
                              "device") from None
        if not _is_regular(descriptor):
            os.close(descriptor)
            raise ConfigError(f"{self.path}: the lock file of {self.what} is not a regular "
                              "file; remove it")
        if os.fstat(descriptor).st_nlink != 1:  # a hard link: the pid would overwrite it
            os.close(descriptor)
            raise ConfigError(f"{self.path}: the lock file of {self.what} has other names "
                              "(a hard link); remove it")
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            owner = os.pread(descriptor, 32, 0).decode("ascii", "replace").strip()
            os.close(descriptor)
            raise ConfigError(f"{self.what} is in use by process {owner or '(unknown)'} "
                              f"(lock {self.path}); wait for it to finish, or stop it "
                              "and try again") from None
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{os.getpid()}\n".encode("ascii"), 0)
        self._descriptor = descriptor
        return self

    def release(self) -> None:
        if self._descriptor is not None:
            os.close(self._descriptor)  # closing releases the lock
            self._descriptor = None

    def __enter__(self) -> FileLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _is_regular(descriptor: int) -> bool:
    return stat.S_ISREG(os.fstat(descriptor).st_mode)


# The Hugging Face Hub's repo-id grammar: an optional namespace and a name, each of
# letters, digits, '-', '_' and '.', at most 96 characters, no '--' or '..', not
# starting or ending with '-' or '.'.
_HUB_PART = re.compile(r"^(?!.*(--|\.\.))[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?$")


def check_hub_id(repo_id: str, *, where: str) -> str:
    """`repo_id` if it is a valid Hub repo id (``namespace/name``), so that a name built
    from it is one path component; `where` says where the id came from.

    Raises
    ------
    DataError
        Naming the id and where it came from.
    """
    parts = repo_id.split("/")
    if len(parts) != 2 or not all(_HUB_PART.match(part) for part in parts):
        raise DataError(f"{where}: {repo_id!r} is not a Hugging Face Hub repo id "
                        "(namespace/name, each of letters, digits, '-', '_' and '.', "
                        "no '..'); correct or remove it")
    return repo_id


def safe_component(name: str, *, where: str) -> str:
    """`name` if it can be one file name in a folder: not empty, not '.' or '..', no
    '/', '\\\\' or NUL, at most 200 bytes.

    Raises
    ------
    DataError
        Naming it and `where` it came from.
    """
    if (not name or name in (".", "..") or any(c in name for c in "/\\\0")
            or len(name.encode("utf-8", "surrogateescape")) > 200):
        raise DataError(f"{where}: {name!r} cannot be a file name (empty, '.', '..', a "
                        "separator or NUL, or over 200 bytes); correct it")
    return name


def csv_text(value: object) -> object:
    """A text cell made safe for a spreadsheet (OWASP's rule against formula injection):
    a string that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return
    gets a leading ``'``. So does one that starts with ``'``, so that `csv_text_read`
    gives back every string exactly. Other values pass as they are."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def csv_text_read(value: object) -> object:
    """The inverse of `csv_text`, for the text columns of a CSV `mdad` wrote."""
    if isinstance(value, str) and value.startswith("'"):
        return value[1:]
    return value


__all__ = ["STAGING", "TEMP_SUFFIX", "FileLock", "atomic_write", "check_hub_id", "csv_text",
           "csv_text_read", "file_mode", "folder_mode", "make_staging", "process_alive",
           "remove_stale_staging", "remove_stale_temporaries", "safe_component"]
