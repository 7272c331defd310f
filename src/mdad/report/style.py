"""One look for every figure: a colour-blind-safe palette (Okabe and Ito) with a fixed
colour and line style per method, so a method looks the same in every figure."""

from __future__ import annotations

from mdad.selection import METHODS

# Okabe-Ito colours; methods of one family share a colour and differ by line style.
METHOD_STYLE: dict[str, tuple[str, str]] = {
    "random": ("#000000", "-"),
    "subtask-equal": ("#999999", "-"),
    "subtask-proportional": ("#999999", "--"),
    "diversity": ("#CC79A7", "-"),
    "confidence-strata": ("#E69F00", "-"),
    "anchor-points": ("#0072B2", "-"),
    "anchor-points-predictor": ("#0072B2", "--"),
    "tinybenchmarks": ("#D55E00", "-"),
    "tinybenchmarks-pirt": ("#009E73", "-"),
    "tinybenchmarks-gpirt": ("#56B4E9", "-"),
}
DISPLAY_NAMES: dict[str, str] = {
    "random": "Random (uniform)",
    "subtask-equal": "Random (subtask, equal)",
    "subtask-proportional": "Random (subtask, proportional)",
    "diversity": "Diversity (DPP)",
    "confidence-strata": "Stratified (confidence)",
    "anchor-points": "Anchor Points",
    "anchor-points-predictor": "Anchor Points predictor",
    "tinybenchmarks": "tinyBenchmarks",
    "tinybenchmarks-pirt": "tinyBenchmarks p-IRT",
    "tinybenchmarks-gpirt": "tinyBenchmarks gp-IRT",
}
_FALLBACK = ("#555555", ":")


def style(method: str) -> dict[str, str]:
    """Matplotlib keyword arguments (color, linestyle, label) for `method`."""
    colour, line = METHOD_STYLE.get(method, _FALLBACK)
    return {"color": colour, "linestyle": line, "label": display_name(method)}


def display_name(method: str) -> str:
    return DISPLAY_NAMES.get(method, method)


def method_order(methods: list[str]) -> list[str]:
    """`methods` in registry order (the order of `mdad methods`), unknown ones last."""
    known = list(METHODS)
    return sorted(methods, key=lambda m: known.index(m) if m in known else len(known))


RC_PARAMS = {
    "figure.dpi": 100,
    "savefig.dpi": 110,
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.frameon": False,
    "legend.fontsize": 8.5,
    "svg.fonttype": "none",
}
