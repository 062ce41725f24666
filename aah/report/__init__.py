"""The report over runs: build it, then render it as tables, Markdown, HTML with charts, or JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.scoring.report.build import (
        Report,
        build_report,
        compare_report_with_paper,
        render_json,
    )
    from aah.scoring.report.charts import write_charts
    from aah.scoring.report.html import render_html
    from aah.scoring.report.spreadsheet import render_csv
    from aah.scoring.report.text import render_markdown, rich_tables

__all__ = [
    "Report",
    "build_report",
    "compare_report_with_paper",
    "render_csv",
    "render_html",
    "render_json",
    "render_markdown",
    "rich_tables",
    "write_charts",
]

_WHERE = {
    "Report": "aah.scoring.report.build",
    "build_report": "aah.scoring.report.build",
    "compare_report_with_paper": "aah.scoring.report.build",
    "render_csv": "aah.scoring.report.spreadsheet",
    "render_html": "aah.scoring.report.html",
    "render_json": "aah.scoring.report.build",
    "render_markdown": "aah.scoring.report.text",
    "rich_tables": "aah.scoring.report.text",
    "write_charts": "aah.scoring.report.charts",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
