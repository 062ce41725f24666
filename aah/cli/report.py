"""``aah report``: the paper's metrics, behaviour, error patterns and agreement of runs."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console, Group
from rich.table import Table

from aah.cli.options import DataOption, DbOption, ForceOption, WideOption
from aah.cli.output import (
    check_output_name,
    console,
    err_console,
    print_line,
    print_table,
    write_output,
)
from aah.cli.sessions import open_store
from aah.errors import AahError
from aah.secrets import scrub_text

if TYPE_CHECKING:
    from rich.console import RenderableType

    from aah.report import Report

FORMATS = ("table", "md", "html", "json", "csv")
DEFAULT_HTML = Path("report.html")
# Wide enough for the paper tables when a terminal table is written to a file.
FILE_WIDTH = 160


def report(
    run: list[str] = typer.Option(
        [], "--run", help="A run to report on; repeat for more (default: every run)."
    ),
    format: str = typer.Option("table", "--format", help="table, md, html, json or csv."),
    out: Path | None = typer.Option(
        None,
        "--out",
        help="Write to this new file (-: stdout); html: report.html by default, replaced.",
    ),
    db: DbOption = None,
    data: DataOption = None,
    wide: WideOption = False,
    charts: Path | None = typer.Option(
        None,
        "--charts",
        help="Also write every chart to this folder as PNG (300 dpi), SVG and PDF.",
    ),
    compare: str | None = typer.Option(
        None, "--compare", help="paper: set the figures beside the Fail-TaLMs paper's."
    ),
    paper_table: Path | None = typer.Option(
        None,
        "--paper-table",
        help="The paper's tables as JSON (format: the Fail-TaLMs paper module's; default shipped).",
    ),
    as_model: list[str] = typer.Option(
        [],
        "--as",
        help="The paper's name of the runs' model: MODEL for every run, or RUN=MODEL (repeatable).",
    ),
    force: ForceOption = False,
) -> None:
    """Report runs: paper metrics with intervals, behaviour, error patterns, agreement."""
    from aah.report import build_report

    if format not in FORMATS:
        raise AahError(f"unknown --format {format!r}: use one of {', '.join(FORMATS)}")
    if compare not in (None, "paper"):
        raise AahError(f"unknown --compare {compare!r}: use --compare paper")
    if (paper_table is not None or as_model) and compare is None:
        raise AahError("--paper-table and --as go with --compare paper: add it")
    tables = None
    if compare == "paper":
        from aah.report import paper_tables

        tables = paper_tables(paper_table)
    to_terminal = format == "table" and out is None
    to_file = (out or DEFAULT_HTML) if out is not None or format == "html" else None
    # The default report.html is the report's own file: a new report replaces it
    # (as a new file, never through a symbolic link); a name given needs --force.
    force = force or out is None
    if to_file is not None:
        check_output_name(to_file, force=force, option="--out")
    with open_store(db) as store, _steps() as step:
        built = build_report(store, run or None, data, progress=step)
        if tables is not None:
            from aah.report import compare_report_with_paper

            built = compare_report_with_paper(built, tables, as_model)
        step("rendering")
        text = "" if to_terminal else _render(built, format, None if wide else FILE_WIDTH)
        if charts is not None:
            step("charts")
            written = _write_charts(built, charts)
    if charts is not None:
        print_line(f"wrote {len(written)} chart files to {charts.resolve()}", to=err_console)
    if to_terminal:
        for item in _terminal_tables(built, None if wide else console.width):
            _print_whole(item, console)
    elif to_file is not None:
        _write(text, to_file, force)
    else:
        sys.stdout.write(text)


def _render(built: Report, format: str, width: int | None) -> str:
    if format == "csv":
        from aah.report import render_csv

        return render_csv(built)
    if format == "json":
        from aah.report import render_json

        return render_json(built)
    if format == "md":
        from aah.report import render_markdown

        return render_markdown(built)
    if format == "html":
        from aah.report import render_html

        return render_html(built)
    # A terminal table sent to a file is drawn there as plain text.
    sink = io.StringIO()
    printer = Console(file=sink, width=FILE_WIDTH, color_system=None)
    for item in _terminal_tables(built, width):
        _print_whole(item, printer)
    return sink.getvalue()


def _print_whole(item: RenderableType, to: Console) -> None:
    # A table narrower than its words would lose figures to "…" (see print_table).
    if isinstance(item, Group):
        for part in item.renderables:
            _print_whole(part, to)
    elif isinstance(item, Table):
        print_table(item, to=to, wide=True)
    else:
        to.print(item)


def _terminal_tables(built: Report, width: int | None) -> list[RenderableType]:
    from aah.report import rich_tables

    return rich_tables(built, width)


def _write_charts(built: Report, folder: Path) -> list[Path]:
    from aah.report import write_charts

    try:
        return write_charts(built, folder)
    except OSError as exc:
        raise AahError(
            f"cannot write charts to {folder} ({exc.strerror}): pass another --charts folder"
        ) from exc


def _write(text: str, path: Path, force: bool) -> None:
    if not write_output(path, scrub_text(text) or "", force=force, option="--out"):
        print_line(f"wrote the report to {path.resolve()}", to=err_console)


@contextmanager
def _steps() -> Iterator[Callable[[str], None]]:
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    # Transient: on a terminal it shows the step under way, then leaves no trace.
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True) as progress:
        task = progress.add_task("report: reading runs", total=None)
        yield lambda name: progress.update(task, description=f"report: {name}")
