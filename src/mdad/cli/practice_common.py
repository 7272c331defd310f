"""Options and output helpers shared by the practitioner commands."""

from __future__ import annotations

import dataclasses
import json
from typing import Annotated

import typer

from mdad.report.sentences import points

JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object instead.")]
OtherVersion = Annotated[bool, typer.Option(
    "--allow-other-data-version",
    help="Use a --run made on a different version of the data (its sha256 differs).")]


def print_json(value: object) -> None:
    typer.echo(json.dumps(dataclasses.asdict(value) if dataclasses.is_dataclass(value)
                          else value, indent=1))


__all__ = ["JsonOption", "OtherVersion", "points", "print_json"]
