"""Errors a user can cause. Each carries a one-line message that names the culprit and the fix."""


class MdadError(Exception):
    """Base class of every error the CLI reports as one line with exit code 2."""


class DataError(MdadError):
    """An input file or matrix is missing, malformed or unusable."""


class ConfigError(MdadError):
    """An option or parameter has an invalid value."""
