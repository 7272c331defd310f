"""The report's first section: the run's answer in sentences, every number from it."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from mdad.metrics.mdad import NOT_REACHED
from mdad.report.run_data import RunData
from mdad.report.style import display_name

BIN = 0.005


def points(value: float) -> str:
    """An accuracy fraction as points with one decimal (0.065 -> '6.5')."""
    return f"{100 * value:.1f}"


@dataclass(frozen=True)
class Finding:
    """One sentence and the mdad.csv rows its numbers come from (for checking)."""

    text: str
    rows: tuple[dict, ...]


def _seen(run: RunData) -> pd.DataFrame:
    return run.mdad[(run.mdad.split == "seen") & (run.mdad.sources == run.main_sources)]


def findings(run: RunData) -> list[Finding]:
    """Sentences answering "how far apart must two models be for a micro-benchmark of
    each size to rank them reliably?", for the seen split at the largest source count."""
    table = _seen(run)
    sizes = run.sizes
    threshold = f"{run.threshold:.0%}"
    out: list[Finding] = []
    smallest = table[table["size"] == sizes[0]]
    best = smallest.loc[smallest.mdad.idxmin()]
    if best.mdad >= NOT_REACHED:
        text = (f"With {sizes[0]} items, no method ranks pairs of models correctly "
                f"{threshold} of the time at any gap seen in this run.")
    else:
        text = (f"With {sizes[0]} items, {display_name(best.method)} ranks a pair of models "
                f"correctly {threshold} of the time only when they differ by at least "
                f"{points(best.mdad)} accuracy points (interval {points(best.mdad_low)} to "
                f"{points(best.mdad_high)}).")
    rows = [best.to_dict()]
    if "random" in set(table.method) and best.method != "random":
        uniform = smallest[smallest.method == "random"].iloc[0]
        text += (f" Uniform random sampling needs a gap of {points(uniform.mdad)} points "
                 f"(interval {points(uniform.mdad_low)} to {points(uniform.mdad_high)}).")
        rows.append(uniform.to_dict())
    out.append(Finding(text, tuple(rows)))

    largest = table[table["size"] == sizes[-1]]
    low, high = largest.loc[largest.mdad.idxmin()], largest.loc[largest.mdad.idxmax()]
    if low.mdad == high.mdad:
        text = (f"With {sizes[-1]} items, the largest size run, every method's MDAD is "
                f"{points(low.mdad)} points.")
    else:
        text = (f"With {sizes[-1]} items, the largest size run, MDAD ranges from "
                f"{points(low.mdad)} points for {display_name(low.method)} to "
                f"{points(high.mdad)} points for {display_name(high.method)}.")
    out.append(Finding(text, (low.to_dict(), high.to_dict())))

    if "random" in set(table.method) and table.method.nunique() > 1:
        out.append(_catch_up(table, sizes))
    if run.config["study"].get("target_models") and not run.per_subtask:
        out.append(_targets(run, table, sizes))
    return out


def _catch_up(table: pd.DataFrame, sizes: list[int]) -> Finding:
    """From which size on uniform random sampling is within one bin of the best."""
    rows = []
    catch_up = None
    for size in sizes:
        at = table[table["size"] == size]
        uniform = at[at.method == "random"].iloc[0]
        best = at.loc[at.mdad.idxmin()]
        rows.append(uniform.to_dict())
        rows.append(best.to_dict())
        if uniform.mdad - best.mdad <= BIN + 1e-12:
            catch_up = catch_up or size
        else:
            catch_up = None
    if catch_up is None:
        text = ("At none of the sizes run is uniform random sampling within half a point "
                "of the best method's MDAD.")
    else:
        text = (f"From {catch_up} items on, uniform random sampling is within half a point "
                "of the best method's MDAD: the selection methods help only below that.")
    return Finding(text, tuple(rows))


def _targets(run: RunData, table: pd.DataFrame, sizes: list[int]) -> Finding:
    from mdad.report.figures import not_preserved_share

    shares = not_preserved_share(run)
    size = sizes[0]
    at = table[table["size"] == size]
    best = at.loc[at.mdad.idxmin()]
    share = shares[(shares.method == best.method) & (shares["size"] == size)].share.item()
    count = len(run.config["study"]["target_models"])
    return Finding(
        f"Among the {count} fixed target models, {share:.0%} of the pairwise comparisons "
        f"differ by less than the {size}-item MDAD of {display_name(best.method)} "
        f"({points(best.mdad)} points): a micro-benchmark of that size cannot settle them.",
        (best.to_dict(),))
