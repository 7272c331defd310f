"""Rich renderings of library results. Accuracy fractions are shown as points (x100)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich import box
from rich.table import Table

from mdad.cli.errors import literal
from mdad.display import censored, interval, points

if TYPE_CHECKING:
    import pandas as pd

    from mdad.data.info import DataInfo


def study_table(mdad: pd.DataFrame, summary: pd.DataFrame, title: str,
                split: str | None = None) -> Table:
    """Per method, size and source count: MDAD with its 95% interval and the smooth
    MDAD (seen, unseen), mean absolute estimation error and Kendall tau; with `split`
    ("seen" or "unseen"), that split's columns only, for a narrow terminal (and the
    source count in the title when every row has the same).

    Marks: † the MDAD rests on few pairs (see the notice); ‡ the two estimators
    differ widely. A row whose notice says no MDAD can be measured (too few target
    pairs differ) shows "not measurable" and "—" instead of any value, interval or
    bound. The pair count is in the title when every row has the same."""
    from mdad.study.trust import NOT_MEASURABLE, as_shown, estimates_disagree, flagged_mask

    pair_counts = sorted(set(mdad.pairs)) if "pairs" in mdad else []
    if len(pair_counts) == 1:
        title += f"; each MDAD from {pair_counts[0]:,} target pairs"
    splits = (split,) if split else ("seen", "unseen")
    show_sources = split is None or summary.sources.nunique() > 1
    if not show_sources:
        title += f"; {summary.sources.iloc[0]} sources"
    shown = as_shown(mdad)
    table = Table(title=literal(title), title_justify="left", box=box.SIMPLE_HEAD,
                  caption_justify="left")
    table.add_column("method", no_wrap=True)
    table.add_column("size", justify="right")
    if show_sources:
        table.add_column("sources", justify="right")
    for name in splits:
        label = "" if split else f" {name}"
        table.add_column(f"MDAD{label} [95% CI]", justify="right", no_wrap=True)
        table.add_column(f"smooth{label}", justify="right", no_wrap=True)
    if len(pair_counts) > 1:
        table.add_column("pairs", justify="right")
    table.add_column("error seen" if split is None else "error", justify="right")
    for name in splits:
        table.add_column(f"tau {name}" if split is None else "tau", justify="right")
    keyed = shown.assign(thin=flagged_mask(mdad)).set_index(
        ["method", "size", "sources", "split"])
    marks: set[str] = set()
    for row in summary.itertuples(index=False):
        key = (row.method, row.size, row.sources)
        cells = [str(row.method), str(row.size)] + ([str(row.sources)] if show_sources else [])
        for name in splits:
            m = keyed.loc[(*key, name)]
            if not m.measurable:  # the note says none can be measured: no number at all
                cells += [NOT_MEASURABLE, "—"]
                marks.add(NOT_MEASURABLE)
                continue
            cells.append(interval(m.mdad, m.mdad_low, m.mdad_high, m.max_gap)
                         + (" †" if m.thin else ""))
            cells.append(censored(m.mdad_smooth, m.max_gap)
                         + (" ‡" if estimates_disagree(m) else ""))
            marks.update(mark for mark in ("†", "‡", ">") if mark in cells[-2] + cells[-1])
        if len(pair_counts) > 1:
            cells.append(f"{int(keyed.loc[(*key, splits[0])].pairs):,}")
        cells.append(points(row.mae_seen if split != "unseen" else row.mae_unseen))
        cells += [f"{getattr(row, f'kendall_tau_{name}'):.2f}" for name in splits]
        table.add_row(*(literal(cell) for cell in cells))
    # only the marks the table shows
    legend = {"†": "† few pairs behind the value (see the note)",
              "‡": "‡ the first-crossing and smooth MDAD differ widely",
              ">": "> x: not reached within the largest gap observed, x",
              NOT_MEASURABLE: f"{NOT_MEASURABLE}: too few target pairs differ for any MDAD "
                              "(see the note)"}
    shown_marks = [text for mark, text in legend.items() if mark in marks]
    if shown_marks:
        table.caption = literal("; ".join(shown_marks))
    return table


def study_tables(console, mdad: pd.DataFrame, summary: pd.DataFrame, title: str
                 ) -> list[Table]:
    """The study table, or where `console` is too narrow for it, one table per split."""
    from rich.measure import Measurement

    table = study_table(mdad, summary, title)
    unbounded = console.options.update(width=10 * console.width)  # its natural width
    if Measurement.get(console, unbounded, table).maximum <= console.width:
        return [table]
    seen, unseen = (study_table(mdad, summary, f"{title}; {name} split", split=name)
                    for name in ("seen", "unseen"))
    # the marks of both splits are explained once, under the last
    seen.caption, unseen.caption = None, table.caption
    return [seen, unseen]


def load_notices(data) -> list[str]:
    """What loading `data` (a `Dataset`) decided or left out, one line each: the
    loader's notes (the layout `auto` guessed, columns read as metadata, lm-eval folders
    not read), the missing-data policy's drops. Every command that loads a
    dataset prints these. (An option that does not apply to the data is refused when
    it is read.)"""
    from mdad.cli.errors import as_options

    notes = [as_options(note, ("orientation",)) for note in data.matrix.notes]
    if note := data.missing.describe():
        notes.append(as_options(note, data.missing.parameters))
    return notes


def info_table(info: DataInfo) -> Table:
    table = Table(show_header=False, title=literal(info.source), title_justify="left")
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    subtasks = ", ".join(f"{name} ({n})" for name, n in info.subtask_sizes.items())
    table.add_row("models", str(info.n_models))
    table.add_row("items", str(info.n_items))
    table.add_row("subtasks", literal(f"{len(info.subtask_sizes)}: {subtasks}"))
    table.add_row("accuracy", f"{points(info.min_accuracy)} to {points(info.max_accuracy)} "
                  f"(mean {points(info.mean_accuracy)}), in points")
    table.add_row("scores", "0/1" if info.is_binary else "partial credit in [0, 1]")
    table.add_row("missing cells", f"{info.n_missing} ({info.models_with_missing} models, "
                  f"{info.items_with_missing} items)")
    table.add_row("confidences", "yes (gold-option probability)" if info.has_confidence
                  else "no (correctness only)")
    return table
