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
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from mdad.errors import ConfigError
from mdad.study.runner import CellOutput, RunAccuracies, RunOutput

REQUEST = "request.json"
LOCK = "lock"


def progress_dir(out_dir: Path) -> Path:
    """Where the checkpoints of the run that will be written to `out_dir` live: a
    hidden folder beside it."""
    out_dir = Path(out_dir)
    return out_dir.parent / f".{out_dir.name}.progress"


class RunCheckpoint:
    """Saves and loads finished runs in `folder` (see the module docstring)."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self._lock: int | None = None

    def lock(self) -> None:
        """Make this process the folder's only writer until it exits: a second `mdad
        run` on the same folder stops at once, naming this one's process id."""
        self.folder.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            owner = os.pread(descriptor, 32, 0).decode("ascii", "replace").strip()
            os.close(descriptor)
            raise ConfigError(f"the run checkpointed in {self.folder} is being computed by "
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
        path = self.folder / REQUEST
        if not path.is_file():
            raise ConfigError(f"--resume: no interrupted run found ({path} is missing); "
                              "pass the --out folder of a run that was interrupted")
        try:
            request = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"--resume: cannot read {path} ({exc}); remove {self.folder} "
                              "and start a new run") from None
        if not isinstance(request, dict) or not isinstance(request.get("params"), dict):
            raise ConfigError(f"--resume: {path} is not a run request; remove {self.folder} "
                              "and start a new run")
        return request

    def _cell_path(self, study: int, run: int, key: tuple[int, int, int]) -> Path:
        c, m, s = key
        return self.folder / f"study{study:03d}-run{run:05d}-cell{c:03d}-{m:03d}-{s:03d}.npy"

    def save_cell(self, study: int, cell: CellOutput) -> None:
        """Save one finished cell: its estimates, then its time and notes."""
        record = {"seconds": cell.seconds, "notes": list(cell.notes)}
        temporary = self._cell_path(study, cell.run, cell.key).with_suffix(".tmp")
        with temporary.open("wb") as handle:
            np.save(handle, np.asarray(cell.estimates, dtype=np.float64))
            handle.write(json.dumps(record).encode("utf-8"))
        os.replace(temporary, self._cell_path(study, cell.run, cell.key))

    def load_cells(self, study: int, run: int) -> dict[tuple[int, int, int], CellOutput]:
        """The saved cells of a run that is not finished, by key."""
        cells = {}
        for path in self.folder.glob(f"study{study:03d}-run{run:05d}-cell*.npy"):
            key = tuple(int(part) for part in path.stem.split("-cell")[1].split("-"))
            try:
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
