"""lm-evaluation-harness ``--log_samples`` output: one JSON record per model, task and item."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mdad.data.files import files_sha256
from mdad.data.matrix import ResponseMatrix
from mdad.errors import DataError

SAMPLES_GLOB = "samples_*.jsonl"
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
class _TaskScores:
    """One model's scores on one task, in file order."""

    doc_ids: list[str]
    scores: np.ndarray  # float64, (n_docs,)
    confidence: np.ndarray  # float64, (n_docs,), NaN where unknown


def _sample_files(path: Path) -> list[tuple[str, list[Path]]]:
    """(model name, sample files) pairs for the three accepted layouts."""
    if path.is_file():
        return [(path.resolve().parent.name, [path])]
    if not path.is_dir():
        raise DataError(f"{path}: no such file or directory")
    own = sorted(path.glob(SAMPLES_GLOB))
    if own:
        return [(path.resolve().name, own)]
    models = [
        (sub.name, files)
        for sub in sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
        if (files := sorted(sub.glob(SAMPLES_GLOB)))
    ]
    if not models:
        raise DataError(
            f"{path}: no {SAMPLES_GLOB} files, neither in it nor in its subdirectories; point at "
            "the --output_path of lm-eval --log_samples (one subdirectory per model)"
        )
    return models


def _latest_per_task(files: list[Path]) -> dict[str, Path]:
    """The newest file of each task; timestamps sort as text in the harness's format."""
    latest: dict[str, tuple[str, Path]] = {}
    for file in files:
        match = _FILE_NAME.fullmatch(file.name)
        task, stamp = (match["task"], match["stamp"] or "") if match else (file.stem[8:], "")
        if task not in latest or stamp > latest[task][0]:
            latest[task] = (stamp, file)
    return {task: file for task, (_, file) in latest.items()}


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
        except (TypeError, ValueError):
            return None
    return values


def _continuations(record: dict[str, Any]) -> list[str]:
    args = record.get("arguments")
    if isinstance(args, dict):
        pairs = [args[key] for key in sorted(args, key=lambda k: (len(k), k))]
        return [str(p.get("arg_1", "")).strip() if isinstance(p, dict) else "" for p in pairs]
    if isinstance(args, list):
        return [str(p[1]).strip() if isinstance(p, list) and len(p) > 1 else "" for p in args]
    return []


def _gold_index(record: dict[str, Any], n_options: int) -> int:
    """Index of the gold option, or -1 when it cannot be told."""
    target = record.get("target")
    if isinstance(target, int) and not isinstance(target, bool) and 0 <= target < n_options:
        return target
    if isinstance(target, str):
        text = target.strip()
        if text.isascii() and text.isdigit() and int(text) < n_options:
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
            value = str(doc.get(key, "")).strip()
            if not _INTEGER.fullmatch(value):
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


def _parse(line: str, path: Path, n: int) -> tuple[dict[str, Any], str]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: line {n}: not valid JSON ({exc}); fix or remove that line, "
                        "or re-run lm-eval with --log_samples") from None
    if not isinstance(record, dict) or "doc_id" not in record:
        raise DataError(f"{path}: line {n}: a record without 'doc_id'; every line must be one "
                        "lm-eval sample record, as written by --log_samples")
    return record, str(record["doc_id"])


def _metric_key(record: dict[str, Any], metric: str, path: Path, n: int) -> str:
    if metric in record:
        return metric
    if metric in _CHOICE_METRICS and "exact_match" in record and _loglikelihoods(record) is None:
        return "exact_match"
    raise _missing_metric(record, metric, path, n)


def _missing_metric(record: dict[str, Any], metric: str, path: Path, n: int) -> DataError:
    metrics = record.get("metrics")
    present = metrics if isinstance(metrics, list) else [
        k for k in record if k not in _NON_METRIC_FIELDS]
    return DataError(f"{path}: line {n}: no {metric!r} field; the records have {present}; "
                     "choose one of them with --metric")


def _check_repeat(record: dict[str, Any], doc: str, expected: str, first_filter: Any,
                  first_line: dict[str, int], path: Path, n: int) -> None:
    """Accept a record of a later filter pass: the same documents in the same order."""
    if doc == expected and (first_filter is None or record.get("filter") != first_filter):
        return
    if doc in first_line:
        raise DataError(f"{path}: line {n}: doc_id {doc} appears again (first on line "
                        f"{first_line[doc]}); each document may appear once per filter; "
                        "remove the repeated record")
    raise DataError(f"{path}: line {n}: doc_id {doc} where the repeated pass over the documents "
                    f"(one per filter) expects doc_id {expected}; remove the stray records or "
                    "re-run the task")


def _read_task(path: Path, metric: str) -> _TaskScores:
    """Parse one samples file.

    The harness writes one full pass over the documents per filter (gsm8k: strict-match,
    then flexible-extract); the first pass is used and later ones are only checked.
    """
    doc_ids: list[str] = []
    first_line: dict[str, int] = {}
    scores: list[float] = []
    flat: list[float] = []
    counts: list[int] = []
    gold: list[int] = []
    rows: list[int] = []
    key = first_filter = None
    repeats = 0  # records after the first pass
    with open(path, encoding="utf-8") as handle:
        for n, line in enumerate(handle, 1):
            if not line.strip():
                continue
            record, doc = _parse(line, path, n)
            if repeats or doc in first_line:
                _check_repeat(record, doc, doc_ids[repeats % len(doc_ids)], first_filter,
                              first_line, path, n)
                repeats += 1
                continue
            if key is None:
                key, first_filter = _metric_key(record, metric, path, n), record.get("filter")
            if key not in record:
                raise _missing_metric(record, key, path, n)
            try:
                scores.append(float(record[key]))
            except (TypeError, ValueError):
                raise DataError(f"{path}: line {n}: {key} is {record[key]!r}, not a number; "
                                "fix that record") from None
            first_line[doc] = n
            lls = _loglikelihoods(record)
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
    return _TaskScores(doc_ids, np.asarray(scores, dtype=np.float64), confidence)


def _sorted_docs(doc_ids: set[str]) -> list[str]:
    if all(_INTEGER.fullmatch(d) for d in doc_ids):
        return sorted(doc_ids, key=int)
    return sorted(doc_ids)


def load_lm_eval_samples(path: str | Path, *, metric: str = "acc") -> ResponseMatrix:
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
        ``acc_norm``, are scored by ``exact_match`` when `metric` is one of those two.

    Returns
    -------
    ResponseMatrix
        Correctness of shape (n_models, n_items); models sorted by name; items
        ``"<task>/<doc_id>"`` sorted by task, then doc_id (numerically when integers);
        subtask = task. A model without an item has NaN there. `confidence` is the
        softmax over the options' log-likelihoods at the gold option, NaN for
        generative items or an unresolvable gold option, None when no item has one.

    Notes
    -----
    When a model has several files of one task, the one with the latest timestamp is
    used. A file with one pass over its documents per filter (the harness's layout
    for e.g. gsm8k) is read from its first pass. Subdirectories without sample files
    are skipped.

    Raises
    ------
    DataError
        Naming file and line, for invalid JSON, a record without ``doc_id``, a doc_id
        repeated within a pass, a missing or non-numeric metric, or no sample files.
    """
    path = Path(path)
    per_model: dict[str, dict[str, _TaskScores]] = {}
    used: list[Path] = []
    for model, files in _sample_files(path):
        chosen = _latest_per_task(files)
        per_model[model] = {task: _read_task(file, metric) for task, file in chosen.items()}
        used.extend(chosen.values())
    models = sorted(per_model)
    tasks = sorted({task for scores in per_model.values() for task in scores})
    columns: dict[str, dict[str, int]] = {}
    item_ids: list[str] = []
    subtasks: list[str] = []
    for task in tasks:
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
    root = path if path.is_dir() else path.parent
    return ResponseMatrix(
        correctness, models, item_ids, subtasks,
        None if np.isnan(confidence).all() else confidence,
        source=str(path), sha256=files_sha256(used, root),
    )
