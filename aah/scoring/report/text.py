"""The report for a terminal (rich tables) and as Markdown, every text made inert.

Run names, model names, queries, final answers and annotator names come from
models, tools and people: in a terminal they are shown as written, never read
as rich markup; in Markdown every character that could open HTML, code, a
link, emphasis or a table cell is escaped.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.markup import escape as rich_escape
from rich.table import Table
from rich.text import Text

from aah.scoring.report.build import Report
from aah.scoring.report.tables import ReportTable, report_tables, run_label


def rich_tables(report: Report) -> list[RenderableType]:
    """The report as rich renderables for a terminal; every text shown as written."""
    shown: list[RenderableType] = []
    for item in report_tables(report):
        table = Table(title=rich_escape(item.title), title_justify="left")
        for column in item.columns:
            table.add_column(rich_escape(column))
        for row in item.rows:
            table.add_row(*(rich_escape(cell) for cell in row))
        shown.append(Group(table, Text(item.caption, style="dim")))
    if report.notes:
        shown.append(Text("Notes:\n" + "\n".join(f"- {note}" for note in report.notes)))
    return shown


_MARKDOWN_ESCAPES = str.maketrans(
    {
        "\\": "\\\\",
        "`": "\\`",
        "|": "\\|",
        "[": "\\[",
        "]": "\\]",
        "*": "\\*",
        "_": "\\_",
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        "\n": " ",
        "\r": " ",
    }
)


def escape_markdown(text: str) -> str:
    """``text`` inert in Markdown: no HTML, code, link, emphasis or table syntax left."""
    return text.translate(_MARKDOWN_ESCAPES)


def markdown_table(item: ReportTable) -> str:
    """One table as a Markdown heading, pipe table and caption."""
    lines = [f"## {escape_markdown(item.title)}", ""]
    lines.append("| " + " | ".join(escape_markdown(c) for c in item.columns) + " |")
    lines.append("|" + "---|" * len(item.columns))
    lines += ["| " + " | ".join(escape_markdown(c) for c in row) + " |" for row in item.rows]
    if item.caption:
        lines += ["", escape_markdown(item.caption)]
    return "\n".join(lines) + "\n"


def render_markdown(report: Report) -> str:
    """The whole report as one Markdown document."""
    runs = ", ".join(run_label(run) for run in report.runs)
    parts = [f"# aah report\n\nRuns: {escape_markdown(runs)}\n"]
    parts += [markdown_table(item) for item in report_tables(report)]
    if report.notes:
        notes = "\n".join(f"- {escape_markdown(note)}" for note in report.notes)
        parts.append(f"## Notes\n\n{notes}\n")
    return "\n".join(parts)
