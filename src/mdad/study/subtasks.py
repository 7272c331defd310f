"""The paper's separate-subtasks analysis: every subtask is a benchmark of its own.

Each subtask's micro-benchmarks are selected and evaluated inside it, with sizes that
are fractions of its seen pool. Every run keeps the whole study's design (targets,
sources, and the seen/unseen split, which is drawn inside each subtask anyway), so
per-subtask and whole-benchmark micro-benchmarks are compared on the same models and
items; each subtask's selections draw from random streams of their own. MDAD is
reported per subtask and pooled: pairs from all subtasks in one agreement curve, as
the reference code's separate-subtasks results do.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from mdad.data.matrix import ResponseMatrix
from mdad.defaults import PAPER_FRACTIONS
from mdad.errors import ConfigError, check_fractions
from mdad.study.config import StudyConfig, StudyDefaults, StudyPlan, plan_study
from mdad.study.design import seen_pool_size
from mdad.study.evaluation import StudyTables, evaluate
from mdad.study.folder import POOLED
from mdad.study.records import StudyResult


@dataclass(frozen=True, eq=False)
class SubtaskStudy:
    """One subtask's part of a per-subtask study: the whole `matrix` and a plan
    limited to the subtask's items (see `StudyPlan.items`)."""

    name: str
    matrix: ResponseMatrix
    plan: StudyPlan


def fraction_sizes(pool_size: int, fractions: tuple[float, ...], subtask: str) -> tuple[int, ...]:
    """Items per micro-benchmark: round(fraction * seen pool), at least 1.

    Raises
    ------
    ConfigError
        When `fractions` are not distinct fractions in (0, 1] (`check_fractions`), or
        two give the same size.
    """
    check_fractions(fractions)
    if pool_size < 1:
        raise ConfigError(f"subtask {subtask!r} has no seen items (it has fewer than 2 items); "
                          "per_subtask needs at least 2 items in every subtask",
                          parameters=("per_subtask",))
    sizes = tuple(max(1, round(f * pool_size)) for f in fractions)
    if len(set(sizes)) != len(sizes):
        raise ConfigError(
            f"subtask {subtask!r} has {pool_size} seen items, too few for fractions "
            f"{','.join(map(str, fractions))} (two give the same size: "
            f"{','.join(map(str, sizes))}); pass fewer, larger fractions",
            parameters=("fractions",))
    return sizes


def plan_per_subtask(matrix: ResponseMatrix, config: StudyConfig,
                     fractions: tuple[float, ...] = PAPER_FRACTIONS, *,
                     defaults: StudyDefaults | None = None) -> list[SubtaskStudy]:
    """Validate one study per subtask, unset counts from `defaults` (see `plan_study`);
    `config.sizes` must be None (sizes come from `fractions`)."""
    if config.sizes is not None:
        raise ConfigError("sizes does not apply with per_subtask; use fractions",
                          parameters=("sizes", "per_subtask", "fractions"))
    check_fractions(fractions)
    studies = []
    for code, name in enumerate(matrix.subtask_names):
        items = np.flatnonzero(matrix.subtask_codes == code)
        sub = matrix.take(items=items)
        pool = seen_pool_size(sub.subtask_codes)
        sizes = fraction_sizes(pool, fractions, str(name))
        plan = plan_study(sub, replace(config, sizes=sizes), defaults=defaults)
        raised = [f for f in fractions if round(f * pool) < 1]
        if raised:  # a size the fraction does not give: say so
            plan = replace(plan, notices=(*plan.notices, (
                f"fraction {raised[0]:g} of its {pool} seen items rounds to no item; its "
                "micro-benchmarks at that fraction hold 1 item")))
        studies.append(SubtaskStudy(str(name), matrix,
                                    replace(plan, items=items, stream=str(name))))
    return studies


def pool_results(results: list[StudyResult], fractions: tuple[float, ...]) -> StudyResult:
    """All subtasks' runs as one study whose pairs never cross subtasks. Its sizes
    are the total items over subtasks at each fraction."""
    first = results[0]
    totals = tuple(int(sum(r.plan.sizes[i] for r in results)) for i in range(len(fractions)))
    plan = replace(first.plan, sizes=totals)
    return StudyResult(
        plan=plan,
        model_names=first.model_names,
        estimates=np.concatenate([r.estimates for r in results], axis=3),
        seen=np.concatenate([r.seen for r in results]),
        unseen=np.concatenate([r.unseen for r in results]),
        full=np.concatenate([r.full for r in results]),
        targets=np.concatenate([r.targets for r in results]),
        method_seconds=np.sum([r.method_seconds for r in results], axis=0),
        exposure=_pooled_exposure(results),
    )


def _pooled_exposure(results: list[StudyResult]) -> np.ndarray | None:
    """Per run, the distinct items over all subtasks (their sum) and the largest share
    of targets that answered one item (the largest over subtasks), repeated for each
    subtask's block of runs so it lines up with the pooled estimates."""
    if any(r.exposure is None for r in results):
        return None
    stacked = np.stack([r.exposure for r in results])  # (subtask, m, s, c, run, 2)
    pooled = np.stack([stacked[..., 0].sum(axis=0), stacked[..., 1].max(axis=0)], axis=-1)
    return np.concatenate([pooled] * len(results), axis=3)


def evaluate_per_subtask(studies: list[SubtaskStudy], results: list[StudyResult],
                         fractions: tuple[float, ...]) -> StudyTables:
    """Tables with a `subtask` and a `fraction` column: one block per subtask, then the
    pooled block (subtask ``(pooled)``), whose `size` is the total over subtasks."""
    blocks = [(study.name, result) for study, result in zip(studies, results, strict=True)]
    blocks.append((POOLED, pool_results(results, fractions)))
    parts: dict[str, list[pd.DataFrame]] = {"mdad": [], "summary": [], "agreement": []}
    for name, result in blocks:
        tables = evaluate(result, stream=name)
        fraction_of = dict(zip(result.plan.sizes, fractions, strict=True))
        for key in parts:
            table = getattr(tables, key).copy()
            table.insert(0, "subtask", name)
            table.insert(2, "fraction", table["size"].map(fraction_of))
            parts[key].append(table)
    return StudyTables(
        mdad=pd.concat(parts["mdad"], ignore_index=True),
        summary=pd.concat(parts["summary"], ignore_index=True),
        agreement=pd.concat(parts["agreement"], ignore_index=True),
    )


@dataclass(frozen=True, eq=False)
class PerSubtaskOutput:
    """What a per-subtask study writes: its tables, one row per estimate (with a
    `subtask` column), the methods' notices per subtask, and compute time."""

    tables: StudyTables
    frame: pd.DataFrame
    notices: tuple[str, ...]
    method_seconds: np.ndarray


def collect_per_subtask(studies: list[SubtaskStudy], results: list[StudyResult],
                        fractions: tuple[float, ...]) -> PerSubtaskOutput:
    """Tables, rows and notices of a finished per-subtask study."""
    pairs = list(zip(studies, results, strict=True))
    return PerSubtaskOutput(
        tables=evaluate_per_subtask(studies, results, fractions),
        frame=pd.concat([r.to_frame().assign(subtask=s.name) for s, r in pairs],
                        ignore_index=True),
        notices=tuple(f"subtask {s.name}: {notice}" for s, r in pairs
                      for notice in (*s.plan.notices, *r.notices)),
        method_seconds=np.sum([r.method_seconds for r in results], axis=0),
    )
