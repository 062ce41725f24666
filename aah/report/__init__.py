"""The report over runs: build it, then render it as tables, Markdown, HTML with charts, or JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aah.lazy import lazy_getattr

if TYPE_CHECKING:
    from aah.report.build import (
        Report,
        build_report,
        compare_report_with_paper,
        paper_tables,
        render_json,
    )
    from aah.report.charts import write_charts
    from aah.report.html import render_html
    from aah.report.spreadsheet import render_csv
    from aah.report.text import render_markdown, rich_tables

__all__ = [
    "Report",
    "build_report",
    "compare_report_with_paper",
    "paper_tables",
    "render_csv",
    "render_html",
    "render_json",
    "render_markdown",
    "rich_tables",
    "write_charts",
]

_WHERE = {
    "Report": "aah.report.build",
    "build_report": "aah.report.build",
    "compare_report_with_paper": "aah.report.build",
    "paper_tables": "aah.report.build",
    "render_csv": "aah.report.spreadsheet",
    "render_html": "aah.report.html",
    "render_json": "aah.report.build",
    "render_markdown": "aah.report.text",
    "rich_tables": "aah.report.text",
    "write_charts": "aah.report.charts",
}

__getattr__ = lazy_getattr(__name__, _WHERE)
