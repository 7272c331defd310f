"""Figures and a self-contained HTML report of a finished run folder."""

from mdad.report.html import write_report
from mdad.report.run_data import RunData, load_run

__all__ = ["RunData", "load_run", "write_report"]
