"""A summary of a response matrix, and of lm-eval results' settings, for `mdad data info`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mdad.data.files import listed
from mdad.data.lm_eval import LmEvalSettings, by_n_shot
from mdad.data.matrix import ResponseMatrix
from mdad.errors import check_type


@dataclass(frozen=True)
class DataInfo:
    """What a results matrix holds. Accuracies are fractions in [0, 1] over observed cells."""

    source: str
    sha256: str | None
    n_models: int
    n_items: int
    subtask_sizes: dict[str, int]
    min_accuracy: float
    max_accuracy: float
    mean_accuracy: float
    n_missing: int
    models_with_missing: int
    items_with_missing: int
    is_binary: bool
    has_confidence: bool


def describe(matrix: ResponseMatrix) -> DataInfo:
    """Summarise `matrix` (before any missing-data policy is applied)."""
    check_type(matrix, ResponseMatrix, "matrix", "a ResponseMatrix (read_results(path))")
    accuracy = matrix.accuracy()
    missing = matrix.missing
    sizes = np.bincount(matrix.subtask_codes, minlength=len(matrix.subtask_names))
    return DataInfo(
        source=matrix.source,
        sha256=matrix.sha256,
        n_models=matrix.n_models,
        n_items=matrix.n_items,
        subtask_sizes=dict(zip(matrix.subtask_names, sizes.tolist(), strict=True)),
        min_accuracy=float(accuracy.min()),
        max_accuracy=float(accuracy.max()),
        mean_accuracy=float(accuracy.mean()),
        n_missing=int(missing.sum()),
        models_with_missing=int(missing.any(axis=1).sum()),
        items_with_missing=int(missing.any(axis=0).sum()),
        is_binary=matrix.is_binary,
        has_confidence=matrix.confidence is not None,
    )


def settings_lines(settings: LmEvalSettings) -> list[str]:
    """The n-shot and the metric of lm-eval results, one line each, e.g. ``n-shot: 0 (3
    tasks)`` or ``n-shot: 0 for mmlu_a; 5 for mmlu_b``; tasks are grouped when every
    model ran a task alike, else models are. Unknown n-shot says why: no results file
    beside the samples, or one that does not give the task's n-shot."""
    known = settings.known()
    tasks = sorted({task for per_task in known.values() for task in per_task})
    per_task = {task: {model: shots[task] for model, shots in known.items() if task in shots}
                for task in tasks}
    if all(len(set(runs.values())) == 1 for runs in per_task.values()):
        shots = {task: next(iter(runs.values())) for task, runs in per_task.items()}
    else:  # models differ on a task: by model
        shots = {model: tuple(sorted({v for vs in per_model.values() for v in vs}))
                 for model, per_model in known.items()}
    n_shot = (_one_value(shots, len(tasks), len(known)) if len(set(shots.values())) == 1
              else by_n_shot(shots))
    unknown = sorted(model for model, per_model in settings.n_shot.items()
                     if any(None in values for values in per_model.values()))
    if unknown and not any(known[m][t] for m in known for t in known[m]):
        n_shot = ("unknown (no results_*.json)" if set(unknown) <= set(settings.without_results)
                  else "unknown (not given by the results_*.json)")
    elif unknown:
        absent = [model for model in unknown if model in settings.without_results]
        why = [f"no results_*.json beside the samples of {len(absent)} model(s): "
               f"{listed(absent)}" if absent else "",
               "not given by the results_*.json of "
               f"{listed([m for m in unknown if m not in absent])}"
               if len(absent) < len(unknown) else ""]
        n_shot += f" (unknown: {'; '.join(filter(None, why))})"
    metrics = {task: "/".join(sorted({settings.metric[model][task] for model in settings.metric
                                      if task in settings.metric[model]}))
               for task in tasks}
    metric = (f"{next(iter(metrics.values()))} ({_count(len(tasks), 'task')})"
              if len(set(metrics.values())) == 1 else
              "; ".join(f"{name} for {listed(sorted(t for t in tasks if metrics[t] == name))}"
                        for name in sorted(set(metrics.values()))))
    return [f"n-shot: {n_shot}", f"metric: {metric}"]


def _one_value(shots: dict[str, tuple[int, ...]], n_tasks: int, n_models: int) -> str:
    value = " and ".join(map(str, next(iter(shots.values())))) or "unknown"
    models = f", {_count(n_models, 'model')}" if n_models > 1 else ""
    return f"{value} ({_count(n_tasks, 'task')}{models})"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"
