"""The report's figures, each a function from a finished run to a matplotlib Figure.

Accuracy fractions are drawn as points (x100). Every figure uses `style.style(method)`,
so a method has one colour and line style throughout.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, NullLocator

from mdad.report.curves import AgreementCurve, agreement_curves, target_gaps
from mdad.report.style import RC_PARAMS, display_name, method_order, style
from mdad.study.folder import StudyFolder
from mdad.study.trust import as_shown

SPLITS = ("seen", "unseen")
POINTS = 100.0
WIDTH = 11.0  # inches; one width keeps the text the same size in every figure


@dataclass(frozen=True)
class FigureSpec:
    """A figure of the report: its file stem, caption, and the Figure itself."""

    name: str
    caption: str
    figure: Figure


def _new_figure(width: float, height: float, panels: int = 1,
                columns: int | None = None) -> tuple[Figure, list]:
    import matplotlib as mpl

    mpl.rcParams.update(RC_PARAMS)
    columns = columns or panels
    rows = int(np.ceil(panels / columns))
    figure = Figure(figsize=(width, height * rows), layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False).ravel().tolist()
    for extra in axes[panels:]:
        extra.set_visible(False)
    return figure, axes[:panels]


def _size_axis(axis, sizes: list[int], pool: int | None) -> None:
    """Log-scaled size axis with the sizes as ticks, labelled with their share of the
    seen pool when it is known."""
    axis.set_xscale("log")
    axis.xaxis.set_major_locator(FixedLocator(sizes))
    axis.xaxis.set_minor_locator(NullLocator())
    labels = [f"{s}\n({s / pool:.0%})" if pool else str(s) for s in sizes]
    axis.set_xticklabels(labels)
    axis.set_xlabel("micro-benchmark size (share of the seen pool)" if pool
                    else "micro-benchmark size")


def _censored_markers(axis, x, rows: pd.DataFrame, color: str) -> None:
    """Unreached MDADs: an open upward triangle at the largest gap observed (the value
    lies above it), never joined to the line; nothing for a row with no measurable
    MDAD (`rows` as `as_shown` gives them)."""
    censored = (~rows.reached.astype(bool) & rows.measurable).to_numpy()
    if censored.any():
        axis.plot(np.asarray(x)[censored], rows.max_gap.to_numpy()[censored] * POINTS,
                  marker="^", markersize=7, linestyle="none", markerfacecolor="white",
                  markeredgecolor=color, markeredgewidth=1.3)


CENSORED_NOTE = ("open triangles: not reached within the observed gaps, drawn at the "
                 "largest gap (the MDAD is above it)")


def _unmeasurable_note(table: pd.DataFrame, left_out: str = "are not drawn") -> str:
    """'; 3 of 18 rows are not drawn: ...' when some of `table`'s rows (as `as_shown`
    gives them) have no measurable MDAD: they are left out of the figure, and said so."""
    count = int((~table.measurable).sum())
    if not count:
        return ""
    return (f"; {count} of {len(table)} rows {left_out}: too few target pairs differ "
            "there for any MDAD to be measured (see the notices)")


def _main_rows(study: StudyFolder, split: str) -> pd.DataFrame:
    """The split's rows at the main source count, as shown (`as_shown`)."""
    mdad = as_shown(study.mdad)
    return mdad[(mdad.split == split) & (mdad.sources == study.main_sources)]


def _legend(figure: Figure, axes: list) -> None:
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside right upper")


def mdad_vs_size(study: StudyFolder, split: str) -> FigureSpec:
    """Figure 1: MDAD against size, one line per method, its interval as a band."""
    table = _main_rows(study, split)
    figure, (axis,) = _new_figure(WIDTH, 4.6)
    for method in method_order(list(table.method.unique())):
        rows = table[table.method == method].sort_values("size")
        kwargs = style(method)
        # NaN (censored) breaks the line: no segment runs through an unreached value
        axis.plot(rows["size"], rows.mdad * POINTS, marker="o", markersize=4, **kwargs)
        _censored_markers(axis, rows["size"], rows, kwargs["color"])
        # an unbounded upper end fills to the top of the axis
        top = rows.mdad_high.fillna(np.inf).clip(upper=1.0) * POINTS
        axis.fill_between(rows["size"], rows.mdad_low * POINTS, top,
                          where=rows.mdad_low.notna().to_numpy(), color=kwargs["color"],
                          alpha=0.12, linewidth=0)
    _size_axis(axis, study.sizes, study.seen_pool_size)
    axis.set_ylabel("MDAD (accuracy points)")
    axis.set_ylim(0, _top(table))
    axis.set_title(f"MDAD by micro-benchmark size, {split} split, {study.main_sources} sources")
    _legend(figure, [axis])
    return FigureSpec(f"mdad_vs_size_{split}",
                      f"MDAD ({split} split) by size: the smallest accuracy gap ranked "
                      f"correctly with probability {study.threshold:.0%}; bands are 95% "
                      f"bootstrap intervals (to the top where unbounded); {CENSORED_NOTE}"
                      f"{_unmeasurable_note(table)}. Lower is better.", figure)


def agreement_by_gap(study: StudyFolder, split: str,
                     curves: dict[tuple[str, int, str], AgreementCurve]) -> FigureSpec:
    """Figure 2: agreement probability against |gap|, one panel per size."""
    sizes = study.sizes
    figure, axes = _new_figure(WIDTH, 3.0, panels=len(sizes), columns=min(3, len(sizes)))
    table = _main_rows(study, split)  # no MDAD dot where none can be measured
    for axis, size in zip(axes, sizes, strict=True):
        for method in method_order(study.methods):
            curve = curves.get((method, size, split))
            if curve is None:
                continue
            kwargs = style(method)
            shown = curve.gap <= 0.3
            axis.plot(curve.gap[shown] * POINTS, curve.agreement[shown], linewidth=1.2,
                      **kwargs)
            row = table[(table.method == method) & (table["size"] == size)]
            if not row.empty and bool(row.reached.item()):
                axis.plot(row.mdad.item() * POINTS, study.threshold, marker="o", markersize=5,
                          color=kwargs["color"], linestyle="none")
        axis.axhline(study.threshold, color="#444444", linewidth=0.8, linestyle=":")
        axis.set_title(f"{size} items")
        axis.set_ylim(0, 1.02)
    # one label for all panels: a label per panel ran into its neighbour's
    figure.supxlabel("|accuracy gap| (points, 0.5-point bins)")
    figure.supylabel("P(ranked as the full pool)")
    figure.suptitle(f"Agreement by gap, {split} split")
    _legend(figure, axes)
    return FigureSpec(f"agreement_{split}",
                      f"Agreement probability by |gap| ({split} split): the share of target "
                      "pairs the micro-benchmark ranks as the full pool does, per 0.5-point "
                      f"bin; dotted line: the {study.threshold:.0%} threshold; dots: MDAD"
                      f"{_unmeasurable_note(table, 'have no dot')}.", figure)


def error_and_tau(study: StudyFolder, split: str) -> FigureSpec:
    """Figure 3: mean absolute estimation error and Kendall tau against size."""
    table = study.summary[study.summary.sources == study.main_sources]
    figure, (error_axis, tau_axis) = _new_figure(WIDTH, 4.2, panels=2)
    for method in method_order(list(table.method.unique())):
        rows = table[table.method == method].sort_values("size")
        kwargs = style(method)
        for axis, column, scale in ((error_axis, f"mae_{split}", POINTS),
                                    (tau_axis, f"kendall_tau_{split}", 1.0)):
            axis.errorbar(rows["size"], rows[column] * scale,
                          yerr=1.96 * rows[f"{column}_se"].fillna(0) * scale, marker="o",
                          markersize=3.5, capsize=2, linewidth=1.2, **kwargs)
    for axis in (error_axis, tau_axis):
        _size_axis(axis, study.sizes, study.seen_pool_size)
    error_axis.set_ylabel("mean |estimate - accuracy| (points)")
    error_axis.set_ylim(bottom=0)
    tau_axis.set_ylabel("Kendall tau with the true ranking")
    error_axis.set_title(f"Estimation error ({split} pool)")
    tau_axis.set_title(f"Ranking agreement ({split} pool)")
    _legend(figure, [error_axis])
    return FigureSpec(f"error_tau_{split}",
                      f"Mean absolute estimation error and Kendall tau against the {split} "
                      "pool's accuracies, with 95% intervals over runs.", figure)


def mdad_vs_sources(study: StudyFolder, split: str) -> FigureSpec:
    """Figure 4: MDAD against the number of source models, one panel per size."""
    sizes = study.sizes
    table = as_shown(study.mdad)
    table = table[table.split == split]
    figure, axes = _new_figure(WIDTH, 3.0, panels=len(sizes), columns=min(3, len(sizes)))
    for axis, size in zip(axes, sizes, strict=True):
        for method in method_order(study.methods):
            rows = table[(table.method == method) & (table["size"] == size)].sort_values(
                "sources")
            kwargs = style(method)
            axis.plot(rows.sources, rows.mdad * POINTS, marker="o", markersize=3.5, **kwargs)
            _censored_markers(axis, rows.sources, rows, kwargs["color"])
        axis.set_title(f"{size} items")
        axis.set_xlabel("source models")
        axis.set_ylabel("MDAD (points)")
        axis.set_ylim(0, _top(table))
    _legend(figure, axes)
    return FigureSpec(f"mdad_vs_sources_{split}",
                      f"MDAD ({split} split) by the number of source models the methods "
                      f"select with; {CENSORED_NOTE}{_unmeasurable_note(table)}.", figure)


def _top(table: pd.DataFrame) -> float:
    """The y-axis top in points: every reached value, interval end and censoring gap;
    at least 1 (all zero when no pair differs, and a zero-height axis is singular)."""
    values = table[["mdad", "mdad_low", "mdad_high", "max_gap"]].to_numpy(dtype=float)
    finite = values[np.isfinite(values)]
    return max(float(finite.max()) * POINTS * 1.08 if finite.size else 0.0, 1.0)


def not_preserved_share(study: StudyFolder) -> pd.DataFrame:
    """Share of the fixed targets' pairwise comparisons whose full-benchmark |gap| is
    below the (seen) MDAD, per method and size: rows method, size, share, censored,
    measurable. Where the MDAD was not reached the share is a lower bound (the gaps up
    to the largest observed one), and `censored` is True; where no MDAD can be
    measured (`measurable` False) the share is NaN and `censored` False."""
    gaps = target_gaps(study)
    table = _main_rows(study, "seen")
    reached = table.reached.astype(bool).to_numpy()
    measurable = table.measurable.to_numpy(dtype=bool)
    bound = np.where(reached, table.mdad.to_numpy(dtype=float),
                     np.nextafter(table.max_gap.to_numpy(dtype=float), np.inf))
    share = [(gaps < m).mean() if known else np.nan
             for m, known in zip(bound, measurable, strict=True)]
    return pd.DataFrame({"method": table.method.to_numpy(), "size": table["size"].to_numpy(),
                         "share": share, "censored": ~reached & measurable,
                         "measurable": measurable})


def target_comparisons(study: StudyFolder) -> FigureSpec:
    """Figure 5: the fixed targets' pairwise gaps against each size's MDAD, and the
    share of their comparisons a micro-benchmark cannot settle."""
    gaps = target_gaps(study)
    shares = not_preserved_share(study)
    figure, (hist_axis, share_axis) = _new_figure(WIDTH, 4.2, panels=2)
    hist_axis.hist(gaps * POINTS, bins=np.arange(0, gaps.max() * POINTS + 1.0, 1.0),
                   color="#BBBBBB", edgecolor="white")
    reference = "random" if "random" in study.methods else method_order(study.methods)[0]
    table = _main_rows(study, "seen")
    table = table[table.method == reference]
    for row in table[table.reached.astype(bool)].sort_values("size").itertuples():
        hist_axis.axvline(row.mdad * POINTS, color=style(reference)["color"], linewidth=1,
                          linestyle="--")
        hist_axis.annotate(f"{row.size}", (row.mdad * POINTS, hist_axis.get_ylim()[1]),
                           fontsize=7.5, ha="left", va="top", rotation=90)
    hist_axis.set_xlabel("|full-benchmark accuracy gap| between two target models (points)")
    hist_axis.set_ylabel("pairs of target models")
    hist_axis.set_title(f"Target pairs and {display_name(reference)}'s MDAD by size")
    for method in method_order(list(shares.method.unique())):
        rows = shares[shares.method == method].sort_values("size")
        kwargs = style(method)
        share_axis.plot(rows["size"], rows.share.where(~rows.censored) * 100, marker="o",
                        markersize=3.5, **kwargs)
        lower = rows[rows.censored]
        share_axis.plot(lower["size"], lower.share * 100, marker="^", markersize=7,
                        linestyle="none", markerfacecolor="white",
                        markeredgecolor=kwargs["color"])
    _size_axis(share_axis, study.sizes, study.seen_pool_size)
    share_axis.set_ylabel("comparisons not preserved (%)")
    share_axis.set_ylim(0, 100)
    share_axis.set_title("Share of target pairs closer than the MDAD")
    _legend(figure, [share_axis])
    count = len(study.config["study"]["target_models"])
    return FigureSpec("target_comparisons",
                      f"The {count} fixed target models: their pairwise full-benchmark "
                      "gaps with the seen-split "
                      "MDAD of each size (dashed), and the share of their comparisons below "
                      "the MDAD, which a micro-benchmark of that size cannot be trusted to "
                      "settle; open triangles: the MDAD was not reached, so the share is at "
                      f"least this{_unmeasurable_note(shares, 'have no share')}.", figure)


def seen_vs_unseen(study: StudyFolder) -> FigureSpec:
    """Figure 6: seen against unseen MDAD per method and size."""
    main = as_shown(study.mdad)
    main = main[main.sources == study.main_sources]
    # a censored value is drawn at its largest observed gap, as an open marker; a pair
    # with either split not measurable is not drawn (both its coordinates must exist)
    main = main.assign(shown=main.mdad.fillna(main.max_gap))
    table = main.pivot_table(index=["method", "size"], columns="split",
                             values=["shown", "reached"], aggfunc="first",
                             dropna=False).reset_index()
    figure, (axis,) = _new_figure(WIDTH, 5.6)
    sizes = study.sizes
    for method in method_order(list(table.method.unique())):
        rows = table[table.method == method].sort_values("size")
        kwargs = style(method)
        marker_sizes = 12 + 60 * np.searchsorted(sizes, rows["size"]) / max(len(sizes) - 1, 1)
        seen, unseen = rows[("shown", "seen")] * POINTS, rows[("shown", "unseen")] * POINTS
        both = (rows[("reached", "seen")].astype(bool)
                & rows[("reached", "unseen")].astype(bool)).to_numpy()
        axis.scatter(seen[both], unseen[both], s=marker_sizes[both], color=kwargs["color"],
                     label=kwargs["label"], alpha=0.85)
        censored = ~both & np.isfinite(seen.to_numpy(dtype=float)) & np.isfinite(
            unseen.to_numpy(dtype=float))  # a split with no measurable MDAD has no coordinate
        axis.scatter(seen[censored], unseen[censored], s=marker_sizes[censored] + 20, marker="^",
                     facecolors="white", edgecolors=kwargs["color"])
        axis.plot(seen.where(both), unseen.where(both), color=kwargs["color"],
                  linestyle=kwargs["linestyle"], linewidth=0.8, alpha=0.6)
    shown = table[[("shown", "seen"), ("shown", "unseen")]].to_numpy(dtype=float)
    # at least a point wide: all-zero values (no pair differs) would make a singular axis
    top = max(float(np.nanmax(shown)) if np.isfinite(shown).any() else 0.0, 0.01) * POINTS * 1.05
    axis.plot([0, top], [0, top], color="#444444", linewidth=0.8, linestyle=":")
    axis.set_xlim(0, top)
    axis.set_ylim(0, top)
    axis.set_xlabel("MDAD, seen split (points)")
    axis.set_ylabel("MDAD, unseen split (points)")
    axis.set_title("Generalisation to unseen items (larger marker: more items)")
    _legend(figure, [axis])
    return FigureSpec("seen_vs_unseen",
                      "Seen against unseen MDAD for every method and size; points above "
                      "the dotted diagonal rank new items of the same task less reliably "
                      "than the items the methods selected from; open triangles: a value "
                      f"not reached, drawn at the largest gap observed"
                      f"{_unmeasurable_note(main)}.", figure)


def all_figures(study: StudyFolder) -> list[FigureSpec]:
    """Every figure that applies to `run`, in report order."""
    curves = agreement_curves(study, study.main_sources)
    builders: list[Callable[[], FigureSpec]] = []
    for split in SPLITS:
        builders.append(lambda split=split: mdad_vs_size(study, split))
    for split in SPLITS:
        builders.append(lambda split=split: agreement_by_gap(study, split, curves))
    for split in SPLITS:
        builders.append(lambda split=split: error_and_tau(study, split))
    if len(study.sources) > 1:
        for split in SPLITS:
            builders.append(lambda split=split: mdad_vs_sources(study, split))
    if target_gaps(study).size:
        builders.append(lambda: target_comparisons(study))
    builders.append(lambda: seen_vs_unseen(study))
    return [build() for build in builders]
