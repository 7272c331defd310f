"""A study request: everything that defines a study, as data that can be saved and
read back (a resumed study continues exactly the request it started with)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mdad.errors import ConfigError, check_fractions, check_type
from mdad.study.config import StudyConfig

FORMAT = "mdad-study-request/1"


@dataclass(frozen=True)
class StudyRequest:
    """What to study and how.

    Attributes
    ----------
    dataset : a dataset name (``gpqa``), ``synthetic:<shape>``, or a results path
        (made absolute when saved, so a study resumes from any folder).
    config : the study's parameters; unset target and source counts take the
        dataset's defaults when the study is prepared (see `prepare_study`).
    load_options : keyword options for `mdad.data.load_dataset` (``missing``,
        ``orientation``, ``metric``, a synthetic dataset's size and seed), as JSON
        values.
    per_subtask : select and evaluate inside each subtask on its own.
    fractions : with `per_subtask`, micro-benchmark sizes as fractions of each
        subtask's seen pool; None for the paper's.
    """

    dataset: str
    config: StudyConfig = field(default_factory=StudyConfig)
    load_options: Mapping[str, Any] = field(default_factory=dict)
    per_subtask: bool = False
    fractions: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        check_type(self.dataset, (str, os.PathLike), "dataset",
                   "a dataset name or a results path")
        object.__setattr__(self, "dataset", os.fspath(self.dataset))  # saved as text
        check_type(self.config, StudyConfig, "config", "a StudyConfig")
        check_type(self.load_options, Mapping, "load_options", "a dict of load options")
        if self.fractions is not None:
            check_fractions(self.fractions)
        if self.fractions is not None and not self.per_subtask:
            raise ConfigError("fractions applies only with per_subtask; set per_subtask, "
                              "or use sizes", parameters=("fractions", "per_subtask", "sizes"))

    def to_json(self) -> dict[str, Any]:
        dataset = self.dataset
        if not dataset.startswith("synthetic:") and Path(dataset).expanduser().exists():
            dataset = str(Path(dataset).expanduser().resolve())
        return {
            "format": FORMAT,
            "dataset": dataset,
            "config": self.config.to_json(),
            "load_options": {key: getattr(value, "value", value)
                             for key, value in self.load_options.items()},
            "per_subtask": self.per_subtask,
            "fractions": None if self.fractions is None else list(self.fractions),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StudyRequest:
        """The request `to_json` wrote.

        Raises
        ------
        ConfigError
            When `data` was written by another version of mdad, or is not a request.
        """
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            raise ConfigError("the saved study request was made by another version of mdad "
                              f"(this one reads {FORMAT}); start a new study")
        try:
            return cls(
                dataset=str(data["dataset"]),
                config=StudyConfig.from_json(dict(data["config"])),
                load_options=dict(data["load_options"]),
                per_subtask=bool(data["per_subtask"]),
                fractions=(None if data["fractions"] is None
                           else tuple(float(f) for f in data["fractions"])))
        except (KeyError, TypeError, ValueError, ConfigError) as exc:
            detail = repr(exc) if isinstance(exc, KeyError) else str(exc)
            raise ConfigError(f"the saved study request is damaged ({detail}); start a new "
                              "study") from None
