"""Finished cells saved as they complete, so an interrupted study loses nothing.

A study's checkpoint folder holds the request that started it (`request.json`), per
unfinished run a log of its finished cells (a method at one size and source count),
and, once all cells of a run are done, one file for the run that replaces its log.
A cell is appended to its run's log as one checksummed record as soon as it is
done (a write the kernel keeps even after SIGKILL; a record cut short is dropped
when the log is read). Run files are written to a temporary name, flushed to disk
and renamed into place, so they exist complete or not at all: through
`mdad.safe_io.atomic_write` (a unique temporary, no planted link followed), whose
leftovers from a killed study the next one removes while it holds the folder's lock.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import zipfile
import zlib
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mdad.errors import ConfigError
from mdad.study.records import CellKey, CellOutput, RunAccuracies, RunOutput

if TYPE_CHECKING:
    from mdad.safe_io import FileLock

REQUEST = "request.json"
# A cell record: magic, owner (see `StudyCheckpoint.owner`), (method, size, sources),
# seconds, exposure (distinct items, top share), number of estimates, length of the
# notes' JSON; then the float64 estimates, the notes, and a CRC-32 of it all. Records of
# mdad before owners (MDC2) have no owner and are read as they are.
_MAGIC = b"MDC3"
_HEADER = struct.Struct("<4s16s3i3dII")
_LEGACY_MAGIC = b"MDC2"
_LEGACY_HEADER = struct.Struct("<4s3i3dII")
_CRC = struct.Struct("<I")
LOCK = "lock"
# Temporaries of mdad before safe_io: fixed names, removed like today's on lock.
_OLD_TEMPORARIES = (f".{REQUEST}.tmp", "study*-run*.tmp.npz")


def checkpoint_dir(study_dir: Path) -> Path:
    """Where the checkpoint of the study that will be written to `study_dir` lives: a
    hidden folder beside it."""
    study_dir = Path(study_dir)
    return study_dir.parent / f".{study_dir.name}.progress"


class StudyCheckpoint:
    """Saves and loads a study's finished cells and runs in `folder` (see the module
    docstring)."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self._lock: FileLock | None = None
        self._request_digest: bytes | None = None

    def owner(self, study: int, run: int) -> bytes:
        """16 bytes naming the request, study and run a saved file belongs to: a file
        copied in from another study's checkpoint, or renamed to another run, is
        refused on resume instead of being taken for this run's work."""
        digest = self._request_digest
        if digest is None:
            path = self.folder / REQUEST  # written once, by `start`: safe to keep
            digest = hashlib.sha256(path.read_bytes() if path.is_file() else b"").digest()
            self._request_digest = digest if path.is_file() else None
        return hashlib.sha256(digest + struct.pack("<ii", study, run)).digest()[:16]

    def _refuse_foreign(self, path: Path) -> ConfigError:
        return ConfigError(f"resume: {path} holds the work of another study or run (it was "
                           f"copied or renamed into {self.folder}); remove it, and its work "
                           "is recomputed", parameters=("resume",))

    def _refuse_not_a_file(self, path: Path, where: str) -> ConfigError:
        from mdad.data.files import not_a_file

        return ConfigError(f"resume: {path}: {not_a_file(path)}, {where}; "
                           "remove it, and its work is recomputed", parameters=("resume",))

    def lock(self) -> None:
        """Make this process the folder's only writer until it exits: a second study
        on the same folder stops at once, naming this one's process id. Then remove the
        temporaries a killed study left (only the lock's holder may: another writer's
        temporary is in use).

        Raises
        ------
        ConfigError
            When another process holds the lock, or the folder or its lock file is a
            link (never followed: the lock file is truncated), a pipe or a device.
        """
        from mdad.safe_io import FileLock

        if self.folder.is_symlink():
            raise ConfigError(f"{self.folder}: a link, where the study's checkpoint folder "
                              "goes; remove it")
        self.folder.mkdir(parents=True, exist_ok=True)
        self._lock = FileLock(self.folder / LOCK, f"the study checkpointed in {self.folder}"
                              ).acquire()
        self._remove_stale_temporaries()

    def _remove_stale_temporaries(self) -> list[Path]:
        """Remove the temporaries a killed study left (call while holding the lock):
        `atomic_write`'s, and the fixed-name ones of mdad before it. Links are
        removed, never followed."""
        from mdad.safe_io import remove_stale_temporaries

        removed = remove_stale_temporaries(self.folder)
        for pattern in _OLD_TEMPORARIES:
            for path in self.folder.glob(pattern):
                if path.is_symlink() or path.is_file():
                    path.unlink(missing_ok=True)
                    removed.append(path)
        return removed

    def unlock(self) -> None:
        """Let another process take the folder (e.g. a later --resume)."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def _path(self, study: int, run: int) -> Path:
        return self.folder / f"study{study:03d}-run{run:05d}.npz"

    def start(self, request: dict[str, Any]) -> None:
        """Create the folder and record the request, unless it already holds one."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / REQUEST
        if not path.exists():
            from mdad.safe_io import atomic_write

            atomic_write(path, (json.dumps(request, indent=1) + "\n").encode("utf-8"))

    def request(self) -> dict[str, Any]:
        """The saved request, as JSON.

        Raises
        ------
        ConfigError
            When there is none, or it cannot be read.
        """
        path = self.folder / REQUEST
        if path.exists() and not path.is_file():
            from mdad.data.files import not_a_file

            raise ConfigError(f"resume: {path}: {not_a_file(path)}, where the saved request "
                              f"goes; remove {self.folder} and start a new study",
                              parameters=("resume",))
        if not path.is_file():
            raise ConfigError(f"resume: no interrupted study found ({path} is missing); "
                              "pass the folder of a study that was interrupted",
                              parameters=("resume",))
        try:
            request = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"resume: cannot read {path} ({exc}); remove {self.folder} "
                              "and start a new study", parameters=("resume",)) from None
        if not isinstance(request, dict):
            raise ConfigError(f"resume: {path} is not a study request; remove {self.folder} "
                              "and start a new study", parameters=("resume",))
        return request

    def _log_path(self, study: int, run: int) -> Path:
        return self.folder / f"study{study:03d}-run{run:05d}.cells"

    def save_cell(self, study: int, cell: CellOutput) -> None:
        """Append one finished cell to its run's log: its estimates, time and notes."""
        estimates = np.ascontiguousarray(cell.estimates, dtype="<f8")
        notes = json.dumps(list(cell.notes)).encode("utf-8")
        record = (_HEADER.pack(_MAGIC, self.owner(study, cell.run), *cell.key, cell.seconds,
                               *cell.exposure, estimates.size, len(notes))
                  + estimates.tobytes() + notes)
        record += _CRC.pack(zlib.crc32(record))
        descriptor = os.open(self._log_path(study, cell.run),  # a planted link: refused
                             os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        try:
            written = os.write(descriptor, record)
        finally:
            os.close(descriptor)
        if written != len(record):  # a full disk can cut a write short
            raise OSError(28, "no space left on device", str(self._log_path(study, cell.run)))

    def load_cells(self, study: int, run: int) -> dict[CellKey, CellOutput]:
        """The saved cells of a run that is not finished, by key. A record cut short (a
        kill during its write) or damaged ends the log: it and what follows are dropped
        from the file, and those cells are recomputed."""
        path = self._log_path(study, run)
        if not path.exists() and not path.is_symlink():
            return {}
        if path.is_symlink() or not path.is_file():  # a link's target is never truncated
            raise self._refuse_not_a_file(path, "where an unfinished run's cells are saved")
        content = path.read_bytes()
        cells, end, owners = _read_records(content, run)
        if owners - {None, self.owner(study, run)}:
            raise self._refuse_foreign(path)
        if end < len(content):
            with path.open("r+b") as handle:
                handle.truncate(end)
        return cells

    def save(self, study: int, out: RunOutput) -> None:
        """Save a finished run, then drop its cells' files."""
        notes = json.dumps([[m, s, n, c] for (m, s, n), c in out.notes.items()])
        payload: dict[str, np.ndarray] = {
            "estimates": out.estimates, "seen": out.accuracies.seen,
            "unseen": out.accuracies.unseen, "full": out.accuracies.full,
            "targets": out.targets, "method_seconds": out.method_seconds,
            "exposure": out.exposure, "notes": np.array(notes),
            "owner": np.frombuffer(self.owner(study, out.run), dtype=np.uint8)}
        from mdad.safe_io import atomic_write

        atomic_write(self._path(study, out.run), lambda handle: np.savez(handle, **payload))
        self._log_path(study, out.run).unlink(missing_ok=True)

    def load(self, study: int, run: int) -> RunOutput | None:
        """A finished run, or None."""
        path = self._path(study, run)
        if not path.exists() and not path.is_symlink():
            return None
        if not path.is_file():
            raise self._refuse_not_a_file(path, "where a finished run is saved")
        try:
            with np.load(path) as data:
                owner = data["owner"].tobytes() if "owner" in data else None
                notes = Counter({(m, int(s), n): int(c)
                                 for m, s, n, c in json.loads(str(data["notes"]))})
                out = RunOutput(run, data["estimates"],
                                RunAccuracies(data["seen"], data["unseen"], data["full"]),
                                data["targets"], data["method_seconds"], notes,
                                data["exposure"])
        except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile):
            path.unlink(missing_ok=True)  # truncated or corrupt: the run is recomputed
            return None
        if owner is not None and owner != self.owner(study, run):
            raise self._refuse_foreign(path)
        return out

    def finished(self) -> tuple[int, int]:
        """(finished runs, finished cells of unfinished runs) saved in the folder."""
        # a temporary of mdad before safe_io (study...-run....tmp.npz) is no finished run
        runs = sum(1 for path in self.folder.glob("study*-run*.npz")
                   if not path.name.endswith(".tmp.npz") and path.is_file())
        cells = sum(len(_read_records(path.read_bytes(), 0)[0])
                    for path in self.folder.glob("study*-run*.cells") if path.is_file())
        return runs, cells


def _read_records(content: bytes, run: int
                  ) -> tuple[dict[CellKey, CellOutput], int, set[bytes | None]]:
    """The cells of a run's log, where its last whole, undamaged record ends, and the
    owners its records name (None for a record from before owners)."""
    cells: dict[CellKey, CellOutput] = {}
    owners: set[bytes | None] = set()
    at = 0
    while at + _LEGACY_HEADER.size <= len(content):
        if content[at:at + 4] == _LEGACY_MAGIC:
            header, owner = _LEGACY_HEADER, None
            _, method, size, sources, seconds, distinct, share, n_values, n_notes = (
                header.unpack_from(content, at))
        elif content[at:at + 4] == _MAGIC and at + _HEADER.size <= len(content):
            header = _HEADER
            _, owner, method, size, sources, seconds, distinct, share, n_values, n_notes = (
                header.unpack_from(content, at))
        else:
            break
        end = at + header.size + 8 * n_values + n_notes + _CRC.size
        if end > len(content):
            break
        (crc,) = _CRC.unpack_from(content, end - _CRC.size)
        if crc != zlib.crc32(content[at:end - _CRC.size]):
            break
        values_at = at + header.size
        estimates = np.frombuffer(content, dtype="<f8", count=n_values, offset=values_at)
        try:
            notes = json.loads(content[values_at + 8 * n_values:end - _CRC.size])
        except ValueError:
            break
        key = (method, size, sources)
        cells[key] = CellOutput(run, key, estimates.astype(np.float64), seconds,
                                tuple(notes), (distinct, share))
        owners.add(owner)
        at = end
    return cells, at, owners

