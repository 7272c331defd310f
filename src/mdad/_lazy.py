"""Names of a package that load their submodule on first use (PEP 562), so importing a
light part of `mdad` (the CLI's defaults, a style table) loads no heavy library."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(namespace: dict[str, Any], exports: dict[str, str]
                 ) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` for `exports` (public name -> the
    submodule that defines it); `namespace` is the package's ``globals()``, which
    caches each name on first use and holds ``__all__``."""

    def __getattr__(name: str) -> object:
        if name not in exports:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        namespace[name] = value  # later lookups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *namespace["__all__"]})

    return __getattr__, __dir__
