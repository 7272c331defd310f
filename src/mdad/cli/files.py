"""Files the commands write: checked before any work, never replaced without --force,
written whole or not at all."""

from __future__ import annotations

import tempfile
from pathlib import Path

from mdad.errors import ConfigError


def check_new_file(path: Path, *, option: str, force: bool = False,
                   example: str = "microbenchmark.json", folder_fix: str | None = None
                   ) -> None:
    """Refuse, before any work, a file that exists (unless `force`), is a folder, a
    device, a pipe or a link to nothing, or cannot be written where it is asked for. A
    folder's error suggests `example` in it, or says `folder_fix` for a file named
    after another, whose name the user does not give."""
    path = Path(path)
    if path.is_dir():
        fix = folder_fix or f"give a file name, e.g. {path / example}"
        raise ConfigError(f"{option} {path} is a folder; {fix}")
    if (path.is_symlink() and not path.exists()) or (path.exists() and not path.is_file()):
        # --force would put a file in place of a device or pipe (/dev/null), or a link
        from mdad.data.files import missing_reason

        raise ConfigError(f"{option} {path}: {missing_reason(path)}; choose a file name")
    if path.exists() and not force:
        raise ConfigError(f"{option} {path} already exists; choose another name, or pass "
                          "--force to replace it")
    if not path.parent.is_dir():
        if path.parent.exists():
            raise ConfigError(f"{option} {path}: {path.parent} is a file, not a folder; "
                              "choose a name in a folder")
        raise ConfigError(f"{option} {path}: the folder {path.parent} does not exist; "
                          "create it first")
    try:
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}."):
            pass
    except OSError as exc:
        raise ConfigError(f"{option} {path}: cannot write there ({exc.strerror}); choose a "
                          "folder you can write to") from None


# Files `write_text` finished in this process, for what an interrupt says was kept.
WRITTEN: list[Path] = []


def write_text(path: Path, text: str) -> None:
    """Write `text` to `path` through `mdad.safe_io.atomic_write` (a unique exclusive
    temporary renamed into place; a link at `path` is replaced, not followed; the
    file's mode is the umask's), after removing the temporaries a killed writer of the
    same file left.

    Raises
    ------
    OSError
        Naming `path` (a full disk: ENOSPC).
    """
    from mdad.safe_io import atomic_write, remove_stale_temporaries

    path = Path(path)
    # only this file's: a concurrent writer of the same file is the user's own race
    remove_stale_temporaries(path.parent, path.name)
    atomic_write(path, text.encode("utf-8"))
    WRITTEN.append(path)
