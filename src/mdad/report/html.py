"""Write a run's report: figures as PNG and SVG, and one self-contained HTML page."""

from __future__ import annotations

import base64
import html
import io
import os
import re
import shutil
import tempfile
from pathlib import Path

import pandas as pd

from mdad.data.files import not_a_file
from mdad.display import censored, points
from mdad.errors import ConfigError
from mdad.report.figures import FigureSpec, all_figures
from mdad.report.sentences import findings
from mdad.report.style import label, method_order
from mdad.safe_io import folder_mode, process_alive
from mdad.study.folder import StudyFolder, read_study_folder
from mdad.study.trust import (
    NOT_MEASURABLE,
    as_shown,
    estimates_disagree,
    flagged_mask,
    thin_data_notices,
)

CSS = """
:root { --ink: #1d2327; --muted: #5f6b73; --rule: #dde3e8; --accent: #0072B2; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff;
  font: 16px/1.55 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1120px; margin: 0 auto; padding: 32px 24px 64px; }
h1 { font-size: 1.7rem; margin: 0 0 4px; }
h2 { font-size: 1.25rem; margin: 40px 0 12px; padding-top: 12px;
  border-top: 1px solid var(--rule); }
.subtitle { color: var(--muted); margin: 0 0 20px; }
.findings { background: #f4f8fb; border-left: 4px solid var(--accent); padding: 14px 20px;
  border-radius: 4px; }
.findings p { margin: 8px 0; }
figure { margin: 24px 0; }
figure img { max-width: 100%; height: auto; display: block; border: 1px solid var(--rule);
  border-radius: 4px; }
figcaption { color: var(--muted); font-size: 0.9rem; margin-top: 6px; }
table { border-collapse: collapse; font-size: 0.88rem; width: 100%; }
th, td { padding: 5px 10px; border-bottom: 1px solid var(--rule); text-align: right;
  white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
th { background: #f7f9fa; cursor: pointer; user-select: none; position: sticky; top: 0; }
th:hover { background: #e9eff3; }
th[aria-sort="ascending"]::after { content: " \\25B2"; font-size: 0.7em; }
th[aria-sort="descending"]::after { content: " \\25BC"; font-size: 0.7em; }
dl.config { display: grid; grid-template-columns: max-content 1fr; gap: 4px 18px; }
dl.config dt { color: var(--muted); }
dl.config dd { margin: 0; font-family: ui-monospace, Menlo, Consolas, monospace;
  font-size: 0.88rem; word-break: break-all; }
.note { color: var(--muted); font-size: 0.9rem; }
.warning { background: #fff6e5; border-left: 4px solid #E69F00; padding: 10px 16px;
  border-radius: 4px; }
"""

# Sortable tables, and a status a browser test can read: every figure decoded and
# shown, and no script error.
SCRIPT = """
window.reportErrors = [];
window.addEventListener("error", function (e) { window.reportErrors.push(String(e.message)); });
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, column) {
    th.addEventListener("click", function () {
      var ascending = th.getAttribute("aria-sort") !== "ascending";
      table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[column].dataset.value, y = b.cells[column].dataset.value;
        var nx = parseFloat(x), ny = parseFloat(y);
        var order = (isNaN(nx) || isNaN(ny)) ? x.localeCompare(y) : nx - ny;
        return ascending ? order : -order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
window.addEventListener("load", function () {
  var images = Array.prototype.slice.call(document.querySelectorAll("img.figure"));
  var hidden = images.filter(function (img) {
    var box = img.getBoundingClientRect();
    return !(img.complete && img.naturalWidth > 0 && box.width > 0 && box.height > 0);
  });
  document.body.dataset.status = (window.reportErrors.length || hidden.length)
    ? "error: " + window.reportErrors.concat(hidden.map(function (i) { return i.alt; }))
        .join("; ")
    : "ok " + images.length + " figures";
});
"""


def _not_written_by_a_report(figures_dir: Path) -> str | None:
    """The name of the first entry of an existing `figures_dir` folder that is not a
    *.png or *.svg file (a report's figures), or None."""
    if not figures_dir.is_dir() or figures_dir.is_symlink():
        return None
    for entry in sorted(figures_dir.iterdir()):
        if entry.suffix not in (".png", ".svg") or entry.is_symlink() or not entry.is_file():
            return entry.name
    return None


# What an interrupted report leaves: its staging folder (``.figures.<pid>.<random>``;
# before mdad named the process, ``.figures.<random>``) and, from mdad before the page
# was staged in that folder, a page temporary ``.report.html.<random>``.
_STALE = re.compile(r"^\.(figures|report\.html)\.(?:(\d+)\.)?[a-z0-9_]{8}$")


def remove_stale_report_files(study_dir: Path) -> list[Path]:
    """Remove what interrupted reports left in `study_dir`: entries named as their
    staging folders and page temporaries (see `_STALE`) whose process has ended; nothing
    else, and never through a link. Returns what was removed."""
    removed = []
    for entry in Path(study_dir).iterdir():
        match = _STALE.match(entry.name)
        if match is None or (match[2] and process_alive(int(match[2]))):
            continue
        if entry.is_symlink() or (match[1] == "report.html" and entry.is_file()):
            entry.unlink(missing_ok=True)  # a link goes, never what it points to
        elif match[1] == "figures" and entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            continue
        removed.append(entry)
    return removed


def write_report(study_dir: Path) -> Path:
    """Write `study_dir`/report.html and `study_dir`/figures/*.png, *.svg; returns the page.

    Figures and page are staged in a private folder beside them (``.figures.<pid>.*``),
    the page renamed into place, then the folder renamed to figures/: an interrupted
    report leaves the previous one intact, or the new page with the previous figures,
    and its staging folder, which the next report removes (`remove_stale_report_files`).

    Raises
    ------
    DataError
        When the study folder is damaged (see `read_study_folder`).
    ConfigError
        When report.html is not a file, or figures/ holds anything but *.png and *.svg
        files (a user's own file there is not deleted).
    """
    study = read_study_folder(study_dir)
    study_dir = Path(study_dir)
    page = study_dir / "report.html"
    if page.exists() and not page.is_file():
        raise ConfigError(f"{page}: {not_a_file(page)}, where the report's page goes; "
                          "remove it")
    figures_dir = study_dir / "figures"
    foreign = _not_written_by_a_report(figures_dir)
    if foreign:
        raise ConfigError(f"{figures_dir} holds {foreign}, which is not a figure; the report "
                          "replaces that folder whole, so move it out first")
    remove_stale_report_files(study_dir)
    # the staging folder names this process, so that a later report removes it only
    # once this one has ended; mkdtemp: private, unique, writable? known before any work
    staging = Path(tempfile.mkdtemp(prefix=f".figures.{os.getpid()}.", dir=study_dir))
    descriptor = None
    try:
        # held from its making: the mode is set through it, never through the name, where
        # a link could be swapped in (O_NOFOLLOW refuses one there now)
        descriptor = os.open(staging, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        specs = all_figures(study)
        images = {}
        for spec in specs:
            buffer = io.BytesIO()
            spec.figure.savefig(buffer, format="png")
            (staging / f"{spec.name}.png").write_bytes(buffer.getvalue())
            spec.figure.savefig(staging / f"{spec.name}.svg", format="svg")
            images[spec.name] = base64.b64encode(buffer.getvalue()).decode("ascii")
        staged_page = staging / ".report.html"  # in the private folder: no link planted
        with staged_page.open("x", encoding="utf-8") as out:  # mode as the umask allows
            out.write(render_page(study, specs, images))
            out.flush()
            os.fsync(out.fileno())
        os.fchmod(descriptor, folder_mode())  # as a folder made by mkdir
        os.replace(staged_page, page)  # a link at `page` is replaced, not followed
        if figures_dir.is_dir() and not figures_dir.is_symlink():
            shutil.rmtree(figures_dir)
        elif figures_dir.exists() or figures_dir.is_symlink():
            figures_dir.unlink()
        os.replace(staging, figures_dir)
    except BaseException:  # SIGTERM included (see mdad.cli.errors.stop_on_signals)
        shutil.rmtree(staging, ignore_errors=True)  # never through a link (rmtree refuses)
        raise
    finally:
        if descriptor is not None:
            os.close(descriptor)
    return page


def render_page(study: StudyFolder, specs: list[FigureSpec], images: dict[str, str]) -> str:
    config = study.config
    dataset = config["dataset"]
    parameters = config["study"]
    title = f"Micro-benchmark reliability: {dataset['name']}"
    parts = [
        "<!doctype html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title>", f"<style>{CSS}</style>", "</head>", "<body>", "<main>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="subtitle">{dataset["n_models"]} models x {dataset["n_items"]} items; '
        f'{parameters["n_runs"]} runs of {parameters["n_targets"]} target models; mdad '
        f'{_e(config["mdad_version"])}</p>',
        "<h2>What the run says</h2>", '<div class="findings">',
        *[f"<p>{_e(finding.text)}</p>" for finding in findings(study)],
        "</div>",
        *[f'<p class="warning"><strong>Thin data.</strong> {_e(notice)}</p>'
          for notice in thin_data_notices(study.mdad)],
        '<p class="note">MDAD (minimum detectable ability difference): the smallest gap in '
        "accuracy between two models that a micro-benchmark ranks the same way as the full "
        f"(seen) pool with probability at least {study.threshold:.0%}. Numbers are accuracy "
        "points; intervals are 95% bootstrap intervals. A value written \u201c&gt; x\u201d "
        "was not reached within the largest gap observed, x; an interval end of \u221e was "
        "not reached either. In the table, \u2020 marks a value with few pairs behind it "
        "(see the notices) and \u2021 a first-crossing and smooth MDAD that differ "
        f"widely; \u201c{NOT_MEASURABLE}\u201d marks a row where too few target pairs "
        "differ for any MDAD to be measured (see the notices): no value, interval or bound "
        "is given for it, here or in the figures.</p>",
    ]
    if study.per_subtask:
        parts.append('<p class="note">Per-subtask study: figures and tables show the pooled '
                     "results, whose size is the total number of items over subtasks; each "
                     "subtask's rows are in mdad.csv.</p>")
    parts.append("<h2>Figures</h2>")
    for spec in specs:
        parts += [f'<figure id="{spec.name}">',
                  f'<img class="figure" alt="{_e(spec.name)}" '
                  f'src="data:image/png;base64,{images[spec.name]}">',
                  f"<figcaption>{_e(spec.caption)} (figures/{spec.name}.png, .svg)"
                  "</figcaption>", "</figure>"]
    parts += ["<h2>Tables</h2>", '<p class="note">Click a column to sort.</p>',
              _results_table(study), "<h2>Configuration</h2>", _config_list(study),
              f"<script>{SCRIPT}</script>", "</main>", "</body>", "</html>"]
    return "\n".join(parts) + "\n"


def _results_table(study: StudyFolder) -> str:
    """The study's rows, marked as `mdad run`'s table marks them: † few pairs behind
    the value, ‡ the first-crossing and smooth MDAD differ widely, "not measurable"
    (and no value, interval or bound) where too few target pairs differ."""
    mdad = as_shown(study.mdad).assign(_thin=flagged_mask(study.mdad)).set_index(
        ["method", "size", "sources", "split"])
    smooth = "mdad_smooth" in study.mdad.columns
    headers = ["method", "size", "sources"]
    for split in ("seen", "unseen"):
        headers += [f"MDAD {split}", f"95% CI {split}"] + ([f"smooth {split}"] if smooth else [])
    exposure = "distinct_items" in study.summary.columns
    headers += (["pairs"] if "pairs" in study.mdad.columns else []) + [
        "error seen", "error unseen", "tau seen", "tau unseen"] + (
        ["items used", "top item seen by"] if exposure else [])
    rows = []
    summary = study.summary.copy()
    summary["order"] = summary.method.map({m: i for i, m in enumerate(
        method_order(list(summary.method.unique())))})
    for row in summary.sort_values(["order", "size", "sources"]).itertuples():
        cells = [(label(row.method), label(row.method)),
                 (str(row.size), row.size), (str(row.sources), row.sources)]
        for split in ("seen", "unseen"):
            m = mdad.loc[(row.method, row.size, row.sources, split)]
            if not m.measurable:  # the notice says none can be measured: no number
                cells += [(NOT_MEASURABLE, UNMEASURABLE_KEY), ("—", UNMEASURABLE_KEY)]
                cells += [("—", UNMEASURABLE_KEY)] if smooth else []
                continue
            cells += [(censored(m.mdad, m.max_gap) + (" †" if m["_thin"] else ""),
                       _sort_key(m.mdad)),
                      (_bounds(m.mdad_low, m.mdad_high), _sort_key(m.mdad_low))]
            if smooth:
                cells.append((censored(m.mdad_smooth, m.max_gap)
                              + (" ‡" if estimates_disagree(m) else ""),
                              _sort_key(m.mdad_smooth)))
        if "pairs" in study.mdad.columns:
            pairs = int(mdad.loc[(row.method, row.size, row.sources, "seen")].pairs)
            cells.append((f"{pairs:,}", pairs))
        for column in ("mae_seen", "mae_unseen"):
            cells.append((points(getattr(row, column)), getattr(row, column)))
        for column in ("kendall_tau_seen", "kendall_tau_unseen"):
            value = getattr(row, column)
            cells.append(("—" if pd.isna(value) else f"{value:.2f}", value))
        if exposure:  # distinct items the targets answered, mean over runs
            used, share = row.distinct_items, row.top_item_share
            cells += [("—" if pd.isna(used) else f"{used:.1f}", used),
                      ("—" if pd.isna(share) else f"{share:.0%} of targets", share)]
        rows.append("<tr>" + "".join(f'<td data-value="{_e(str(v))}">{_e(t)}</td>'
                                     for t, v in cells) + "</tr>")
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    return (f'<table class="sortable"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>")


def _bounds(low: float, high: float) -> str:
    if pd.isna(low):
        return "not reached"
    return f"{points(low)} to {'∞' if pd.isna(high) else points(high)}"


UNMEASURABLE_KEY = 2e9  # sorts after every value, censored ones included


def _sort_key(value: float) -> float:
    """Censored values sort after every reached one."""
    return 1e9 if pd.isna(value) else float(value)


def _config_list(study: StudyFolder) -> str:
    config, parameters, dataset = study.config, study.config["study"], study.config["dataset"]
    items = [
        ("dataset", dataset["name"]), ("file", dataset["path"]), ("sha256", dataset["sha256"]),
        ("models x items", f"{dataset['n_models']} x {dataset['n_items']}"),
        ("methods", ", ".join(parameters["methods"])),
        ("sizes", ", ".join(map(str, study.sizes))),
        ("runs", parameters["n_runs"]), ("targets per run", parameters["n_targets"]),
        ("source models", ", ".join(map(str, parameters["sources"]))),
        ("fixed targets", len(parameters["target_models"])
         if parameters.get("target_models") else "no"),
        ("seed", parameters["seed"]), ("threshold", parameters["threshold"]),
        ("bootstrap resamples", parameters["n_resamples"]),
        ("missing data", f"{dataset['missing_policy']}: {dataset['dropped_items']} items, "
                         f"{len(dataset['dropped_models'])} models dropped"),
        ("mdad version", config["mdad_version"]),
        ("command", " ".join(config.get("command") or [])),
    ]
    if config.get("confidence_substituted_by_correctness"):
        items.append(("correctness as confidence",
                      ", ".join(config["confidence_substituted_by_correctness"])))
    items += [("notice", notice) for notice in config.get("notices", [])]
    body = "".join(f"<dt>{_e(k)}</dt><dd>{_e(str(v))}</dd>" for k, v in items)
    return f'<dl class="config">{body}</dl>'


def _e(text: str) -> str:
    return html.escape(str(text), quote=True)
