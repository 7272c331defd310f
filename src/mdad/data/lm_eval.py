"""lm-evaluation-harness ``--log_samples`` output: one JSON record per model, task and item."""

from __future__ import annotations

import hashlib
import json
import math
import re
import reprlib
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from mdad.data.files import digests_sha256, listed
from mdad.data.loader import FileLoader
from mdad.data.matrix import ResponseMatrix
from mdad.errors import DataError

SAMPLES_GLOB = "samples_*.jsonl"
# lm-eval writes ``results_<timestamp>.json`` beside each run's ``samples_<task>_<timestamp>
# .jsonl`` files, with the same timestamp: the run's n-shot per task, configs, model args.
# A few KB to a few MB (every task's config); 64 MiB bounds what one may take in memory.
RESULTS_FILE = "results_{}.json"
MAX_RESULTS_BYTES = 64 * 2**20
# the note of a matrix read with allow_mixed_settings from results whose n-shot differ
MIXED_NOTE = "mixed lm-eval settings, read as they are (allowed): "
# The longest line (one record) read, in bytes. The harness's records hold the document,
# every option's full prompt and the responses: a few KB, up to a few MB for long-context
# tasks (a 128k-token prompt, repeated per option). 256 MiB is far above any of them and
# bounds what one line may take in memory (about twice its size while it is parsed).
# Shared with the leaderboard pull, which streams the same files.
MAX_LINE_BYTES = 256 * 2**20
# A doc_id is the document's index; text ids are allowed, but not ones that could not be
# shown or saved as an item id.
_MAX_DOC_ID_CHARS = 200
_MAX_DOC_INDEX = 2**63
_SHORT_REPR = reprlib.Repr()
_SHORT_REPR.maxstring = _SHORT_REPR.maxother = _SHORT_REPR.maxlong = 40
_SHORT_REPR.maxlevel, _SHORT_REPR.maxlist, _SHORT_REPR.maxdict = 3, 5, 5
_FILE_NAME = re.compile(
    r"samples_(?P<task>.+?)(?:_(?P<stamp>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?))?\.jsonl"
)
_LETTER = re.compile(r"\(?([A-Z])\)?")
_INTEGER = re.compile(r"-?\d+")
# Per-item fields the harness writes next to the metrics, used to list the metrics a file has.
_NON_METRIC_FIELDS = frozenset({
    "doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter", "metrics",
    "doc_hash", "prompt_hash", "target_hash", "task_name",
})
# Generative tasks are scored by exact_match and carry no acc / acc_norm field.
_CHOICE_METRICS = frozenset({"acc", "acc_norm"})


@dataclass(frozen=True)
class TaskScores:
    """One model's scores on one task, in file order (`read_task_lines` makes it; the
    leaderboard pull saves it as a partial file). `doc_ids` may be empty."""

    doc_ids: list[str]
    scores: np.ndarray  # float64, (n_docs,)
    confidence: np.ndarray  # float64, (n_docs,), NaN where unknown
    # the record field the scores come from: "exact_match" where acc/acc_norm was asked of
    # a generative task's records (see `read_task_lines`); "" when not known
    metric: str = ""


@dataclass(frozen=True)
class LmEvalFiles:
    """The sample files an lm-eval output path holds, as the loader reads them.

    Attributes
    ----------
    models : model name -> its sample files, by task, then oldest first (the order in
        which they are merged: a later file's record of a doc replaces an earlier one's).
    hidden : names of the subfolders starting with ``.`` that hold sample files; they
        are skipped (e.g. ``.ipynb_checkpoints`` copies), never read as models.
    nested : names of the subfolders whose sample files lie deeper than a model's
        folder (or, when the path is a model's folder, any subfolder with sample files);
        they are not read.
    empty : names of the other subfolders, which hold no sample files at all (e.g. a run
        that failed before writing any); hidden ones are not listed.
    """

    models: dict[str, list[Path]]
    hidden: list[str] = field(default_factory=list)
    nested: list[str] = field(default_factory=list)
    empty: list[str] = field(default_factory=list)

    def tasks(self) -> list[str]:
        """Every task that some model has a file of, sorted."""
        return sorted({task_of(f) for files in self.models.values() for f in files})

    def notes(self) -> list[str]:
        """One line for each kind of subfolder that was not read, naming them."""
        kinds = ((self.hidden, "not read as models: {} (names starting with '.', such as "
                               "copies in .ipynb_checkpoints): {}"),
                 (self.nested, "not read: {} whose sample files lie deeper than a model's "
                               "folder: {}; point at the folder that holds one folder per "
                               "model"),
                 (self.empty, "not read as models: {} without sample files: {}"))
        return [what.format(f"{len(names)} folder{'s' * (len(names) > 1)}", listed(names))
                for names, what in kinds if names]


@dataclass(frozen=True)
class LmEvalSettings:
    """The settings lm-eval ran each model's tasks with, for the sample files read.

    Attributes
    ----------
    n_shot : model -> task -> the n-shot of each of the task's sample files read (in
        merge order: several after re-runs into one folder), from the
        ``results_<timestamp>.json`` lm-eval wrote with it (its ``n-shot``, else
        ``configs[task].num_fewshot``); None where unknown: no such file beside the
        samples, or it does not give the task's n-shot.
    metric : model -> task -> the record field scored: the metric asked, or
        ``exact_match`` for a generative task's records (see `read_task_lines`); "a/b"
        when the task's files differ.
    without_results : the models with no results file beside any of their samples.
    """

    n_shot: dict[str, dict[str, tuple[int | None, ...]]]
    metric: dict[str, dict[str, str]] = field(default_factory=dict)
    without_results: tuple[str, ...] = ()

    def known(self) -> dict[str, dict[str, tuple[int, ...]]]:
        """model -> task -> its distinct known n-shot values, sorted (empty: unknown)."""
        return {model: {task: tuple(sorted({v for v in values if v is not None}))
                        for task, values in tasks.items()}
                for model, tasks in self.n_shot.items()}

    def mixed(self) -> str:
        """In words, how the known n-shot values differ: within the first model whose
        tasks (or runs of one task) differ, else between models; "" when they agree.
        Unknown values are compared with nothing."""
        known = self.known()
        inner = [model for model, tasks in known.items()
                 if len({v for values in tasks.values() for v in values}) > 1]
        if inner:
            more = (f" (and {len(inner) - 1} more model{'s' * (len(inner) > 2)} mix "
                    "theirs)" if len(inner) > 1 else "")
            what = "a task's runs" if len(known[inner[0]]) == 1 else "its tasks"
            return (f"model {inner[0]} ran {what} with different n-shot: "
                    f"{by_n_shot(known[inner[0]])}{more}")
        per_model = {model: values for model, tasks in known.items()
                     if (values := tuple(sorted({v for vs in tasks.values() for v in vs})))}
        if len(set(per_model.values())) > 1:
            return f"its models ran with different n-shot: {by_n_shot(per_model)}"
        return ""


def by_n_shot(values: dict[str, tuple[int, ...]]) -> str:
    """Names grouped by their n-shot values, fewest shots first, e.g. "0 for a, b;
    5 for c" ("0 and 5" for a name with both, "unknown" for none); long groups are
    shortened (`listed`)."""
    groups: dict[tuple[int, ...], list[str]] = {}
    for name, shots in sorted(values.items()):
        groups.setdefault(shots, []).append(name)
    return "; ".join(
        f"{' and '.join(map(str, shots)) or 'unknown'} for {listed(names)}"
        for shots, names in sorted(groups.items(), key=lambda group: (not group[0], group[0])))


def _n_shots(found: dict[str, dict[str, list[Path]]]
             ) -> tuple[dict[str, dict[str, tuple[int | None, ...]]], tuple[str, ...]]:
    """`LmEvalSettings.n_shot` and `without_results` of each model's files by task."""
    runs: dict[Path, dict[str, int | None] | None] = {}  # results file -> n-shot by task
    n_shot: dict[str, dict[str, tuple[int | None, ...]]] = {}
    without: list[str] = []
    for model, grouped in found.items():
        n_shot[model] = {task: tuple(_n_shot_of(file, task, runs) for file in files)
                         for task, files in grouped.items()}
        folders = {file.parent for files in grouped.values() for file in files}
        if not any(next(folder.glob(RESULTS_FILE.format("*")), None) for folder in folders):
            without.append(model)
    return n_shot, tuple(without)


def _n_shot_of(file: Path, task: str, runs: dict[Path, dict[str, int | None] | None]
               ) -> int | None:
    """The n-shot of `task` in the results file of `file`'s run (the same timestamp), None
    when unknown; `runs` caches the results files read."""
    stamp = name_parts(file)[1]
    results = file.parent / RESULTS_FILE.format(stamp)
    if not stamp or not (results.exists() or results.is_symlink()):
        return None
    if results not in runs:
        runs[results] = _read_n_shot(results)
    return (runs[results] or {}).get(task)


def _read_n_shot(path: Path) -> dict[str, int | None]:
    """task -> n-shot of an lm-eval results file (``n-shot``, else each config's
    ``num_fewshot``; None where neither is a whole number).

    Raises
    ------
    DataError
        For a file that is no regular file, larger than `MAX_RESULTS_BYTES`, or no JSON
        object: the samples beside it have no settings to check then.
    """
    from mdad.data.files import not_a_file

    fix = ("fix it, or remove it to read the samples beside it without their settings "
           "(n-shot unknown)")
    if not path.is_file():
        raise DataError(f"{path}: {not_a_file(path)}, named like an lm-eval results file; {fix}")
    if path.stat().st_size > MAX_RESULTS_BYTES:
        raise DataError(f"{path}: larger than {MAX_RESULTS_BYTES // 2**20} MiB, which no "
                        f"lm-eval results file is; {fix}")
    try:
        data = json.loads(path.read_bytes())
    except (ValueError, RecursionError) as exc:  # (UnicodeDecodeError is a ValueError)
        raise DataError(f"{path}: not an lm-eval results file ({_shown(str(exc))[1:-1]}); "
                        f"{fix}") from None
    if not isinstance(data, dict):
        raise DataError(f"{path}: holds no JSON object, as lm-eval's results files do; {fix}")
    configs = data.get("configs") if isinstance(data.get("configs"), dict) else {}
    shots = dict.fromkeys(configs)
    for task, config in configs.items():
        if isinstance(config, dict):
            shots[task] = _whole(config.get("num_fewshot"))
    if isinstance(data.get("n-shot"), dict):
        for task, value in data["n-shot"].items():
            if (whole := _whole(value)) is not None or task not in shots:
                shots[task] = whole
    return shots


def _whole(value: Any) -> int | None:
    """A whole number of shots (lm-eval writes ints; an integer string is taken too)."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 10:
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def task_of(file: Path) -> str:
    """The task of a ``samples_<task>_<timestamp>.jsonl`` file name."""
    return name_parts(file)[0]


def name_parts(file: Path) -> tuple[str, str]:
    """(task, timestamp) of a sample file's name; the timestamp is "" when absent, and a
    name not of the ``samples_<task>_<timestamp>.jsonl`` form gives its stem without
    ``samples_`` as the task."""
    match = _FILE_NAME.fullmatch(file.name)
    if match is None:
        return file.stem.removeprefix("samples_"), ""
    return match["task"], match["stamp"] or ""


def _merge_order(files: list[Path]) -> list[Path]:
    """By task, then oldest first; the harness's timestamps sort as text."""
    return sorted(files, key=lambda f: (*name_parts(f), f.name))


def holds_lm_eval_samples(path: str | Path) -> bool:
    """True for a ``.jsonl`` file, or a folder with sample files in it or in a subfolder."""
    path = Path(path)
    if path.is_file():
        return path.suffix == ".jsonl"
    return path.is_dir() and (
        any(path.glob(SAMPLES_GLOB)) or any(path.glob(f"*/{SAMPLES_GLOB}")))


def lm_eval_files(path: str | Path) -> LmEvalFiles:
    """The sample files of each model under `path`, in the order the loader merges them.

    `path` is a single file (its model is its folder's name), one model's folder (it
    holds sample files itself), or a folder with one subfolder per model (the harness's
    ``--output_path``). Subfolders without sample files are ignored; those whose names
    start with ``.`` are skipped and named in `hidden`.

    Raises
    ------
    DataError
        When `path` does not exist or holds no sample files.
    """
    path = Path(path)
    if path.is_file():
        return LmEvalFiles({path.resolve().parent.name: [path]})
    if not path.is_dir():
        from mdad.data.files import missing_reason

        raise DataError(f"{path}: {missing_reason(path)}; pass an lm-eval --output_path "
                        "folder or one of its samples_*.jsonl files")
    own = sorted(path.glob(SAMPLES_GLOB))
    subfolders = sorted(p for p in path.iterdir() if p.is_dir())
    if own:
        nested = [sub.name for sub in subfolders
                  if not sub.name.startswith(".") and _holds_samples_below(sub)]
        return LmEvalFiles({path.resolve().name: _merge_order(_regular(own))}, nested=nested)
    models: dict[str, list[Path]] = {}
    hidden: list[str] = []
    nested: list[str] = []
    empty: list[str] = []
    for sub in subfolders:
        files = list(sub.glob(SAMPLES_GLOB))
        if files and sub.name.startswith("."):
            hidden.append(sub.name)
        elif files:
            models[sub.name] = _merge_order(_regular(files))
        elif not sub.name.startswith("."):
            (nested if _holds_samples_below(sub) else empty).append(sub.name)
    found = LmEvalFiles(models, hidden, nested, empty)
    if not found.models:
        skipped = (f" (only in the skipped hidden folders {found.hidden})" if found.hidden
                   else f" (only deeper, in {listed(found.nested)})" if found.nested else "")
        raise DataError(
            f"{path}: no {SAMPLES_GLOB} files, neither in it nor in its subdirectories"
            f"{skipped}; point at the --output_path of lm-eval --log_samples (one "
            "subdirectory per model)"
        )
    return found


def _regular(files: list[Path]) -> list[Path]:
    """`files`, or a DataError naming the first that is no regular file: a pipe named
    like a samples file would block the read, a link to /dev/zero never end it."""
    from mdad.data.files import not_a_file

    for file in files:
        if not file.is_file():
            raise DataError(f"{file}: {not_a_file(file)}, named like an lm-eval samples "
                            "file; remove it or rename it")
    return files


def _holds_samples_below(folder: Path) -> bool:
    return next(folder.rglob(SAMPLES_GLOB), None) is not None


def _files_by_task(files: list[Path], tasks: set[str] | None) -> dict[str, list[Path]]:
    """A model's files grouped by task (oldest first), keeping only `tasks` if given."""
    grouped: dict[str, list[Path]] = {}
    for file in files:
        task = task_of(file)
        if tasks is None or task in tasks:
            grouped.setdefault(task, []).append(file)
    return grouped


def merge_task_scores(parts: list[TaskScores]) -> TaskScores:
    """One task's scores from several files, oldest first: a later file wins per doc
    (keeping the doc's first position); one part is returned as it is. The metric is
    the parts' one, or theirs joined by "/" when they differ."""
    if len(parts) == 1:
        return parts[0]
    latest: dict[str, tuple[int, int]] = {}  # doc -> (part, position in it)
    for k, part in enumerate(parts):
        for j, doc in enumerate(part.doc_ids):
            latest[doc] = (k, j)
    scores = np.array([parts[k].scores[j] for k, j in latest.values()], dtype=np.float64)
    confidence = np.array([parts[k].confidence[j] for k, j in latest.values()],
                          dtype=np.float64)
    metrics = {part.metric for part in parts}
    metric = metrics.pop() if len(metrics) == 1 else "/".join(sorted(metrics))
    return TaskScores(list(latest), scores, confidence, metric)


def _loglikelihoods(record: dict[str, Any]) -> list[float] | None:
    """One log-likelihood per option, or None for generated text."""
    resps = record.get("filtered_resps", record.get("resps"))
    if not isinstance(resps, list) or not resps:
        return None
    values = []
    for resp in resps:
        if isinstance(resp, list) and len(resp) == 1 and isinstance(resp[0], list):
            resp = resp[0]  # `resps` nests each option's [loglikelihood, is_greedy] once more
        if not isinstance(resp, list) or len(resp) != 2:
            return None
        try:
            values.append(float(resp[0]))
        except OverflowError:  # an integer beyond float's range, as "1e999" gives inf
            values.append(math.inf)
        except (TypeError, ValueError):
            return None
    return values


def _continuations(record: dict[str, Any]) -> list[str]:
    args = record.get("arguments")
    if isinstance(args, dict):
        pairs = [args[key] for key in sorted(args, key=lambda k: (len(k), k))]
        return [_text(p.get("arg_1", "")) if isinstance(p, dict) else "" for p in pairs]
    if isinstance(args, list):
        return [_text(p[1]) if isinstance(p, list) and len(p) > 1 else "" for p in args]
    return []


def _text(value: Any) -> str:
    """A scalar as stripped text, "" for anything else (str() of a deeply nested list
    could exceed the recursion limit; the harness writes text here)."""
    return str(value).strip() if isinstance(value, str | int | float) else ""


def _gold_index(record: dict[str, Any], n_options: int) -> int:
    """Index of the gold option, or -1 when it cannot be told."""
    target = record.get("target")
    if isinstance(target, int) and not isinstance(target, bool) and 0 <= target < n_options:
        return target
    if isinstance(target, str):
        text = target.strip()
        # (a long digit string would exceed int()'s digit limit, and no option's index)
        if text.isascii() and text.isdigit() and len(text) < 10 and int(text) < n_options:
            return int(text)
        hits = [k for k, cont in enumerate(_continuations(record)) if cont == text]
        if len(hits) == 1 and hits[0] < n_options:
            return hits[0]
        letter = _LETTER.fullmatch(text)
        if letter and ord(letter[1]) - ord("A") < n_options:
            return ord(letter[1]) - ord("A")
    doc = record.get("doc")
    if isinstance(doc, dict):
        for key in ("answer", "gold", "label"):
            value = _text(doc.get(key, ""))
            if len(value) > 10 or not _INTEGER.fullmatch(value):
                continue
            # Winogrande's answer is "1" or "2", naming option1 or option2.
            index = int(value) - (key == "answer" and "option1" in doc and "option2" in doc)
            if 0 <= index < n_options:
                return index
    return -1


def _gold_softmax(flat: list[float], counts: list[int], gold: list[int]) -> np.ndarray:
    """Softmax probability of each gold option over its item's options, float64."""
    values = np.asarray(flat, dtype=np.float64)
    sizes = np.asarray(counts, dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    peak = np.maximum.reduceat(values, starts)
    weights = np.exp(values - np.repeat(peak, sizes))
    total = np.add.reduceat(weights, starts)
    return weights[starts + np.asarray(gold)] / total


def _shown(value: Any) -> str:
    """repr(value), cut short (long text, deep or long lists), so that a message stays
    one short line whatever a record holds."""
    return _SHORT_REPR.repr(value)


def _parse(line: str, path: Path, n: int) -> tuple[dict[str, Any], str]:
    try:
        record = json.loads(line)
    except ValueError as exc:  # JSONDecodeError, or an integer beyond int()'s digit limit
        raise DataError(f"{path}: line {n}: not valid JSON ({_shown(str(exc))[1:-1]}); "
                        "fix or remove that line, or re-run lm-eval with --log_samples"
                        ) from None
    except RecursionError:
        raise DataError(f"{path}: line {n}: JSON nested too deeply to read; no lm-eval record "
                        "is; fix or remove that line") from None
    if not isinstance(record, dict) or "doc_id" not in record:
        raise DataError(f"{path}: line {n}: a record without 'doc_id'; every line must be one "
                        "lm-eval sample record, as written by --log_samples")
    doc = record["doc_id"]
    if (isinstance(doc, bool) or not isinstance(doc, int | str)
            or (isinstance(doc, int) and not -_MAX_DOC_INDEX < doc < _MAX_DOC_INDEX)
            or (isinstance(doc, str) and not _usable_id(doc))):
        raise DataError(f"{path}: line {n}: doc_id is {_shown(doc)}; lm-eval writes the "
                        "document's index, a whole number: fix that record or re-run the task")
    return record, str(doc)


def _usable_id(doc: str) -> bool:
    """Text that can name an item: not blank, not too long, printable (no control
    characters or lone surrogates, which a terminal or a saved file cannot take)."""
    return len(doc) <= _MAX_DOC_ID_CHARS and doc.isprintable() and bool(doc.strip())


def _metric_key(record: dict[str, Any], metric: str, path: Path, n: int,
                fallback: bool) -> str:
    """The field to score by: `metric`, or exact_match for a generative task's records
    when acc/acc_norm is asked and `fallback` allows it."""
    if metric in record:
        return metric
    if metric in _CHOICE_METRICS and "exact_match" in record and _loglikelihoods(record) is None:
        if fallback:
            return "exact_match"
        raise DataError(f"{path}: line {n}: these records hold only exact_match (a "
                        f"generative task's), no {metric!r}, which is what is measured; run "
                        "the model on the multiple-choice task, or use a micro-benchmark or "
                        "test measured by --metric exact_match", parameters=("metric",))
    raise _missing_metric(record, metric, path, n)


def _missing_metric(record: dict[str, Any], metric: str, path: Path, n: int) -> DataError:
    metrics = record.get("metrics")
    present = [k for k in metrics if isinstance(k, str)] if isinstance(metrics, list) else [
        k for k in record if k not in _NON_METRIC_FIELDS]
    more = f" and {len(present) - 10} more" if len(present) > 10 else ""
    return DataError(f"{path}: line {n}: no {_shown(metric)} field; the records of task "
                     f"{task_of(path)} have [{', '.join(_shown(k) for k in present[:10])}]"
                     f"{more}; choose one of them as metric, or pass the results of the task "
                     "you meant", parameters=("metric",))


def _score(record: dict[str, Any], key: str, path: Path, n: int) -> float:
    """The record's `key` as a score in [0, 1]."""
    if key not in record:
        raise _missing_metric(record, key, path, n)
    try:
        score = float(record[key])
    except (TypeError, ValueError, OverflowError):
        score = np.nan
    if not 0.0 <= score <= 1.0:  # NaN too: JSON's NaN is no missing answer
        raise DataError(f"{path}: line {n}: {key} is {_shown(record[key])}, not a score in "
                        "[0, 1]; fix that record, or choose another --metric")
    return score


def _filter_of(record: dict[str, Any], path: Path, n: int) -> str | None:
    """The record's filter name (the harness writes one per pass), None when absent."""
    name = record.get("filter")
    if name is None or isinstance(name, str):
        return name
    raise DataError(f"{path}: line {n}: filter is {_shown(name)}; lm-eval writes the filter's "
                    "name; fix that record or re-run the task")


def _check_repeat(record: dict[str, Any], doc: str, expected: str, first_filter: str | None,
                  first_line: dict[str, int], path: Path, n: int) -> None:
    """Accept a record of a later filter pass: the same documents in the same order."""
    if doc == expected and (first_filter is None or _filter_of(record, path, n) != first_filter):
        return
    if doc in first_line:
        raise DataError(f"{path}: line {n}: doc_id {doc} appears again (first on line "
                        f"{first_line[doc]}); each document may appear once per filter; "
                        "remove the repeated record")
    raise DataError(f"{path}: line {n}: doc_id {doc} where the repeated pass over the "
                    f"documents (one per filter) expects doc_id {expected}; remove the "
                    "stray records or re-run the task")


def _check_unfiltered_repeat(record: dict[str, Any], doc: str, first: float, key: str,
                             first_line: int, path: Path, n: int) -> None:
    """Without a `filter` field a later pass cannot be told from a stray copy of the
    records: it is accepted when it agrees with the first pass, refused otherwise, as
    taking either score would be a guess."""
    score = _score(record, key, path, n)
    if score != first:
        raise DataError(
            f"{path}: line {n}: doc_id {doc} has {key} {score:g} here and {first:g} on "
            f"line {first_line}, and the records have no 'filter' field to tell lm-eval's "
            "passes (one per filter) from a stray copy; keep one pass, or add the harness's "
            "'filter' field to the records")


def _read_task(path: Path, metric: str, fallback_metric: bool = True,
               digests: dict[Path, str] | None = None) -> TaskScores:
    """Parse one samples file (see `read_task_lines`); with `digests`, record the sha256
    of the very bytes parsed there (a file rewritten meanwhile cannot be hashed as
    another than the one read)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        # map, not a generator: it keeps no reference to a line while it is parsed
        lines = map(lambda line: (digest.update(line), line)[1], _capped_lines(handle))
        scores = read_task_lines(lines, path, metric, fallback_metric=fallback_metric)
        for block in iter(partial(handle.read, 1 << 20), b""):  # none, once all is parsed
            digest.update(block)
    if digests is not None:
        digests[path] = digest.hexdigest()
    return scores


def _capped_lines(handle: Any) -> Iterator[bytes]:
    """A binary file's lines, none read beyond ``MAX_LINE_BYTES + 1`` bytes: a longer
    line comes out cut there, and `read_task_lines` refuses it, without having held
    more of it. The buffered readline is linear in the line's length, and this iterator
    keeps no reference to a line it has handed out (a generator's local would keep it
    alive while the line is parsed)."""
    return iter(partial(handle.readline, MAX_LINE_BYTES + 1), b"")


def read_task_lines(lines: Iterable[bytes], path: Path | str, metric: str, *,
                    fallback_metric: bool = True) -> TaskScores:
    """Parse one samples file's lines (raw bytes, as a file or a stream yields them),
    keeping only each record's doc_id, `metric` and option log-likelihoods; `path`
    names the file in errors.

    Records of a generative task (no ``acc``/``acc_norm``, no option log-likelihoods)
    are scored by ``exact_match`` when `metric` is ``acc`` or ``acc_norm`` and
    `fallback_metric` is true; the result's `metric` then says ``exact_match``. With
    `fallback_metric` false such records raise a DataError instead.

    The harness writes one full pass over the documents per filter (gsm8k: strict-match,
    then flexible-extract); the first pass is used and later ones are only checked. When
    the records carry no ``filter`` field (older harness versions), a later pass cannot
    be told from a stray copy: it is accepted when its scores agree with the first pass's
    and refused otherwise.

    Time and memory are linear in the input: a line is decoded and parsed once, and held
    about twice over while it is (its text and the record parsed from it). A line longer
    than `MAX_LINE_BYTES` is refused; pass lines cut at ``MAX_LINE_BYTES + 1`` bytes (as
    ``readline(MAX_LINE_BYTES + 1)`` does) so that none is held whole.

    Raises
    ------
    DataError
        One line naming `path` and the line, for anything that is not an lm-eval sample
        record as described: whatever the bytes, no other exception comes out.
    """
    path = Path(path)
    doc_ids: list[str] = []
    first_line: dict[str, int] = {}
    scores: list[float] = []
    flat: list[float] = []
    counts: list[int] = []
    gold: list[int] = []
    rows: list[int] = []
    key: str | None = None
    first_filter: str | None = None
    repeats = 0  # records after the first pass
    n = 0
    # no enumerate(): its reused result tuple would keep the previous line's bytes alive
    lines = iter(lines)
    while (raw := next(lines, None)) is not None:
        n += 1
        if len(raw) > MAX_LINE_BYTES:
            cap = (f"{MAX_LINE_BYTES // 2**20} MiB" if MAX_LINE_BYTES % 2**20 == 0
                   else f"{MAX_LINE_BYTES} bytes")
            raise DataError(f"{path}: line {n} is longer than {cap}, the most one record may "
                            "take (MAX_LINE_BYTES); no lm-eval record is that long: pass the "
                            "samples files lm-eval wrote")
        line = _decode(raw, path, n)
        raw = None  # decoded: only the text is needed now
        if not line or line.isspace():  # (strip() would copy a long line)
            continue
        record, doc = _parse(line, path, n)
        line = None
        if repeats or doc in first_line:
            position = repeats % len(doc_ids)
            _check_repeat(record, doc, doc_ids[position], first_filter, first_line, path, n)
            if first_filter is None:
                _check_unfiltered_repeat(record, doc, scores[position], str(key),
                                         first_line[doc], path, n)
            repeats += 1
            continue
        record_filter = _filter_of(record, path, n)
        if key is None:
            key, first_filter = _metric_key(record, metric, path, n, fallback_metric), record_filter
        scores.append(_score(record, key, path, n))
        first_line[doc] = n
        lls = _loglikelihoods(record)
        if lls and not np.isfinite(lls).all():
            bad = next(v for v in lls if not np.isfinite(v))
            raise DataError(f"{path}: line {n}: an option's log-likelihood is {bad}, so its "
                            "confidence is unknown; fix that record or re-run the task")
        if lls and (index := _gold_index(record, len(lls))) >= 0:
            rows.append(len(doc_ids))
            flat.extend(lls)
            counts.append(len(lls))
            gold.append(index)
        doc_ids.append(doc)
    if not doc_ids:
        raise DataError(f"{path}: no records; remove the empty file or re-run the task")
    if repeats % len(doc_ids):
        raise DataError(f"{path}: the records after line {max(first_line.values())} repeat the "
                        f"documents only partly ({repeats} of a multiple of {len(doc_ids)}); "
                        "the file looks truncated, re-run the task")
    confidence = np.full(len(doc_ids), np.nan)
    if rows:
        confidence[rows] = _gold_softmax(flat, counts, gold)
    return TaskScores(doc_ids, np.asarray(scores, dtype=np.float64), confidence, key or "")


def _decode(raw: bytes, path: Path, line: int) -> str:
    """One line as UTF-8 text, as the harness writes it."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        kind = " (gzip-compressed?)" if raw.startswith(b"\x1f\x8b") else ""
        raise DataError(f"{path}: line {line} is not UTF-8 text{kind}; pass the .jsonl files "
                        "lm-eval wrote, uncompressed") from None


def _no_such_task(path: Path, wanted: list[str], present: list[str]) -> DataError:
    """No file of the wanted tasks: name both sides, long lists shortened."""
    def shown(names: list[str]) -> str:
        return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")

    noun = "task" if len(wanted) == 1 else "tasks"
    return DataError(f"{path}: no samples of {noun} {shown(wanted)}; these results hold "
                     f"tasks {shown(present)} (another benchmark?); pass the --log_samples "
                     f"output of lm-eval run --tasks {','.join(wanted[:5])}"
                     f"{',...' if len(wanted) > 5 else ''}")


def _sorted_docs(doc_ids: set[str]) -> list[str]:
    if all(_INTEGER.fullmatch(d) for d in doc_ids):
        return sorted(doc_ids, key=int)
    return sorted(doc_ids)


def load_lm_eval_samples(path: str | Path, *, metric: str = "acc",
                         tasks: Collection[str] | None = None, fallback_metric: bool = True,
                         allow_mixed_settings: bool = False) -> ResponseMatrix:
    """Read lm-evaluation-harness ``--log_samples`` files of one or more models.

    Parameters
    ----------
    path : str or Path
        A directory with one subdirectory per model (the harness's ``--output_path``),
        one model's directory, or a single ``samples_<task>_<timestamp>.jsonl`` file.
        Open LLM Leaderboard v2 details (``samples_leaderboard_<task>_...``) work alike.
        The model name is the subdirectory's name, else the directory's own name.
    metric : str
        The per-record field holding the score, e.g. ``acc``, ``acc_norm``,
        ``exact_match``. Files of generative tasks, which have no ``acc`` or
        ``acc_norm``, are scored by ``exact_match`` when `metric` is one of those two
        and `fallback_metric` is true; the matrix's `notes` then say which files.
    tasks : collection of str, optional
        Read only the files of these tasks (e.g. a micro-benchmark's); models without
        any of them are left out. Default: every task.
    fallback_metric : bool
        Allow the ``exact_match`` substitution above (the study's reading of a mix of
        multiple-choice and generative tasks). False for a measurement that is defined
        by `metric` (a micro-benchmark, an adaptive test): such records then raise.
    allow_mixed_settings : bool
        Read files whose runs differ in n-shot (see Raises); the matrix's `notes`
        then say how. Default False: such files raise.

    Returns
    -------
    ResponseMatrix
        Correctness of shape (n_models, n_items); models sorted by name; items
        ``"<task>/<doc_id>"`` sorted by task, then doc_id (numerically when integers);
        subtask = task. A model without an item has NaN there. `confidence` is the
        softmax over the options' log-likelihoods at the gold option, NaN for
        generative items or an unresolvable gold option, None when no item has one.
        `sha256` covers every samples file read (not the results files).
        `read_lm_eval_samples` returns the settings too.

    Notes
    -----
    When a model has several files of one task (e.g. after a ``--samples`` re-run into
    the same ``--output_path``), they are merged by doc_id, and for a doc in several
    files the one with the latest timestamp in its name wins; `lm_eval_files` lists
    the files. A file with one pass over its documents per filter (the harness's
    layout for e.g. gsm8k) is read from its first pass. Subdirectories without sample
    files of their own, and those whose names start with ``.``, are not read; the
    matrix's `notes` name them (see `LmEvalFiles`), and the models `tasks` left out.

    Each samples file's n-shot is read from the ``results_<timestamp>.json`` lm-eval
    wrote beside it in the same run. Without one (samples copied alone) the n-shot is
    unknown: nothing is refused, and `LmEvalSettings` says so.

    Raises
    ------
    DataError
        Naming file and line, for invalid JSON, a record without ``doc_id``, a doc_id
        repeated within a pass, a missing or non-numeric metric, records holding only
        ``exact_match`` when `metric` is ``acc`` or ``acc_norm`` and `fallback_metric`
        is false; or no sample files, or none of `tasks`; or a results file that cannot
        be read. Unless `allow_mixed_settings`: when the known n-shot values of the
        files read differ, within a model (its tasks, or the runs of one task merged)
        or between models ("mixed lm-eval settings: ...").
    """
    return read_lm_eval_samples(path, metric=metric, tasks=tasks,
                                fallback_metric=fallback_metric,
                                allow_mixed_settings=allow_mixed_settings).matrix


@dataclass(frozen=True)
class LmEvalSamples:
    """What `read_lm_eval_samples` read: the matrix, and the settings its files ran with."""

    matrix: ResponseMatrix
    settings: LmEvalSettings


def read_lm_eval_samples(path: str | Path, *, metric: str = "acc",
                         tasks: Collection[str] | None = None, fallback_metric: bool = True,
                         allow_mixed_settings: bool = False) -> LmEvalSamples:
    """`load_lm_eval_samples`, with the settings (n-shot, metric) of the files read.

    Raises
    ------
    DataError
        As `load_lm_eval_samples`.
    """
    path = Path(path)
    found = lm_eval_files(path)
    wanted = None if tasks is None else set(tasks)
    grouped = {model: by_task for model, files in found.models.items()
               if (by_task := _files_by_task(files, wanted))}
    if not grouped:
        raise _no_such_task(path, sorted(wanted or ()), found.tasks())
    n_shot, without_results = _n_shots(grouped)
    mixed = LmEvalSettings(n_shot).mixed()
    if mixed and not allow_mixed_settings:  # before the samples are parsed: at once
        raise DataError(f"{path}: mixed lm-eval settings: {mixed} (their results_*.json), "
                        "so the answers are not one measurement; re-run lm-eval with one "
                        "--num_fewshot for them all, or pass allow_mixed_settings to use "
                        "them as they are", parameters=("allow_mixed_settings",))
    digests: dict[Path, str] = {}  # of the files read, as they were parsed
    per_model = {model: {task: merge_task_scores([_read_task(f, metric, fallback_metric,
                                                             digests) for f in group])
                         for task, group in by_task.items()}
                 for model, by_task in grouped.items()}
    notes = found.notes()
    if fallback := _fallback_note(per_model, metric):
        notes.append(fallback)
    if without_tasks := sorted(set(found.models) - set(grouped)):
        notes.append(f"{len(without_tasks)} model(s) with no file of the tasks "
                     f"{', '.join(sorted(wanted or ()))} left out: {listed(without_tasks)}")
    if mixed:
        notes.append(MIXED_NOTE + mixed)
    root = path if path.is_dir() else path.parent
    matrix = build_matrix(per_model, source=str(path), sha256=digests_sha256(digests, root),
                          notes=tuple(notes))
    metrics = {model: {task: part.metric for task, part in scores.items()}
               for model, scores in per_model.items()}
    return LmEvalSamples(matrix, LmEvalSettings(n_shot, metrics, without_results))


def _fallback_note(per_model: dict[str, dict[str, TaskScores]], metric: str) -> str:
    """A note naming the tasks scored by exact_match where `metric` was asked, or ""."""
    substituted = {(model, task) for model, scores in per_model.items()
                   for task, part in scores.items()
                   if any(used and used != metric for used in part.metric.split("/"))}
    if not substituted:
        return ""
    models = sorted({model for model, _ in substituted})
    tasks = sorted({task for _, task in substituted})
    return (f"{len(tasks)} task(s) without {metric} scored by exact_match instead (generative "
            f"records, no option log-likelihoods), for {len(models)} model(s): {listed(tasks)}")


def build_matrix(per_model: dict[str, dict[str, TaskScores]], *, source: str,
                 sha256: str | None = None, notes: tuple[str, ...] = ()) -> ResponseMatrix:
    """One matrix from each model's scores by task: models sorted by name, items
    ``"<task>/<doc_id>"`` sorted by task then doc_id, NaN where a model lacks an item."""
    models = sorted(per_model)
    task_names = sorted({task for scores in per_model.values() for task in scores})
    columns: dict[str, dict[str, int]] = {}
    item_ids: list[str] = []
    subtasks: list[str] = []
    for task in task_names:
        docs = _sorted_docs({d for s in per_model.values() if task in s for d in s[task].doc_ids})
        columns[task] = {doc: len(item_ids) + k for k, doc in enumerate(docs)}
        item_ids.extend(f"{task}/{doc}" for doc in docs)
        subtasks.extend([task] * len(docs))
    correctness = np.full((len(models), len(item_ids)), np.nan, dtype=np.float32)
    confidence = np.full_like(correctness, np.nan)
    for m, model in enumerate(models):
        for task, scores in per_model[model].items():
            cols = np.fromiter((columns[task][d] for d in scores.doc_ids), np.int64,
                               len(scores.doc_ids))
            correctness[m, cols] = scores.scores
            confidence[m, cols] = scores.confidence
    return ResponseMatrix(
        correctness, models, item_ids, subtasks,
        None if np.isnan(confidence).all() else confidence,
        source=source, sha256=sha256, notes=notes,
    )


def is_lm_eval_output(path: Path) -> bool:
    """Any folder (the paper's arrays are recognised first), or a ``.jsonl`` file."""
    return path.is_dir() or path.suffix == ".jsonl"


def _load(path: Path, *, metric: str | None = None, tasks: Collection[str] | None = None,
          allow_mixed_settings: bool = False) -> ResponseMatrix:
    return load_lm_eval_samples(path, metric=metric or "acc", tasks=tasks,
                                allow_mixed_settings=allow_mixed_settings)


LOADER = FileLoader(
    name="lm-eval",
    reads="lm-eval --log_samples output (a folder or a .jsonl file)",
    options=("metric", "tasks", "allow_mixed_settings"),
    recognise=is_lm_eval_output,
    read=_load,
)
