"""Shared output helpers for the commands: one console, one-line messages, JSON, tables."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from aah.terminal_text import printable

console = Console()
err_console = Console(stderr=True)
# Wider than any table: measuring at this width finds what a table needs.
_UNBOUNDED_WIDTH = 100_000


def print_line(text: str, *, to: Console | None = None, style: str = "") -> None:
    """Print ``text`` as one line that the terminal's width never wraps.

    The text is shown as written (never read as markup); line breaks inside
    it become spaces, so a script can read one message per line.
    """
    _print_one_line(Text(_one_line(text), style=style), to or console)


def print_error(message: str, *, to: Console | None = None) -> None:
    """Print ``error: <message>`` as one line, to stderr unless told otherwise."""
    _print_labelled("error:", "bold red", message, to or err_console)


def print_warning(message: str, *, to: Console | None = None) -> None:
    """Print ``warning: <message>`` as one line, to stderr unless told otherwise."""
    _print_labelled("warning:", "yellow", message, to or err_console)


def _print_labelled(label: str, style: str, message: str, to: Console) -> None:
    _print_one_line(Text.assemble((label, style), " ", _one_line(message)), to)


def _print_one_line(text: Text, to: Console) -> None:
    # soft_wrap leaves long lines to the terminal, which a pipe or a test
    # capture never folds: a phrase a script searches for stays whole.
    to.print(text, soft_wrap=True, highlight=False)


def _one_line(text: str) -> str:
    # Messages quote servers and models: their control sequences are not ours to send.
    return " ".join(printable(text).splitlines())


def print_json(data: object) -> None:
    """Print ``data`` as JSON for scripts: stable key order, UTF-8 kept."""
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def print_table(table: Table, *, to: Console | None = None) -> None:
    """Print ``table`` so that no word in it is ever cut short, however narrow the terminal.

    rich folds a table's text to fit the terminal, and where its words do not
    fit it cuts cells to "5…". Here each column is at least as wide as its
    longest word, so a table too wide for the terminal is printed whole and
    the terminal wraps its lines: every figure stays readable, and whole for
    a script that reads the output.
    """
    from rich.measure import Measurement

    target = to or console
    unbounded = target.options.update_width(_UNBOUNDED_WIDTH)
    for column in table.columns:
        cells = [column.header, *column.cells]
        column.min_width = max(Measurement.get(target, unbounded, cell).minimum for cell in cells)
    # Narrower than its longest words, rich would drop columns: draw it at that width.
    needed = Measurement.get(target, unbounded, table).minimum
    if needed > target.width:
        table.width = needed
    target.print(table, crop=False)


def table(
    title: str | None,
    columns: Sequence[str],
    rows: Iterable[Sequence[object]],
    *,
    compact: bool = False,
) -> Table:
    """A rich table; every cell is shown as plain text, never as markup.

    ``compact`` drops the vertical rules, so a wide table fits 80 columns.
    """
    from rich import box

    result = Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD if compact else box.HEAVY_HEAD,
        pad_edge=not compact,
        collapse_padding=compact,
    )
    for index, column in enumerate(columns):
        # A compact table keeps its first column (the row's name) whole.
        result.add_column(column, no_wrap=compact and index == 0)
    for row in rows:
        result.add_row(*(_plain(cell) for cell in row))
    return result


def _plain(cell: object) -> str:
    # Endpoint descriptions and model text may hold "[...]", which rich would
    # read as markup; escaping keeps them as written.
    from rich.markup import escape

    return escape("" if cell is None else str(cell))
