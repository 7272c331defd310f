"""Where an MDAD table rests on too little data: the notices `mdad run` prints and the
report shows, computed from mdad.csv's own columns."""

from __future__ import annotations

import pandas as pd

from mdad.metrics.mdad import MIN_CROSSING_PAIRS, MIN_GROUP_PAIRS

SHOWN = 4  # rows named in a notice; the rest are counted


def _label(row: pd.Series) -> str:
    where = f"{row.subtask}: " if "subtask" in row and row.subtask is not None else ""
    return f"{where}{row.method} at {row['size']} items, {row.sources} sources, {row.split}"


def _named(rows: pd.DataFrame, detail) -> str:
    named = "; ".join(f"{_label(row)} ({detail(row)})" for _, row in rows.head(SHOWN).iterrows())
    more = len(rows) - SHOWN
    return named + (f"; and {more} more (see mdad.csv)" if more > 0 else "")


def differing_pairs(mdad: pd.DataFrame) -> pd.Series:
    """Pairs of each row whose reference gap is not 0."""
    return mdad.pairs - mdad.tied_pairs


def thin_mask(mdad: pd.DataFrame) -> pd.Series:
    """Rows whose MDAD rests on few pairs: fewer than `MIN_GROUP_PAIRS` in the row, or
    a value set by a bin of fewer than `MIN_CROSSING_PAIRS`; rows where almost no
    pair differs are excluded (see `flat_mask`)."""
    return ~flat_mask(mdad) & ((mdad.pairs < MIN_GROUP_PAIRS) | (
        mdad.reached.astype(bool) & (mdad.crossing_pairs < MIN_CROSSING_PAIRS)))


def estimates_disagree(row) -> bool:
    """Whether the first-crossing and smooth MDAD differ widely: one reached and not
    the other, or apart by more than 1 point and a quarter of the larger."""
    if pd.isna(row.mdad) or pd.isna(row.mdad_smooth):
        return pd.isna(row.mdad) != pd.isna(row.mdad_smooth)
    gap = abs(row.mdad - row.mdad_smooth)
    return bool(gap > max(0.01, 0.25 * max(row.mdad, row.mdad_smooth)))


def flagged_mask(mdad: pd.DataFrame) -> pd.Series:
    """Rows a notice flags, thin or flat: the rows `mdad run` marks with a dagger. None
    in a table from before the pair columns."""
    if not {"pairs", "crossing_pairs", "tied_pairs"} <= set(mdad.columns):
        return pd.Series(False, index=mdad.index)
    return thin_mask(mdad) | flat_mask(mdad)


def flat_mask(mdad: pd.DataFrame) -> pd.Series:
    """Rows where fewer than `MIN_CROSSING_PAIRS` target pairs differ at all."""
    return differing_pairs(mdad) < MIN_CROSSING_PAIRS


# The columns that state a row's MDAD (or a bound on it): none of them is shown for a
# row whose MDAD cannot be measured.
VALUE_COLUMNS = ("mdad", "mdad_low", "mdad_high", "max_gap", "mdad_smooth",
                 "mdad_smooth_low", "mdad_smooth_high")
NOT_MEASURABLE = "not measurable"


def unmeasurable_mask(mdad: pd.DataFrame) -> pd.Series:
    """Rows the notice says no MDAD can be measured for (`flat_mask`); none in a
    table from before the pair columns, which cannot tell."""
    if not {"pairs", "tied_pairs"} <= set(mdad.columns):
        return pd.Series(False, index=mdad.index)
    return flat_mask(mdad)


def as_shown(mdad: pd.DataFrame) -> pd.DataFrame:
    """mdad.csv's rows as every surface shows them: with a boolean column
    `measurable`, and, where it is False, every value column (`VALUE_COLUMNS`) NaN and
    `reached` / `smooth_reached` False, so that no value, interval or "> x" bound is
    drawn or written for a row whose notice says none can be measured. A copy: the
    study's own table (and its numbers) are left as they are."""
    unmeasurable = unmeasurable_mask(mdad).to_numpy(dtype=bool)
    shown = mdad.assign(measurable=~unmeasurable)
    if unmeasurable.any():
        for column in VALUE_COLUMNS:
            if column in shown.columns:
                shown[column] = shown[column].astype(float).mask(unmeasurable)
        for column in ("reached", "smooth_reached"):
            if column in shown.columns:
                shown[column] = shown[column].astype(bool) & ~unmeasurable
    return shown


def thin_data_notices(mdad: pd.DataFrame) -> tuple[str, ...]:
    """One notice for rows whose MDAD rests on few pairs (the crossing bin holds fewer
    than `MIN_CROSSING_PAIRS`, or the row fewer than `MIN_GROUP_PAIRS` pairs), and one
    for rows in which no, or almost no, target pair differs on the reference.

    `mdad` has mdad.csv's columns (`pairs`, `crossing_pairs`, `tied_pairs`, `reached`).
    Tables from before these columns existed give no notice.
    """
    if not {"pairs", "crossing_pairs", "tied_pairs"} <= set(mdad.columns):
        return ()
    notices = []
    flat = mdad[flat_mask(mdad)]
    if not flat.empty:
        notices.append(
            f"no MDAD can be measured where fewer than {MIN_CROSSING_PAIRS} target pairs "
            f"differ on the reference pool; {len(flat)} of {len(mdad)} rows: "
            + _named(flat, lambda r: f"{r.pairs - r.tied_pairs} of {r.pairs} pairs differ")
            + "; " + _flat_fix(flat))
    thin = mdad[thin_mask(mdad)]
    if not thin.empty:
        notices.append(
            f"MDAD rests on few pairs in {len(thin)} of {len(mdad)} rows (fewer than "
            f"{MIN_GROUP_PAIRS:,} pairs in the row, or fewer than {MIN_CROSSING_PAIRS} in the "
            "bin that sets the value): "
            + _named(thin, lambda r: f"{r.pairs:,} pairs, {r.crossing_pairs} in the crossing "
                     "bin")
            + "; these values can move by several points with the seed: use more runs or "
            "targets, and compare with the smooth estimate")
    return tuple(notices)


def _flat_fix(flat: pd.DataFrame) -> str:
    """What to do about rows where too few pairs differ: more targets when the rows
    have few pairs at all, a look at the models when their pairs are tied."""
    fixes = []
    if (flat.pairs < MIN_CROSSING_PAIRS).any():
        fixes.append("use more targets or runs (these rows have too few pairs at all)")
    if (differing_pairs(flat) < flat.pairs / 2).any():
        fixes.append("check that the models are not identical, or all right or all wrong "
                     "(most of their pairs tie)")
    return "; ".join(fixes) or "use more targets or runs"
