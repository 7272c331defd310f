"""The registry of loaders, and reading any results path or dataset name through it.

`LOADERS` lists every reader (`mdad.data.loader.Loader`) in recognition order; the
first that recognises a path or name reads it, and options it does not accept are
refused. A new loader is one module that defines it and one line in `LOADERS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mdad.data import compact, lm_eval, paper_arrays, wide_csv
from mdad.data.datasets import (
    DATASETS,
    DatasetSpec,
    data_search_path,
    find_dataset_file,
    known_names,
    locate,
)
from mdad.data.files import missing_reason
from mdad.data.loader import Loader
from mdad.data.matrix import ResponseMatrix
from mdad.data.missing import MissingPolicy, MissingReport, resolve_missing
from mdad.data.synthetic_loader import SyntheticLoader
from mdad.errors import ConfigError, DataError, check_path, did_you_mean


def _read_named(name: str) -> ResponseMatrix:
    """A named dataset's matrix as its spec reads it: what synthetic data calibrate on."""
    return read_dataset(name).matrix


# In recognition order: names first; the paper's arrays and pulled (compact) folders
# before lm-eval, which takes any other folder.
LOADERS: tuple[Loader, ...] = (
    SyntheticLoader(read_named=_read_named),
    compact.LeaderboardLoader(),
    wide_csv.LOADER,
    paper_arrays.LOADER,
    compact.LOADER,
    lm_eval.LOADER,
)


def find_loader(source: str | Path) -> Loader:
    """The first loader in `LOADERS` that recognises `source` (a path or a name).

    Raises
    ------
    DataError
        When `source` does not exist, or no loader reads what it is.
    """
    check_path(source, "source")
    for loader in LOADERS:
        if loader.recognises(source):
            return loader
    path = Path(source)
    if not path.exists():
        raise DataError(f"{path}: no such file or folder")
    formats = [loader.reads for loader in LOADERS]
    raise DataError(f"{path}: unknown results format; expected "
                    f"{', '.join(formats[:-1])} or {formats[-1]}")


def accepted_options(loader: Loader, source: str | Path, options: dict[str, Any]
                     ) -> dict[str, Any]:
    """`options` without those left at None (not given), all of them `loader`'s own.

    Raises
    ------
    ConfigError
        Naming every option `loader` does not accept, and those it does.
    """
    given = {key: value for key, value in options.items() if value is not None}
    unknown = [key for key in given if key not in loader.options]
    if unknown:
        verb, it = ("is not an option", "it") if len(unknown) == 1 else ("are not options",
                                                                           "them")
        # only the refused options are named as the caller's: the accepted ones are the
        # loader's keywords, which a command line may not offer, so they are said to be
        accepts = (f"the loader's keywords are {', '.join(loader.options)}" if loader.options
                   else "the loader takes no options")
        raise ConfigError(f"{', '.join(unknown)} {verb} of the {loader.name} loader, which "
                          f"reads {source}; leave {it} out ({accepts})",
                          parameters=tuple(unknown))
    return given


def read_results(path: str | Path, **options: Any) -> ResponseMatrix:
    """Read a results file or folder with the loader that recognises it.

    Reads one benchmark's results of many models into a `ResponseMatrix`, missing cells
    as NaN (no missing-data policy: see `load_dataset`). A ``.csv`` file is a wide CSV;
    a folder with ``*_models-by-correctness_combined.npy`` (or such a ``.npy`` file)
    holds the paper's cached arrays; a folder with ``mdad-compact.json`` is a pulled
    dataset; any other folder, or a ``.jsonl`` file, is lm-evaluation-harness
    ``--log_samples`` output. A ``synthetic:<shape>`` name is simulated; a
    ``leaderboard:<bench>`` name reads a benchmark pulled by ``mdad data pull``.

    Parameters
    ----------
    path : str or pathlib.Path
        The results file or folder, or a ``synthetic:<shape>`` or
        ``leaderboard:<bench>`` name.
    **options : Any
        Keyword options for that loader: ``orientation``, ``item_column``,
        ``subtask_column``, ``meta_columns`` for CSV; ``metric``, ``tasks``,
        ``allow_mixed_settings`` for lm-eval; ``metric`` for a leaderboard name;
        ``n_models``, ``data_seed`` for synthetic. Options set to None count as not
        given.

    Returns
    -------
    ResponseMatrix
        Models by items, with the models' names, the items' ids and subtasks.

    Raises
    ------
    DataError
        When `path` does not exist or is of no known format, or the loader's own.
    ConfigError
        For a `path` that is not a path, or an option the loader does not accept.
    """
    check_path(path, "path")
    path = Path(path)
    loader = find_loader(path)
    return loader.load(path, **accepted_options(loader, path, options))


@dataclass(frozen=True)
class RawDataset:
    """A dataset as read, before any missing-data policy: its name, matrix, file (or
    name, for a synthetic one) and spec when it is a named or synthetic one."""

    name: str
    matrix: ResponseMatrix
    path: Path
    spec: DatasetSpec | None = None
    metric: str | None = None  # the lm-eval metric it was read with; None: none named


def read_dataset(name_or_path: str | Path, **options: Any) -> RawDataset:
    """Read a named dataset (``gpqa``, ``mmlu-pro-29``), ``synthetic:<shape>`` or a
    results path, before any missing-data policy.

    A named dataset is read with its spec's `read_options`, which `options` override.
    Its file has one metric's scores (`DatasetSpec.lm_eval_metric`): a `metric` option
    may only repeat it. Options set to None count as not given.

    Raises
    ------
    DataError
        When the name is unknown and no such path exists, or the file is unusable.
    ConfigError
        For an option its loader does not accept, or another metric than a named
        dataset's.
    """
    given = {option: value for option, value in options.items() if value is not None}
    path, loader, spec, named = _source(name_or_path)
    if named and spec is not None:
        if "metric" not in loader.options:
            _check_metric(spec, given.pop("metric", None))
        given = {**spec.read_options, **given}
    matrix = loader.load(path, **accepted_options(loader, path, given))
    name = spec.name if spec else (path.stem if path.is_file() else path.name)
    # a loader that takes a metric reads with it (lm-eval: acc unless told); a named
    # dataset's file holds its spec's
    metric = given.get("metric") or (spec.lm_eval_metric if spec else None) or (
        "acc" if "metric" in loader.options else None)
    return RawDataset(name, matrix, path, spec, metric)


def dataset_options(name_or_path: str | Path) -> tuple[str, ...]:
    """The options `read_dataset` and `load_dataset` accept for `name_or_path`: its
    loader's, and ``metric`` for a named dataset (which must be the dataset's own).

    Raises
    ------
    DataError
        As `read_dataset` does, for a name or path it cannot read.
    """
    _, loader, _, named = _source(name_or_path)
    if named and "metric" not in loader.options:
        return (*loader.options, "metric")
    return loader.options


def _source(name_or_path: str | Path) -> tuple[Path, Loader, DatasetSpec | None, bool]:
    """The file (or name) to read, its loader, its spec, and whether it is a named
    dataset. A dataset name wins over a file or folder of the same name."""
    key = str(name_or_path)
    if (spec := DATASETS.get(key)) is not None:
        path = find_dataset_file(spec)
        return path, find_loader(path), spec, True
    path = Path(key).expanduser()
    if not path.exists() and not any(loader.recognises(path) for loader in LOADERS):
        known = known_names()
        if path.is_symlink():
            raise DataError(f"{key}: {missing_reason(path)}; it is not a known dataset "
                            f"({known}) either")
        raise DataError(f"{key!r} is neither a known dataset ({known}) nor an existing "
                        f"file or folder{did_you_mean(key, DATASETS)}")
    if path.exists() and not (path.is_file() or path.is_dir()):
        raise DataError(f"{key}: {missing_reason(path)}; pass a results file or folder")
    loader = find_loader(path)
    return path, loader, loader.dataset_spec(path), False


def _check_metric(spec: DatasetSpec, metric: str | None) -> None:
    """Refuse a metric other than the one a named dataset's file holds."""
    if metric is not None and metric != spec.lm_eval_metric:
        raise ConfigError(f"metric {metric}: the {spec.name} data holds {spec.lm_eval_metric} "
                          f"scores only; drop metric or set it to {spec.lm_eval_metric}",
                          parameters=("metric",))


@dataclass(frozen=True)
class Dataset:
    """A loaded, complete matrix, where it came from, what loading removed, and the
    lm-eval metric it was read with (None where the data names none, e.g. a CSV)."""

    name: str
    matrix: ResponseMatrix
    path: Path
    missing: MissingReport
    spec: DatasetSpec | None = None
    metric: str | None = None


def load_dataset(
    name_or_path: str | Path,
    *,
    missing: MissingPolicy | str = MissingPolicy.DROP_ITEMS,
    **options: Any,
) -> Dataset:
    """Load a dataset by name or path, and make it complete.

    Reads a named dataset (``gpqa``, ``mmlu-pro-29``), a ``synthetic:<shape>``
    simulation or a results path (see `read_results` for the formats), then applies the
    missing-data policy (see `resolve_missing`) and reports what it removed in the
    returned `Dataset`, never silently.

    Parameters
    ----------
    name_or_path : str or pathlib.Path
        A dataset name of `mdad.data.DATASETS`, ``synthetic:<shape>``, or a results
        file or folder. A dataset name wins over a file or folder of the same name.
    missing : MissingPolicy or str, default "drop-items"
        ``drop-items`` (every model is kept, items any model lacks are dropped),
        ``drop-models`` (every item is kept, models with a gap are dropped) or
        ``error`` (refuse any missing cell).
    **options : Any
        Keyword options for the loader that reads `name_or_path` (see `read_dataset`
        and `read_results`), e.g. ``load_dataset("synthetic:gpqa", n_models=1000,
        data_seed=3)``. A named dataset is read with its own options, which these
        override; its ``metric`` may only repeat the one its file holds. Options set to
        None count as not given.

    Returns
    -------
    Dataset
        The complete matrix (no missing cell), its name, the file (or name) it was read
        from, the report of what the missing-data policy removed, its `DatasetSpec`
        when the name or its loader knows one, and the lm-eval metric it was read with
        (None where the data names none).

    Raises
    ------
    DataError
        When the name is unknown and no such path exists, or the file is unusable; with
        ``error`` when a cell is missing, or when the policy would leave no data.
    ConfigError
        For an option the loader does not accept, another metric than a named
        dataset's, or an unknown policy.
    """
    raw = read_dataset(name_or_path, **options)
    complete, report = resolve_missing(raw.matrix, missing)
    return Dataset(name=raw.name, matrix=complete, path=raw.path, missing=report,
                   spec=raw.spec, metric=raw.metric)


__all__ = [
    "DATASETS",
    "LOADERS",
    "Dataset",
    "DatasetSpec",
    "RawDataset",
    "accepted_options",
    "data_search_path",
    "dataset_options",
    "find_dataset_file",
    "find_loader",
    "load_dataset",
    "locate",
    "read_dataset",
    "read_results",
]
