"""``aah db``: maintenance of session databases (merging shards)."""

from __future__ import annotations

from pathlib import Path

import typer

from aah.cli.output import WideOption, print_table, table

app = typer.Typer(no_args_is_help=True)


@app.command()
def merge(
    sources: list[Path] = typer.Argument(..., help="Session databases to merge."),
    into: Path = typer.Option(..., "--into", help="The database to merge into."),
    wide: bool = WideOption,
) -> None:
    """Merge session databases (e.g. the shards of one run) into one."""
    from aah.store import merge_databases

    summaries = merge_databases(sources, into)
    rows = (
        [str(s.source), s.runs, s.sessions, s.events, s.human_requests, s.grades, s.conflicts]
        for s in summaries
    )
    columns = ["source", "runs", "sessions", "events", "questions", "grades", "conflicts"]
    print_table(table(f"Merged into {into}", columns, rows), wide=wide)
