"""The report for a terminal (rich tables) and as Markdown, every text made inert.

Run names, model names, queries, final answers and annotator names come from
models, tools and people: in a terminal they are shown as written, never read
as rich markup; in Markdown every character that could open HTML, code, a
link, emphasis or a table cell is escaped.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.markup import escape as rich_escape
from rich.table import Table
from rich.text import Text

from aah.report.build import Report
from aah.report.tables import report_tables, run_label
from aah.scoring import ReportTable

# A rich table's cell adds one space each side and one rule: its column is 3 wider
# than its longest word; the table adds its last rule.
_CELL_EXTRA = 3


def column_widths(item: ReportTable, *, narrowest: bool = False) -> list[int]:
    """Each column's width in a terminal, padding and rule included.

    Its longest cell; or, ``narrowest``, its longest word (rich wraps the rest).
    """

    def width(cell: str) -> int:
        words = cell.split() if narrowest else [cell]
        return max((cell_len(word) for word in words), default=0)

    return [
        max(map(width, column)) + _CELL_EXTRA
        for column in zip(item.columns, *item.rows, strict=True)
    ]


def split_to_width(item: ReportTable, width: int) -> list[ReportTable]:
    """``item`` as tables no wider than ``width``, each repeating its key columns.

    Every part repeats the ``keys`` columns that name a row, so that no part
    shows figures without saying whose they are. The columns after the keys
    are packed in order into as few parts as fit at their full width, so that
    no cell needs wrapping; a column too wide for that gets the room left
    beside the keys (at least its longest word). The keys are planned at full
    width, or wrapped to their longest word where that makes fewer parts.
    Each part records its planned ``widths``, which ``rich_tables`` holds rich
    to (rich's own folding of a table to the terminal narrows a column that
    cannot wrap and leaves the table too wide). No word is ever cut; a part
    whose words alone are too wide is printed whole. The caption goes under
    the last part.
    """
    full = column_widths(item)
    if sum(full) + 1 <= width:
        return [item]
    least = column_widths(item, narrowest=True)
    keys = min(item.keys, len(item.columns))
    plans = [_plan(full[:keys], full, least, width), _plan(least[:keys], full, least, width)]
    planned, parts = min(plans, key=lambda plan: len(plan[1]))
    titled = len(parts) > 1
    return [
        item._replace(
            title=f"{item.title} ({number} of {len(parts)})" if titled else item.title,
            columns=[item.columns[i] for i in [*range(keys), *part]],
            rows=[[row[i] for i in [*range(keys), *part]] for row in item.rows],
            caption=item.caption if number == len(parts) else "",
            widths=tuple(planned[i] for i in [*range(keys), *part]),
        )
        for number, part in enumerate(parts, start=1)
    ]


def _plan(
    key_widths: list[int], full: list[int], least: list[int], width: int
) -> tuple[list[int], list[list[int]]]:
    """Planned widths, and the other columns packed into parts beside keys this wide."""
    base = sum(key_widths) + 1
    planned = key_widths + [
        min(full[i], max(least[i], width - base)) for i in range(len(key_widths), len(full))
    ]
    parts: list[list[int]] = [[]]
    for index in range(len(key_widths), len(full)):
        if parts[-1] and base + sum(planned[i] for i in parts[-1]) + planned[index] > width:
            parts.append([])
        parts[-1].append(index)
    return planned, parts


def rich_tables(report: Report, width: int | None = None) -> list[RenderableType]:
    """The report as rich renderables for a terminal; every text shown as written.

    Args:
        report: The report.
        width: The terminal's width: a table wider than that is split into
            parts that fit (``split_to_width``); None keeps every table whole.
    """
    shown: list[RenderableType] = []
    items = report_tables(report)
    if width is not None:
        items = [part for item in items for part in split_to_width(item, width)]
    for item in items:
        table = Table(title=rich_escape(item.title), title_justify="left")
        planned = item.widths or (None,) * len(item.columns)
        for column, planned_width in zip(item.columns, planned, strict=True):
            # The planned width less padding and rule: rich wraps the column to it.
            most = None if planned_width is None else planned_width - _CELL_EXTRA
            table.add_column(rich_escape(column), max_width=most)
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
