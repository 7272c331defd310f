"""Rich renderings of library results. Accuracy fractions are shown as points (x100)."""

from __future__ import annotations

import pandas as pd
from rich import box
from rich.table import Table

from mdad.data.info import DataInfo


def points(value: float) -> str:
    return "—" if pd.isna(value) else f"{100 * value:.1f}"


def interval(mdad: float, low: float, high: float) -> str:
    return f"{points(mdad)} [{points(low)}, {points(high)}]"


def study_table(mdad: pd.DataFrame, summary: pd.DataFrame, title: str,
                smooth: pd.DataFrame | None = None) -> Table:
    """Per method, size and source count: MDAD with its 95% interval (seen, unseen),
    mean absolute estimation error and Kendall tau against the seen pool."""
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("method", no_wrap=True)
    table.add_column("size", justify="right")
    table.add_column("sources", justify="right")
    for split in ("seen", "unseen"):
        table.add_column(f"MDAD {split} [95% CI]", justify="right", no_wrap=True)
    if smooth is not None:
        for split in ("seen", "unseen"):
            table.add_column(f"smooth MDAD {split}", justify="right", no_wrap=True)
    table.add_column("error seen", justify="right")
    table.add_column("tau seen", justify="right")
    table.add_column("tau unseen", justify="right")
    keyed = mdad.set_index(["method", "size", "sources", "split"])
    keyed_smooth = (smooth.set_index(["method", "size", "sources", "split"])
                    if smooth is not None else None)
    for row in summary.itertuples(index=False):
        key = (row.method, row.size, row.sources)
        cells = [str(row.method), str(row.size), str(row.sources)]
        for frame in (keyed, keyed_smooth):
            if frame is None:
                continue
            for split in ("seen", "unseen"):
                m = frame.loc[(*key, split)]
                cells.append(interval(m.mdad, m.mdad_low, m.mdad_high))
        cells += [points(row.mae_seen), f"{row.kendall_tau_seen:.2f}",
                  f"{row.kendall_tau_unseen:.2f}"]
        table.add_row(*cells)
    return table


def info_table(info: DataInfo) -> Table:
    table = Table(show_header=False, title=info.source, title_justify="left")
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    subtasks = ", ".join(f"{name} ({n})" for name, n in info.subtask_sizes.items())
    table.add_row("models", str(info.n_models))
    table.add_row("items", str(info.n_items))
    table.add_row("subtasks", f"{len(info.subtask_sizes)}: {subtasks}")
    table.add_row("accuracy", f"{points(info.min_accuracy)} to {points(info.max_accuracy)} "
                  f"(mean {points(info.mean_accuracy)}), in points")
    table.add_row("scores", "0/1" if info.is_binary else "partial credit in [0, 1]")
    table.add_row("missing cells", f"{info.n_missing} ({info.models_with_missing} models, "
                  f"{info.items_with_missing} items)")
    table.add_row("confidences", "yes (gold-option probability)" if info.has_confidence
                  else "no (correctness only)")
    return table
