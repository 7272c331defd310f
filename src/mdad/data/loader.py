"""What a loader is: a reader of one kind of results that recognises its input, names
the options it accepts and loads a `ResponseMatrix`.

`mdad.data.registry.LOADERS` lists them; a new loader is one module that defines one
and one line there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from mdad.data.datasets import DatasetSpec
    from mdad.data.matrix import ResponseMatrix


class Loader(Protocol):
    """A reader of one kind of results.

    Attributes
    ----------
    name : short name used in messages, e.g. ``wide-csv``.
    reads : what it reads, in words, for the message listing the known formats.
    options : the keyword options `load` accepts (Python names); any other is refused.
    """

    name: str
    reads: str
    options: tuple[str, ...]

    def recognises(self, source: str | Path) -> bool:
        """Whether `source` (a path, or a name such as ``synthetic:gpqa``) is this
        loader's to read. Cheap: looks at names and folder listings, reads no file."""
        ...

    def load(self, source: str | Path, **options: Any) -> ResponseMatrix:
        """The matrix `source` holds, missing cells as NaN."""
        ...

    def dataset_spec(self, source: str | Path) -> DatasetSpec | None:
        """Study defaults for `source` when the loader knows them, else None."""
        ...


@dataclass(frozen=True)
class FileLoader:
    """A `Loader` of files or folders, made of a recognising and a reading function;
    it recognises only paths that exist."""

    name: str
    reads: str
    options: tuple[str, ...]
    recognise: Callable[[Path], bool]
    read: Callable[..., ResponseMatrix]

    def recognises(self, source: str | Path) -> bool:
        path = Path(source)
        return path.exists() and self.recognise(path)

    def load(self, source: str | Path, **options: Any) -> ResponseMatrix:
        return self.read(Path(source), **options)

    def dataset_spec(self, source: str | Path) -> DatasetSpec | None:
        return None
