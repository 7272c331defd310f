"""The report's first section: the run's answer in sentences, every number from it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from mdad.display import points
from mdad.report.style import display_name
from mdad.study.folder import StudyFolder

BIN = 0.005
NOT_REACHED = "not reached within the observed gaps"
NONE_MEASURABLE = ("too few target pairs differ for any MDAD to be measured (see the "
                   "notices below)")


def _upper(row: pd.Series) -> str:
    """An interval's upper end; unbounded when its bootstrap curve never reached."""
    return "no upper bound" if pd.isna(row.mdad_high) else points(row.mdad_high)


def _interval(row: pd.Series) -> str:
    """'interval 10.0 to 11.5; from 87,990 pairs', and a warning when the study flags
    the row (few pairs behind it, or almost none that differ)."""
    support = ("" if pd.isna(row.get("pairs", np.nan))
               else f"; from {int(row.pairs):,} target pairs")
    thin = ", too few to trust: see the notices below" if row.get("_thin", False) else ""
    return f"interval {points(row.mdad_low)} to {_upper(row)}{support}{thin}"


def _flagged(table: pd.DataFrame) -> pd.DataFrame:
    """`table` as shown (`mdad.study.trust.as_shown`: no value in a row whose MDAD
    cannot be measured, column `measurable`) with a column `_thin`: the rows the
    study's notices flag."""
    from mdad.study.trust import as_shown, flagged_mask

    return as_shown(table).assign(_thin=flagged_mask(table))


def _gap_clause(row: pd.Series) -> str:
    """'11.0 accuracy points (interval ...)' or the censored wording, or no value at
    all where none can be measured."""
    if not row.measurable:
        return "no measurable MDAD: too few target pairs differ"
    if not row.reached:
        beyond = "" if pd.isna(row.max_gap) else f" (above {points(row.max_gap)} points)"
        return f"an MDAD {NOT_REACHED}{beyond}"
    return f"{points(row.mdad)} points ({_interval(row)})"


def _by_mdad(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows ordered by MDAD, censored values last (they are larger than any reached),
    and rows with no measurable MDAD after them."""
    key = rows.mdad.fillna(np.inf).where(rows.measurable, 2 * np.inf)
    return rows.assign(_key=key).sort_values("_key", kind="stable")


@dataclass(frozen=True)
class Finding:
    """One sentence and the mdad.csv rows its numbers come from (for checking)."""

    text: str
    rows: tuple[dict, ...]


def _seen(study: StudyFolder) -> pd.DataFrame:
    return study.mdad[(study.mdad.split == "seen") & (study.mdad.sources == study.main_sources)]


def findings(study: StudyFolder) -> list[Finding]:
    """Sentences answering "how far apart must two models be for a micro-benchmark of
    each size to rank them reliably?", for the seen split at the largest source count."""
    table = _flagged(_seen(study))
    sizes = study.sizes
    threshold = f"{study.threshold:.0%}"
    if not table.measurable.any():  # a value here would contradict the notices
        return [Finding(f"No MDAD can be measured in this run: in every row, {NONE_MEASURABLE}; "
                        "run the study with more targets or runs.",
                        tuple(table.to_dict("records")))]
    out: list[Finding] = []
    smallest = _by_mdad(table[table["size"] == sizes[0]])
    best = smallest.iloc[0]
    if not best.measurable:
        text = f"With {sizes[0]} items, no MDAD can be measured: {NONE_MEASURABLE}."
    elif not best.reached:
        text = (f"With {sizes[0]} items, no method ranks pairs of models correctly "
                f"{threshold} of the time: the MDAD is {NOT_REACHED} (the largest gap "
                f"between two targets was {points(smallest.max_gap.max())} points).")
    else:
        text = (f"With {sizes[0]} items, {display_name(best.method)} ranks a pair of models "
                f"correctly {threshold} of the time only when they differ by at least "
                f"{points(best.mdad)} accuracy points ({_interval(best)}).")
    rows = [best.to_dict()]
    if "random" in set(table.method) and best.method != "random" and best.measurable:
        uniform = smallest[smallest.method == "random"].iloc[0]
        text += (f" Uniform random sampling needs a gap of {_gap_clause(uniform)}."
                 if uniform.reached else
                 f" Uniform random sampling has {_gap_clause(uniform)}.")
        rows.append(uniform.to_dict())
    out.append(Finding(text, tuple(rows)))

    largest = _by_mdad(table[table["size"] == sizes[-1]])
    measured = largest[largest.measurable]
    shown = measured if len(measured) else largest
    low, high = shown.iloc[0], shown.iloc[-1]
    some = "" if len(measured) == len(largest) else " that can be measured"
    if measured.empty:
        text = (f"With {sizes[-1]} items, the largest size run, no MDAD can be measured: "
                f"{NONE_MEASURABLE}.")
    elif low.mdad == high.mdad or not (low.reached or high.reached):
        what = (f"{points(low.mdad)} points" if low.reached else NOT_REACHED)
        whose = (f"{display_name(low.method)}'s MDAD" if len(largest) == 1
                 else f"every method's MDAD{some}")
        text = f"With {sizes[-1]} items, the largest size run, {whose} is {what}."
    else:
        text = (f"With {sizes[-1]} items, the largest size run, MDAD ranges from "
                f"{points(low.mdad)} points for {display_name(low.method)} to "
                + (f"{points(high.mdad)} points" if high.reached else NOT_REACHED)
                + f" for {display_name(high.method)}.")
    if some and len(measured):
        text = (f"{text[:-1]}; {len(largest) - len(measured)} of {len(largest)} methods have no "
                "measurable MDAD there.")
    behind = [f"from {int(low.pairs):,} target pairs each"] if (
        not pd.isna(low.get("pairs", np.nan)) and (largest.pairs == low.pairs).all()) else []
    if (low.reached or high.reached) and largest._thin.any():
        behind.append("some with too few to trust: see the notices below")
    if behind:
        text = f"{text[:-1]} ({'; '.join(behind)})."
    text += _not_run(table, largest, sizes[-1])
    out.append(Finding(text, (low.to_dict(), high.to_dict())))

    if "random" in set(table.method) and table.method.nunique() > 1:
        out.append(_catch_up(table, sizes))
    if study.config["study"].get("target_models") and not study.per_subtask:
        out.append(_targets(study, table, sizes))
    return out


def _not_run(table: pd.DataFrame, at: pd.DataFrame, size: int) -> str:
    """' X is not run at this size: it cannot build that many items.' for the
    methods of `table` without a row in `at` (its rows at `size`), else ''."""
    absent = [display_name(m) for m in dict.fromkeys(table.method) if m not in set(at.method)]
    if not absent:
        return ""
    names = absent[0] if len(absent) == 1 else f"{', '.join(absent[:-1])} and {absent[-1]}"
    one = len(absent) == 1
    return (f" {names} {'is' if one else 'are'} not run at {size} items: "
            f"{'it' if one else 'they'} cannot build that many from the seen pool.")


def _catch_up(table: pd.DataFrame, sizes: list[int]) -> Finding:
    """From which size on uniform random sampling is within one bin of the best, at
    the sizes another method runs at too."""
    rows = []
    catch_up = None
    unmeasured = []  # sizes where random has no measurable MDAD: never "caught up" there
    compared = [size for size in sizes if table[table["size"] == size].method.nunique() > 1]
    for size in compared:
        at = _by_mdad(table[table["size"] == size])
        uniform = at[at.method == "random"].iloc[0]
        best = at.iloc[0]
        rows.append(uniform.to_dict())
        rows.append(best.to_dict())
        if not uniform.measurable:
            unmeasured.append(str(size))
        if uniform.reached and uniform.mdad - best.mdad <= BIN + 1e-12:
            catch_up = catch_up or size
        else:
            catch_up = None
    if catch_up is None:
        text = ("At none of the sizes run is uniform random sampling within half a point "
                "of the best method's MDAD.")
        if unmeasured:
            text = (f"{text[:-1]} (it has no measurable MDAD at {', '.join(unmeasured)} "
                    "items).")
    else:
        text = (f"From {catch_up} items on, uniform random sampling is within half a point "
                "of the best method's MDAD: the selection methods help only below that.")
    if compared[-1] != sizes[-1]:  # the larger sizes have random alone
        text = (f"{text[:-1]} (compared up to {compared[-1]} items: no other method can "
                "build more).")
    return Finding(text, tuple(rows))


def _targets(study: StudyFolder, table: pd.DataFrame, sizes: list[int]) -> Finding:
    from mdad.report.figures import not_preserved_share

    shares = not_preserved_share(study)
    size = sizes[0]
    best = _by_mdad(table[table["size"] == size]).iloc[0]
    count = len(study.config["study"]["target_models"])
    if not best.measurable:
        return Finding(
            f"Among the {count} fixed target models, no method's {size}-item MDAD can be "
            "measured (too few of their pairs differ), so nothing can be said of which of "
            "their comparisons a micro-benchmark of that size settles.", (best.to_dict(),))
    if not best.reached:
        return Finding(
            f"Among the {count} fixed target models, no method's {size}-item MDAD was "
            "reached, so a micro-benchmark of that size cannot be trusted to settle any of "
            "their comparisons.", (best.to_dict(),))
    share = shares[(shares.method == best.method) & (shares["size"] == size)].share.item()
    return Finding(
        f"Among the {count} fixed target models, {share:.0%} of the pairwise comparisons "
        f"differ by less than the {size}-item MDAD of {display_name(best.method)} "
        f"({points(best.mdad)} points): a micro-benchmark of that size cannot settle them.",
        (best.to_dict(),))
