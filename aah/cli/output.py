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


def table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[object]]) -> Table:
    """A rich table; every cell is shown as plain text, never as markup."""
    result = Table(title=title, title_justify="left")
    for column in columns:
        result.add_column(column)
    for row in rows:
        result.add_row(*(_plain(cell) for cell in row))
    return result


def _plain(cell: object) -> str:
    # Endpoint descriptions and model text may hold "[...]", which rich would
    # read as markup; escaping keeps them as written.
    from rich.markup import escape

    return escape("" if cell is None else str(cell))
