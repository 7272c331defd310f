"""Finished cells saved as they complete, so an interrupted study loses nothing.

A study's checkpoint folder holds the request that started it (`request.json`), one
file per finished cell (a method at one size and source count in one run) and, once
all cells of a run are done, one file for the run that replaces its cells' files.
Each file is written to a temporary name and renamed into place, so it exists
complete or not at all, even after SIGKILL; run files are also flushed to disk.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from mdad.errors import ConfigError
from mdad.study.records import CellKey, CellOutput, RunAccuracies, RunOutput

REQUEST = "request.json"
_CELL_NAME = re.compile(r"study\d+-run\d+-cell-method(?P<method>\d+)-size(?P<size>\d+)"
                        r"-sources(?P<sources>\d+)")
LOCK = "lock"


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
        self._lock: int | None = None

    def lock(self) -> None:
        """Make this process the folder's only writer until it exits: a second study
        on the same folder stops at once, naming this one's process id."""
        self.folder.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            owner = os.pread(descriptor, 32, 0).decode("ascii", "replace").strip()
            os.close(descriptor)
            raise ConfigError(f"the study checkpointed in {self.folder} is being computed by "
                              f"process {owner or '(unknown)'}; wait for it to finish, or "
                              "stop it and resume") from None
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{os.getpid()}\n".encode("ascii"), 0)
        self._lock = descriptor

    def unlock(self) -> None:
        """Let another process take the folder (e.g. a later --resume)."""
        if self._lock is not None:
            os.close(self._lock)  # closing the descriptor releases the lock
            self._lock = None

    def _path(self, study: int, run: int) -> Path:
        return self.folder / f"study{study:03d}-run{run:05d}.npz"

    def start(self, request: dict[str, Any]) -> None:
        """Create the folder and record the request, unless it already holds one."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / REQUEST
        if not path.exists():
            _atomic_write(path, (json.dumps(request, indent=1) + "\n").encode("utf-8"))

    def request(self) -> dict[str, Any]:
        """The saved request, as JSON.

        Raises
        ------
        ConfigError
            When there is none, or it cannot be read.
        """
        path = self.folder / REQUEST
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

    def _cell_path(self, study: int, run: int, key: CellKey) -> Path:
        method, size, sources = key
        return self.folder / (f"study{study:03d}-run{run:05d}-cell-method{method:03d}"
                              f"-size{size:03d}-sources{sources:03d}.npy")

    def save_cell(self, study: int, cell: CellOutput) -> None:
        """Save one finished cell: its estimates, then its time and notes."""
        record = {"seconds": cell.seconds, "notes": list(cell.notes)}
        temporary = self._cell_path(study, cell.run, cell.key).with_suffix(".tmp")
        with temporary.open("wb") as handle:
            np.save(handle, np.asarray(cell.estimates, dtype=np.float64))
            handle.write(json.dumps(record).encode("utf-8"))
        os.replace(temporary, self._cell_path(study, cell.run, cell.key))

    def load_cells(self, study: int, run: int) -> dict[CellKey, CellOutput]:
        """The saved cells of a run that is not finished, by key."""
        cells = {}
        for path in self.folder.glob(f"study{study:03d}-run{run:05d}-cell*.npy"):
            match = _CELL_NAME.fullmatch(path.stem)
            try:
                if match is None:
                    raise ValueError(path.name)  # another version's name
                key = (int(match["method"]), int(match["size"]), int(match["sources"]))
                with path.open("rb") as handle:
                    estimates = np.load(handle)
                    record = json.loads(handle.read().decode("utf-8"))
                cells[key] = CellOutput(run, key, estimates, float(record["seconds"]),
                                        tuple(record["notes"]))
            except (OSError, ValueError, EOFError, KeyError, TypeError):  # cut short
                path.unlink(missing_ok=True)  # the cell is recomputed
                continue
        return cells  # type: ignore[return-value]

    def save(self, study: int, out: RunOutput) -> None:
        """Save a finished run, then drop its cells' files."""
        notes = json.dumps([[m, s, n, c] for (m, s, n), c in out.notes.items()])
        payload: dict[str, np.ndarray] = {
            "estimates": out.estimates, "seen": out.accuracies.seen,
            "unseen": out.accuracies.unseen, "full": out.accuracies.full,
            "targets": out.targets, "method_seconds": out.method_seconds,
            "notes": np.array(notes)}
        temporary = self._path(study, out.run).with_suffix(".tmp.npz")
        with temporary.open("wb") as handle:
            np.savez(handle, **payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, self._path(study, out.run))
        for path in self.folder.glob(f"study{study:03d}-run{out.run:05d}-cell*.npy"):
            path.unlink(missing_ok=True)

    def load(self, study: int, run: int) -> RunOutput | None:
        """A finished run, or None."""
        path = self._path(study, run)
        if not path.is_file():
            return None
        try:
            with np.load(path) as data:
                notes = Counter({(m, int(s), n): int(c)
                                 for m, s, n, c in json.loads(str(data["notes"]))})
                return RunOutput(run, data["estimates"],
                                 RunAccuracies(data["seen"], data["unseen"], data["full"]),
                                 data["targets"], data["method_seconds"], notes)
        except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile):
            path.unlink(missing_ok=True)  # truncated or corrupt: the run is recomputed
            return None

    def finished(self) -> tuple[int, int]:
        """(finished runs, finished cells of unfinished runs) saved in the folder."""
        runs = sum(1 for path in self.folder.glob("study*-run*.npz")
                   if not path.name.endswith(".tmp.npz"))
        return runs, sum(1 for _ in self.folder.glob("study*-run*-cell*.npy"))


def _atomic_write(path: Path, content: bytes) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_bytes(content)
    os.replace(temporary, path)
