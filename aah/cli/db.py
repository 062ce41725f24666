"""``aah db``: maintenance of session databases (checking one, merging shards)."""

from __future__ import annotations

from pathlib import Path

import typer

from aah.cli.options import DbOption, JsonOption, WideOption
from aah.cli.output import print_json, print_line, print_table, table
from aah.db_url import parse_location

app = typer.Typer(no_args_is_help=True)


@app.command()
def check(
    location: str | None = typer.Argument(
        None,
        metavar="[DB]",
        help="The database: an SQLite file or postgresql://USER@HOST/DB (default --db, AAH_DB).",
    ),
    # Not ``readable``: a file this user may not read is a problem to report.
    db: DbOption = None,
    quick: bool = typer.Option(
        False, "--quick", help="SQLite's quick_check: faster, skips matching indexes to tables."
    ),
    as_json: JsonOption = False,
    wide: WideOption = False,
) -> None:
    """Check a session database without changing it; exit 1, one line per problem, if unwell."""
    from aah.config import get_settings
    from aah.db_url import parse_location
    from aah.store import check_database

    where = parse_location(location) if location is not None else db or get_settings().db
    found = check_database(where, quick=quick)
    if as_json:
        print_json(found.model_dump(mode="json"))
    else:
        rows: list[tuple[str, object]] = [
            ("schema", "unreadable" if found.schema_version is None else found.schema_version),
            ("integrity", found.integrity or "not checked"),
        ]
        rows += [(table_name.replace("_", " "), n) for table_name, n in found.counts.items()]
        rows += [(f"sessions {s}", n) for s, n in found.sessions_by_status.items()]
        rows += [(f"requests {s}", n) for s, n in found.requests_by_status.items()]
        print_table(table(found.path, ["checked", "found"], rows, compact=True), wide=wide)
        for problem in found.problems:
            print_line(f"problem: {problem}")
    if not found.healthy:
        raise typer.Exit(1)


@app.command()
def merge(
    sources: list[Path] = typer.Argument(
        ..., parser=parse_location, help="Session databases (SQLite files) to merge."
    ),
    into: Path = typer.Option(
        ..., "--into", parser=parse_location, help="The database (an SQLite file) to merge into."
    ),
    wide: WideOption = False,
) -> None:
    """Merge session databases (e.g. the shards of one run) into one."""
    from aah.store import merge_databases

    summaries = merge_databases(sources, into)
    rows = (
        [
            str(s.source),
            s.runs,
            s.sessions,
            s.events,
            s.human_requests,
            s.grades,
            s.reviews,
            s.ask_readings,
            s.conflicts,
        ]
        for s in summaries
    )
    columns = [
        "source",
        "runs",
        "sessions",
        "events",
        "questions",
        "grades",
        "reviews",
        "readings",
        "conflicts",
    ]
    print_table(table(f"Merged into {into}", columns, rows), wide=wide)


@app.command()
def migrate(
    location: str | None = typer.Argument(
        None,
        metavar="[DB]",
        help="The database: an SQLite file or postgresql://USER@HOST/DB (default --db, AAH_DB).",
    ),
    db: DbOption = None,
) -> None:
    """Create a session database's tables, or bring an older one to this aah's schema.

    Every command does this on first use; run it ahead, as a user allowed to
    create tables, where the users of a PostgreSQL store may not.
    """
    from aah.config import get_settings
    from aah.db_url import parse_location
    from aah.store import SessionStore, check_database

    where = parse_location(location) if location is not None else db or get_settings().db
    SessionStore(where).close()
    print_line(f"{where} uses session schema {check_database(where, quick=True).schema_version}")


@app.command()
def copy(
    source: Path = typer.Argument(
        ..., parser=parse_location, help="The store to copy: an SQLite file or a PostgreSQL URL."
    ),
    target: Path = typer.Argument(
        ..., parser=parse_location, help="The store to copy into (made if missing)."
    ),
    wide: WideOption = False,
) -> None:
    """Copy a session store to another engine (SQLite to PostgreSQL, or back); run again to resume.

    Exits 1, one line per table, when the two stores' row counts or contents (a digest of
    each table's rows) differ after the copy.
    """
    from aah.store import copy_database

    summary = copy_database(source, target)
    rows = [
        (table, summary.copied[table], summary.source[table], summary.target[table])
        for table in summary.copied
    ]
    columns = ["table", "copied now", "in source", "in destination"]
    print_table(table(f"Copied {source} to {target}", columns, rows), wide=wide)
    if summary.unfinished:
        print_line(
            f"note: {summary.unfinished} running or waiting session(s) cannot go on from the "
            "copy (checkpoints are not copied): finish them where they are"
        )
    for problem in summary.problems:
        print_line(f"problem: {problem}")
    if summary.problems:
        print_line(
            "the copy does not match its source: if the source changed meanwhile, run the "
            "same command again; else copy into an empty database"
        )
        raise typer.Exit(1)
