"""Accuracy fractions as text, the same way in the terminal and the report: points with
one decimal, a censored MDAD as "> max gap", an unbounded interval end as ∞."""

from __future__ import annotations

import math

NOT_SHOWN = "—"


def _missing(value: float | None) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def points(value: float | None) -> str:
    """0.065 -> '6.5'; None or NaN -> '—'."""
    return NOT_SHOWN if _missing(value) else f"{100 * float(value):.1f}"


def given_points(value: float) -> str:
    """A number the user gave, in points, as `points` writes it unless that would
    round it: 0.05 -> '5.0', 0.0001 -> '0.01', 0.12345 -> '12.345', 1e-7 -> '0.00001'
    (to 10 decimals)."""
    shown = points(value)
    if abs(float(shown) - 100 * value) < 1e-9:
        return shown
    return f"{100 * value:.10f}".rstrip("0").rstrip(".")


def censored(value: float | None, max_gap: float | None) -> str:
    """An MDAD in points, or '> 13.5' (the largest gap observed) when not reached."""
    if not _missing(value):
        return points(value)
    return NOT_SHOWN if _missing(max_gap) else f"> {points(max_gap)}"


def interval(value: float | None, low: float | None, high: float | None,
             max_gap: float | None) -> str:
    """'11.0 [10.0, 11.5]'; an unreached upper end is ∞; when even the lower end was
    not reached there is no interval, only the censored value."""
    if _missing(low):
        return censored(value, max_gap)
    upper = "∞" if _missing(high) else points(high)
    return f"{censored(value, max_gap)} [{points(low)}, {upper}]"
