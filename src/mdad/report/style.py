"""One look for every figure: each method's colour, line style and names come from its
class (see `mdad.selection.MethodDefaults`), so a method looks the same in every
figure, and a legend names it as people read it and as the CLI takes it."""

from __future__ import annotations

from mdad.errors import ConfigError
from mdad.selection import METHODS, MethodDefaults

# A method a run folder names but no installed package registers.
_FALLBACK = (MethodDefaults.colour, MethodDefaults.line_style)


def _registered(method: str) -> type[MethodDefaults] | None:
    """The class of `method`, or None when none is registered under that name, or its
    plugin failed to load (then the CLI warns): drawn as a method no package names."""
    try:
        return METHODS.get(method)
    except ConfigError:
        return None


def style(method: str) -> dict[str, str]:
    """Matplotlib keyword arguments (color, linestyle, label) for `method`; the label
    is `label(method)`."""
    cls = _registered(method)
    colour, line = (cls.colour, cls.line_style) if cls is not None else _FALLBACK
    return {"color": colour, "linestyle": line, "label": label(method)}


def display_name(method: str) -> str:
    """The method's name for readers, e.g. "Anchor Points"; the CLI name when unknown."""
    cls = _registered(method)
    return (cls.display_name or method) if cls is not None else method


def label(method: str) -> str:
    """The display name with the CLI name, e.g. "Anchor Points (anchor-points)"."""
    cls = _registered(method)
    return cls.label() if cls is not None else method


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
