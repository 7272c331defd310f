"""Files the commands write: checked before any work, never replaced without --force,
written whole or not at all."""

from __future__ import annotations

import os
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
        raise ConfigError(f"{option} {path}: the folder {path.parent} does not exist; "
                          "create it first")
    try:
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}."):
            pass
    except OSError as exc:
        raise ConfigError(f"{option} {path}: cannot write there ({exc.strerror}); choose a "
                          "folder you can write to") from None


def write_text(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file renamed into place."""
    path = Path(path)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        try:
            os.replace(temporary, path)
        except OSError as exc:  # name the file asked for, not the temporary one
            raise OSError(exc.errno, exc.strerror, str(path)) from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
