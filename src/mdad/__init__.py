"""mdad: how reliable is a language-model micro-benchmark?"""

from importlib.metadata import PackageNotFoundError, version

from mdad.data import ResponseMatrix, load_dataset
from mdad.errors import ConfigError, DataError, MdadError

try:
    __version__ = version("mdad")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = [
    "ConfigError",
    "DataError",
    "MdadError",
    "ResponseMatrix",
    "__version__",
    "load_dataset",
]
