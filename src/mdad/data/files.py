"""File helpers shared by the loaders."""

from __future__ import annotations

import hashlib
from pathlib import Path


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def files_sha256(paths: list[Path], root: Path) -> str:
    """One sha256 over several files: their paths relative to `root` and their digests."""
    return digests_sha256({path: file_sha256(path) for path in paths}, root)


def digests_sha256(digests: dict[Path, str], root: Path) -> str:
    """`files_sha256` of files whose digests are known (hashed as they were read)."""
    digest = hashlib.sha256()
    for path in sorted(digests):
        digest.update(f"{path.relative_to(root).as_posix()}\0{digests[path]}\n".encode())
    return digest.hexdigest()


def listed(names: list[str], shown: int = 5) -> str:
    """The first `shown` of `names`, comma separated, and how many more there are: a
    message names what was left out without growing with it."""
    more = f", ... ({len(names) - shown} more)" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def read_name_list(path: str | Path, *, option: str, what: str = "models"
                   ) -> tuple[str, ...]:
    """Names from a UTF-8 text file (a byte-order mark allowed), one per line; blank
    lines and '#' comments are skipped, a name listed twice is refused. `what` is what
    the names are ("models", "item ids"), for the error message.

    Raises
    ------
    DataError
        As `numbered_names`.
    """
    return tuple(name for _, name in numbered_names(path, option=option, what=what))


def numbered_names(path: str | Path, *, option: str, what: str) -> list[tuple[int, str]]:
    """(line number, name) of each name in a file read as `read_name_list` reads it:
    UTF-8 (a byte-order mark allowed), one name a line, numbered from 1 as an editor
    shows them; blank lines and '#' comments are skipped (their numbers too).

    Raises
    ------
    DataError
        Naming `option` and `path`: not a regular file, not UTF-8 text, no name in it,
        or a name listed twice (both lines given).
    """
    from mdad.errors import DataError

    path = Path(path)
    check_regular_file(path, option=option, fix=f"pass a text file of {what}, one per line")
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{option} {path}: cannot read it as text ({exc})") from None
    numbered = [(number, s) for number, line in enumerate(lines, start=1)
                if (s := line.split("#", 1)[0].strip())]
    if not numbered:
        raise DataError(f"{option} {path}: the file lists no {what} (one per line; blank "
                        "lines and # comments are skipped)")
    first: dict[str, int] = {}
    for number, name in numbered:
        if name in first:
            raise DataError(f"{option} {path}: line {number} lists {name!r} again (first on "
                            f"line {first[name]}); list each once")
        first[name] = number
    return numbered


def check_regular_file(path: Path, *, option: str = "", fix: str = "pass a file") -> None:
    """Refuse, as a DataError naming `path` (after `option`, the flag that gave it) and
    ending with `fix`, anything but a regular file: reading a pipe would wait forever
    for a writer."""
    if Path(path).is_file():
        return
    from mdad.errors import DataError

    raise DataError(f"{option + ' ' if option else ''}{path}: {not_a_file(Path(path))}; {fix}")


def not_a_file(path: Path) -> str:
    """What `path`, which is no regular file, is instead: for an error message."""
    return "a folder, not a file" if path.is_dir() else missing_reason(path)


def missing_reason(path: Path) -> str:
    """Why `path`, which is neither a regular file nor a folder, cannot be read: for
    an error message after the path."""
    if path.is_symlink() and not path.exists():
        return "a symbolic link to nothing (its target is missing, or links loop)"
    if path.exists():
        return "not a regular file or folder (a device, pipe or socket)"
    return "no such file or directory"
