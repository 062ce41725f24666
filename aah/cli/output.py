"""Shared output helpers for the commands: one console, one-line messages, JSON, tables, files."""

from __future__ import annotations

import json
import os
import secrets
import stat
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from aah.errors import AahError
from aah.terminal_text import printable

console = Console()
err_console = Console(stderr=True)
# Wider than any table: measuring at this width finds what a table needs.
_UNBOUNDED_WIDTH = 100_000
# A column of a table too wide for the terminal keeps this many cells while it can.
_MIN_COLUMN = 8


def print_line(text: str, *, to: Console | None = None, style: str = "") -> None:
    """Print ``text`` as one line that the terminal's width never wraps.

    The text is shown as written (never read as markup); line breaks inside
    it become spaces, so a script can read one message per line.
    """
    _print_one_line(Text(one_line(text), style=style), to or console)


def print_error(message: str, *, to: Console | None = None) -> None:
    """Print ``error: <message>`` as one line, to stderr unless told otherwise."""
    _print_labelled("error:", "bold red", message, to or err_console)


def print_warning(message: str, *, to: Console | None = None) -> None:
    """Print ``warning: <message>`` as one line, to stderr unless told otherwise."""
    _print_labelled("warning:", "yellow", message, to or err_console)


def _print_labelled(label: str, style: str, message: str, to: Console) -> None:
    _print_one_line(Text.assemble((label, style), " ", one_line(message)), to)


def _print_one_line(text: Text, to: Console) -> None:
    # soft_wrap leaves long lines to the terminal, which a pipe or a test
    # capture never folds: a phrase a script searches for stays whole.
    to.print(text, soft_wrap=True, highlight=False)


def one_line(text: str) -> str:
    """``text`` on one line: its line breaks become spaces, control characters escaped.

    Messages and table cells quote servers, models and specs: their control
    sequences are not ours to send, and a row of a table is one line.
    """
    return " ".join(printable(text).splitlines())


def print_json(data: object) -> None:
    """Print ``data`` as JSON for scripts: stable key order, UTF-8 kept."""
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def print_table(table: Table, *, to: Console | None = None, wide: bool = False) -> None:
    """Print ``table`` to fit the terminal, or whole with ``wide``.

    The one rule for every table aah prints: a table wider than the
    terminal narrows its widest columns first (a column keeps its header's
    width, or 8 cells, while it can), and what no longer fits is cut with
    "…", never mid-word unmarked: a listing (one row a line) cuts the cell,
    a table made with ``wrap`` folds its cells at spaces and cuts only a word
    longer than its column. ``wide`` (the commands' ``--wide``) prints every
    cell whole instead, however wide the lines: no word is ever cut, and a
    script that reads the output sees every figure.
    """
    target = to or console
    if wide:
        _print_whole(table, target)
    else:
        _print_fitted(table, target)


def _print_whole(table: Table, target: Console) -> None:
    from rich.measure import Measurement

    unbounded = target.options.update_width(_UNBOUNDED_WIDTH)
    for column in table.columns:
        cells = [Measurement.get(target, unbounded, c) for c in [column.header, *column.cells]]
        # A listing's cells stay on one line; prose may fold, but only at spaces.
        column.min_width = max(m.maximum if column.no_wrap else m.minimum for m in cells)
    # Narrower than its longest words, rich would drop columns: draw it at that width.
    needed = Measurement.get(target, unbounded, table).minimum
    if needed > target.width:
        table.width = needed
    target.print(table, crop=False)


def _print_fitted(table: Table, target: Console) -> None:
    from rich.measure import Measurement

    unbounded = target.options.update_width(_UNBOUNDED_WIDTH)
    natural = [
        max(Measurement.get(target, unbounded, cell).maximum for cell in [c.header, *c.cells])
        for c in table.columns
    ]
    # What the borders and padding take, whatever the cells hold.
    overhead = Measurement.get(target, unbounded, table).maximum - sum(natural)
    headers = [Measurement.get(target, unbounded, c.header).maximum for c in table.columns]
    widths = _narrow(natural, headers, target.width - overhead)
    for column, width in zip(table.columns, widths, strict=True):
        column.width = width
        column.overflow = "ellipsis"
    target.print(table)


def _narrow(widths: list[int], headers: list[int], room: int) -> list[int]:
    """``widths`` cut, widest first, until they sum to ``room``.

    Columns shrink first to their header's width or ``_MIN_COLUMN`` cells,
    then to their header's width, and only a terminal too narrow even for
    the headers takes columns down towards one cell.
    """
    widths = list(widths)
    excess = sum(widths) - max(room, len(widths))
    roomy = [min(w, max(h, _MIN_COLUMN)) for w, h in zip(widths, headers, strict=True)]
    tight = [min(w, h) for w, h in zip(widths, headers, strict=True)]
    for limits in (roomy, tight, [1] * len(widths)):
        while excess > 0:
            shrinkable = [i for i, w in enumerate(widths) if w > limits[i]]
            if not shrinkable:
                break
            widest = max(shrinkable, key=lambda i: widths[i])
            widths[widest] -= 1
            excess -= 1
    return widths


def table(
    title: str | None,
    columns: Sequence[str],
    rows: Iterable[Sequence[object]],
    *,
    compact: bool = False,
    wrap: bool = False,
) -> Table:
    """A rich table; every cell is shown as plain text, never as markup.

    ``compact`` drops the vertical rules, so a wide table fits 80 columns.
    A table is a listing, one row a line, unless ``wrap`` lets its cells
    fold at spaces (prose: what a check found, what aah does about it).
    """
    from rich import box

    result = Table(
        # A title too long for the terminal is cut like a cell, never mid-word unmarked.
        title=None if title is None else Text(title, overflow="ellipsis"),
        title_justify="left",
        box=box.SIMPLE_HEAD if compact else box.HEAVY_HEAD,
        pad_edge=not compact,
        collapse_padding=compact,
    )
    for column in columns:
        result.add_column(column, no_wrap=not wrap, overflow="ellipsis")
    for row in rows:
        result.add_row(*(_plain(cell) for cell in row))
    return result


def _plain(cell: object) -> str:
    # Endpoint descriptions and model text may hold "[...]", which rich would
    # read as markup; escaping keeps them as written.
    from rich.markup import escape

    return escape("" if cell is None else str(cell))


# The file name that means standard output (``--otlp -``, ``--out -``).
STANDARD_OUTPUT = "-"
# A new file only: never an existing name, never through a symbolic link.
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)


def check_output_name(path: Path, *, force: bool, option: str) -> None:
    """Refuse, before any work, a file name the command would not write (see :func:`write_output`).

    Raises:
        AahError: ``path`` exists and ``force`` is off, or it is a folder.
    """
    if str(path) == STANDARD_OUTPUT:
        return
    if path.is_dir() and not path.is_symlink():
        raise AahError(f"{path} is a folder: name a file with {option}")
    if not force and (path.exists() or path.is_symlink()):
        raise _exists(path, option)


def write_output(path: Path, text: str, *, force: bool, option: str) -> bool:
    """Write ``text`` to the file a person named with ``option``; ``-`` is standard output.

    A name that exists (a file, a symbolic link, even a broken one) is
    refused unless ``force``. With ``force`` the text goes to a new file in
    the same folder, which then takes the name: a symbolic link there is
    replaced, never written through; a reader never sees half a file; a file
    replaced keeps its permissions.

    Returns:
        Whether the text went to standard output.

    Raises:
        AahError: the name is refused or cannot be written (one line naming ``option``).
    """
    if str(path) == STANDARD_OUTPUT:
        sys.stdout.write(text)
        sys.stdout.flush()
        return True
    check_output_name(path, force=force, option=option)
    data = text.encode("utf-8")
    try:
        if force:
            _replace(path, data)
        else:
            _create(path, data)
    except FileExistsError:
        raise _exists(path, option) from None
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise AahError(f"cannot write {path} ({why}): choose another {option} file") from None
    return False


def _exists(path: Path, option: str) -> AahError:
    return AahError(f"{path} exists: pass --force to replace it, or choose another {option} file")


def _create(path: Path, data: bytes) -> None:
    descriptor = os.open(path, _NEW_FILE, 0o666)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
    except BaseException:
        path.unlink(missing_ok=True)  # made here: no half-written file is left
        raise


def _replace(path: Path, data: bytes) -> None:
    try:
        before = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        before = None
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.part")
    descriptor = os.open(temporary, _NEW_FILE, 0o666)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            if before is not None and stat.S_ISREG(before.st_mode):
                os.fchmod(handle.fileno(), stat.S_IMODE(before.st_mode))
            handle.write(data)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
