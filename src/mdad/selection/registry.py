"""One registry of selection methods, by CLI name: a new method is one file plus one
decorator, inside the package or in another package through the ``mdad.methods``
entry point group.

Built-in methods register when `mdad.selection` is imported. Entry points are read
lazily, the first time the registry is consulted (`METHODS` read, `get_method`, ...),
so importing mdad costs no scan of the installed packages.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType, ModuleType
from typing import Any, TypeVar

import numpy as np

from mdad.errors import ConfigError, check_type, did_you_mean
from mdad.selection.base import ANALYTIC_MDAD_KINDS, MethodDefaults, MicroBenchmark

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")  # a method's name, as --methods takes it

ENTRY_POINT_GROUP = "mdad.methods"
T = TypeVar("T", bound=type)


class MethodRegistry(Mapping[str, type[MethodDefaults]]):
    """CLI name -> method class, in registration order: the built-in methods in the
    order their modules are imported, then plugins sorted by entry point name.
    Reading it loads the plugins first (once).

    A plugin that fails to load (its import fails, it names no method class, takes a
    registered name, registers a name other than its entry point's, ...) is left out,
    and the others are kept: its one-line error is in `broken`, under its entry point's
    name, and asking for that name raises it. The library never prints; the CLI warns.
    """

    def __init__(self) -> None:
        self._classes: dict[str, type[MethodDefaults]] = {}
        self._plugins_loaded = False
        self._broken: dict[str, ConfigError] = {}
        self._loading: str | None = None  # the entry point being loaded, if any

    def add(self, name: str, cls: type) -> None:
        """Register `cls` as `name`; a plugin may not reuse a registered name."""
        _check_name(name, self._loading)
        _check_method_class(name, cls)
        if name in self._classes:
            if self._loading is not None:
                raise ConfigError(f"method plugin {self._loading} registers {name!r}, a name "
                                  "already taken by a built-in or another plugin; rename it")
            raise ConfigError(f"selection method {name!r} is registered twice",
                              parameters=("name",))
        if self._loading is not None and getattr(cls, "in_paper", False):
            raise ConfigError(f"method plugin {self._loading} sets in_paper for {name!r}; "
                              "only the paper's own methods are in the paper")
        cls.name = name
        self._classes[name] = cls

    def builtin(self) -> dict[str, type[MethodDefaults]]:
        """The methods registered so far without reading entry points."""
        return dict(self._classes)

    @property
    def plugins_loaded(self) -> bool:
        """Whether the entry points were read (the registry was consulted)."""
        return self._plugins_loaded

    @property
    def broken(self) -> Mapping[str, ConfigError]:
        """The plugins that failed to load: entry point (or method) name -> their
        one-line error (loading the plugins first)."""
        self._load_plugins()
        return MappingProxyType(self._broken)

    def _load_plugins(self) -> None:
        """Import every entry point, then judge each on what all of them registered,
        so that no verdict depends on the order of loading (one plugin's module may
        import another's, or fail after registering)."""
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        from importlib.metadata import entry_points

        builtin = list(self._classes)
        found = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)
        loaded: dict[str, Any] = {}
        for entry in found:
            self._loading = f"{entry.name} = {entry.value}"
            try:
                _check_name(entry.name, self._loading)
                loaded[entry.name] = entry.load()
            # any failure of someone else's code, sys.exit() too, is that plugin's
            except (Exception, SystemExit) as exc:
                self._broken.setdefault(entry.name, _plugin_error(self._loading, exc))
            finally:
                self._loading = None
        named: set[str] = set()
        for entry in found:
            if entry.name not in loaded:
                continue
            self._loading = f"{entry.name} = {entry.value}"
            try:
                self._check_entry_point(entry.name, loaded[entry.name], builtin)
                named.add(entry.name)
            except ConfigError as exc:
                self._broken.setdefault(entry.name, _plugin_error(self._loading, exc))
            finally:
                self._loading = None
        plugins = sorted(name for name in self._classes if name not in builtin)
        for name in plugins:
            if name in named:
                continue
            cls = self._classes[name]
            self._broken.setdefault(name, ConfigError(
                f"method plugin module {cls.__module__} registers {name!r}, which no entry "
                f"point of {ENTRY_POINT_GROUP} names (or its own failed to load); give it "
                f"its own entry point ({name} = \"{cls.__module__}:{cls.__qualname__}\")"))
        self._classes = {name: self._classes[name]
                         for name in [*builtin, *(p for p in plugins if p in named)]}

    def _check_entry_point(self, key: str, loaded: Any, builtin: list[str]) -> None:
        """A "module:Class" value registers the class under the entry point's name
        unless `register` already did, under that name; a bare module (or package)
        registers on import, the entry point's name among its methods. Anything else,
        a module that registers nothing, or a method registered under another name than
        its entry point's, is refused: its methods would be missing, or named otherwise
        than the package says, without a word."""
        if isinstance(loaded, type):
            names = [name for name, cls in self._classes.items() if cls is loaded]
            if not names:
                self.add(key, loaded)
            elif key not in names:
                raise ConfigError(
                    f"method plugin {self._loading}: the entry point is named {key!r} but "
                    f"its class {loaded.__name__} is registered as {names[0]!r}; rename the "
                    f"entry point to {names[0]} or register the class as {key}")
        elif not isinstance(loaded, ModuleType):
            raise ConfigError(f"method plugin {self._loading}: names "
                              f"{type(loaded).__name__} {loaded!r}, neither a method class "
                              "nor a module; point the entry point at the class")
        else:
            prefix = loaded.__name__
            names = [name for name, cls in self._classes.items() if name not in builtin
                     and (cls.__module__ == prefix or cls.__module__.startswith(prefix + "."))]
            if not names:
                raise ConfigError(f"method plugin {self._loading}: the module registers no "
                                  "method; decorate its class with @mdad.selection.register("
                                  "NAME) or point the entry point at the class")
            if key not in names:
                raise ConfigError(
                    f"method plugin {self._loading}: the entry point is named {key!r} but "
                    f"its module registers {names[0]!r}; rename the entry point to "
                    f"{names[0]} or register the method as {key}")

    def __getitem__(self, name: str) -> type[MethodDefaults]:
        self._load_plugins()
        if name not in self._classes and isinstance(name, str) and name in self._broken:
            error = self._broken[name]  # a fresh exception each time, not one re-raised
            raise ConfigError(str(error), parameters=error.parameters)
        return self._classes[name]

    def __iter__(self) -> Iterator[str]:
        self._load_plugins()
        return iter(list(self._classes))

    def __len__(self) -> int:
        self._load_plugins()
        return len(self._classes)

    def __contains__(self, name: object) -> bool:
        self._load_plugins()
        return name in self._classes


def _plugin_error(plugin: str, exc: Exception) -> ConfigError:
    """One line naming the entry point `plugin` ("name = value") and what failed."""
    if isinstance(exc, ConfigError):  # the registry's own refusal, or the plugin's
        said = " ".join(str(exc).split())
        return ConfigError(said if said.startswith(f"method plugin {plugin}")
                           else f"method plugin {plugin}: {said}")
    reason = " ".join(f"{type(exc).__name__}: {exc}".split())
    return ConfigError(f"method plugin {plugin} (entry point group {ENTRY_POINT_GROUP}) "
                       f"failed to load: {reason}; fix or uninstall it")


def _check_name(name: object, plugin: str | None = None) -> None:
    if not isinstance(name, str) or not NAME.fullmatch(name) or name == "all":
        raise ConfigError(f"{f'method plugin {plugin}: ' if plugin else ''}a method's name "
                          f"must be letters, digits, '_', '.' and '-', not 'all' (which "
                          f"--methods reads as every method), e.g. 'my-method'; got {name!r}",
                          parameters=("name",))


def _check_method_class(name: str, cls: type) -> None:
    """A method class must carry what the project reads from it (see MethodDefaults)."""
    if not (isinstance(cls, type) and issubclass(cls, MethodDefaults)):
        raise ConfigError(f"method {name!r}: {cls!r} must subclass "
                          "mdad.selection.MethodDefaults")
    if cls.select is MethodDefaults.select:
        raise ConfigError(f"method {name!r}: {cls.__name__} must define select")
    kinds = [t.kind for t in cls.estimators]
    for estimator in cls.estimators:
        own = vars(estimator)
        if estimator is not MicroBenchmark and not {"kind", "to_file", "from_file"} <= set(own):
            raise ConfigError(f"method {name!r}: estimator {estimator.__name__} must define "
                              "its own kind, to_file and from_file")
    if len(set(kinds)) != len(kinds):
        raise ConfigError(f"method {name!r}: two of its estimators share a kind: {kinds}")
    if cls.analytic_mdad is not None and cls.analytic_mdad not in ANALYTIC_MDAD_KINDS:
        raise ConfigError(f"method {name!r}: analytic_mdad must be None, 'uniform' or "
                          f"'stratified'; got {cls.analytic_mdad!r}")


METHODS = MethodRegistry()


def register(name: str) -> Callable[[T], T]:
    """Class decorator adding a selection method under its CLI name."""
    _check_name(name)

    def add(cls: T) -> T:
        METHODS.add(name, cls)
        return cls

    return add


def method_class(name: str) -> type[MethodDefaults]:
    """The class registered as `name`.

    Raises
    ------
    ConfigError
        For a name that is not a registered method's, listing the known ones (and
        the plugins that failed to load); for a plugin's that failed to load, its
        error (see `MethodRegistry.broken`).
    """
    check_type(name, str, "method", "a method name, e.g. 'random'")
    try:
        return METHODS[name]
    except KeyError:
        known, broken = ", ".join(METHODS), list(METHODS.broken)
        failed = (f"; method plugins that failed to load: {', '.join(broken)}"
                  if broken else "")
        raise ConfigError(f"unknown method {name!r}"
                          f"{did_you_mean(str(name), [*METHODS, *broken])}; "
                          f"choose from: {known}{failed}", parameters=("method",)) from None


def get_method(name: str) -> MethodDefaults:
    """A new instance of the method registered as `name`, with default parameters."""
    return method_class(name)()


def paper_methods() -> tuple[str, ...]:
    """The paper's six methods, in registry order (plugins are never in the paper, so
    no entry point is read)."""
    return tuple(name for name, cls in METHODS.builtin().items() if cls.in_paper)


def fast_methods(names: tuple[str, ...]) -> tuple[str, ...]:
    """`names` with each method replaced by the `fast_variant` its own class declares
    (a subclass, e.g. a plugin's, does not inherit it), each name once."""
    if not isinstance(names, tuple | list):
        raise ConfigError(f"names must be a tuple of method names; got {names!r:.60}",
                          parameters=("names",))

    def fast(name: str) -> str:
        return vars(method_class(name)).get("fast_variant") or name

    return tuple(dict.fromkeys(fast(name) for name in names))


def largest_size(name: str, subtask_sizes: np.ndarray) -> int:
    """The largest micro-benchmark method `name` can build from a pool whose subtasks
    hold `subtask_sizes` items (int array of shape (n_subtasks,), counts >= 0)."""
    sizes = np.asarray(subtask_sizes)
    if (sizes.ndim != 1 or not np.issubdtype(sizes.dtype, np.integer) or (sizes < 0).any()):
        raise ConfigError(f"subtask_sizes must be a 1-D array of item counts >= 0; got "
                          f"{subtask_sizes!r:.60}", parameters=("subtask_sizes",))
    return int(method_class(name).max_size_for(sizes.astype(np.int64)))
