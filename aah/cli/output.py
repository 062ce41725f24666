"""Shared output helpers for the commands: one console, JSON, tables."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from rich.console import Console
from rich.table import Table

console = Console()
err_console = Console(stderr=True)


def print_json(data: object) -> None:
    """Print ``data`` as JSON for scripts: stable key order, UTF-8 kept."""
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str))


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
