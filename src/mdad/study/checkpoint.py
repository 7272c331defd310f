"""Finished runs saved as they complete, so an interrupted study loses nothing.

A study's checkpoint folder holds the request that started it (`request.json`) and one
file per finished run of each (sub)study, written to a temporary name and renamed
into place: a file exists complete or not at all, even after SIGKILL.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from mdad.errors import ConfigError
from mdad.study.runner import RunAccuracies, RunOutput

REQUEST = "request.json"


def progress_dir(out_dir: Path) -> Path:
    """Where the checkpoints of the run that will be written to `out_dir` live: a
    hidden folder beside it."""
    out_dir = Path(out_dir)
    return out_dir.parent / f".{out_dir.name}.progress"


class RunCheckpoint:
    """Saves and loads finished runs in `folder` (see the module docstring)."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

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
            raise ConfigError(f"--resume: cannot read {path} ({exc}); start a new run") from None
        if not isinstance(request, dict) or not isinstance(request.get("params"), dict):
            raise ConfigError(f"--resume: {path} is not a run request; start a new run")
        return request

    def save(self, study: int, out: RunOutput) -> None:
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

    def load(self, study: int, run: int) -> RunOutput | None:
        path = self._path(study, run)
        if not path.is_file():
            return None
        with np.load(path) as data:
            notes = Counter({(m, int(s), n): int(c)
                             for m, s, n, c in json.loads(str(data["notes"]))})
            return RunOutput(run, data["estimates"],
                             RunAccuracies(data["seen"], data["unseen"], data["full"]),
                             data["targets"], data["method_seconds"], notes)

    def finished(self) -> int:
        return sum(1 for _ in self.folder.glob("study*-run*.npz")
                   if not _.name.endswith(".tmp.npz"))


def _atomic_write(path: Path, content: bytes) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_bytes(content)
    os.replace(temporary, path)
