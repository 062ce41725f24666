"""MkDocs hook: the reference pages, written at build time from the code itself.

A page in docs/reference/ holds a short introduction and a marker such as
``<!-- generated: cli -->``; this hook replaces the marker with what the code
says now, so the pages cannot fall behind it:

- ``cli``: every command, subcommand, argument and option of the Typer app
  (``aah.cli.app``), with the help ``--help`` prints;
- ``environment``: every ``AAH_*`` variable aah reads (the fields of
  ``aah.config.Settings``, and the names its modules read themselves), with
  the descriptions in ``environment.yaml`` beside this file;
- ``schema``: the session store's tables and columns (``aah.store.schema``'s
  ``SCHEMA_SQL``, made in an in-memory SQLite) and its schema version;
- ``events``: each event type of ``aah.events``, its fields and docstring;
- ``perf``: the scripts of ``perf/``, each with what it measures (its docstring).

The functions are also imported by tests/test_docs.py.
"""

from __future__ import annotations

import ast
import re
import sqlite3
import types
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import yaml

ROOT = Path(__file__).resolve().parents[2]
ENVIRONMENT_TABLE = Path(__file__).with_name("environment.yaml")
MARKER = re.compile(r"^<!-- generated: (?P<name>[a-z]+) -->$", re.M)
# Characters that would turn help text into Markdown it does not mean.
_MARKDOWN = str.maketrans({"<": "&lt;", ">": "&gt;", "*": r"\*", "|": r"\|", "[": r"\["})


_CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def text(value: str) -> str:
    """Plain text (help, docstrings) as Markdown that shows it as written.

    Code spans (```x```, RST's ````x````) are kept as code, as they are; the
    text between them is escaped.
    """
    shown, at = [], 0
    for span in _CODE_SPAN.finditer(value):
        shown += [value[at : span.start()].translate(_MARKDOWN), f"`{span[2]}`"]
        at = span.end()
    return "".join([*shown, value[at:].translate(_MARKDOWN)])


# The CLI ------------------------------------------------------------------


def cli_reference() -> str:
    """Every command of ``aah``, depth first, as ``--help`` describes it."""
    import typer.main
    from typer._click.core import Context

    from aah.cli import app

    root = typer.main.get_command(app)
    lines: list[str] = []

    def walk(command: Any, name: str, parent: Any, depth: int) -> None:
        ctx = Context(command, info_name=name, parent=parent)
        path = ctx.command_path
        if depth:
            lines.append(f"{'#' * min(depth + 1, 6)} `{path}`\n")
        lines.append(f"```text\n{command.get_usage(ctx)}\n```\n")
        if command.help:
            lines.extend(text(paragraph) + "\n" for paragraph in command.help.split("\n\n"))
        arguments: list[str] = []
        options: list[str] = []
        for param in command.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None or getattr(param, "hidden", False):
                continue
            shown, helped = record
            row = f"| `{shown}` | {text(' '.join(helped.split()))} |"
            (arguments if param.param_type_name == "argument" else options).append(row)
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                lines.extend([f"**{title}**\n", "| Name | Help |", "| --- | --- |", *rows, ""])
        subcommands = getattr(command, "commands", {})
        if subcommands and depth:
            listed = [f"`{sub}`" for sub, one in subcommands.items() if not one.hidden]
            lines.append(f"Subcommands: {', '.join(listed)}.\n")
        for sub, one in subcommands.items():
            if not one.hidden:
                walk(one, sub, ctx, depth + 1)

    walk(root, "aah", None, 0)
    return "\n".join(lines)


# Environment variables ----------------------------------------------------


def read_variables(package: Path = ROOT / "aah") -> dict[str, list[str]]:
    """Each ``AAH_*`` variable aah reads, with the modules that name it.

    A ``Settings`` field ``x`` is read as ``AAH_X``; any other variable is
    read by name, so it appears in the code as a string that is exactly that
    name (a docstring or a message that mentions one is no read).
    """
    from aah.config import Settings

    found: dict[str, set[str]] = {
        f"AAH_{field.upper()}": {"aah.config"} for field in Settings.model_fields
    }
    for path in sorted(package.rglob("*.py")):
        module = ".".join(path.relative_to(package.parent).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and re.fullmatch(r"AAH_[A-Z0-9_]+", node.value)
            ):
                found.setdefault(node.value, set()).add(module)
    return {name: sorted(modules) for name, modules in sorted(found.items())}


def described_variables() -> dict[str, dict[str, dict[str, str]]]:
    """``environment.yaml``: group, then name, then its ``text`` and ``default``."""
    table = yaml.safe_load(ENVIRONMENT_TABLE.read_text(encoding="utf-8"))
    return {
        group: {
            name: entry if isinstance(entry, dict) else {"text": entry}
            for name, entry in variables.items()
        }
        for group, variables in table.items()
    }


def _setting_default(name: str) -> str | None:
    from pydantic_core import PydanticUndefined

    from aah.config import Settings

    field = Settings.model_fields.get(name.removeprefix("AAH_").lower())
    if field is None:
        return None
    if field.default_factory is not None:
        return "computed (see the description)"
    if field.default is None or field.default is PydanticUndefined:
        return "unset"
    value = field.default
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, list | tuple) and not value:
        return "unset"
    return f"`{value}`"


def environment_reference() -> str:
    """The variables by group, each with its default and what it does.

    Raises:
        ValueError: the code reads a variable the table does not describe, or
            the table describes one the code never reads.
    """
    read = read_variables()
    groups = described_variables()
    described = {name for variables in groups.values() for name in variables}
    if set(read) != described:
        raise ValueError(
            f"docs/hooks/environment.yaml: describe {sorted(set(read) - described)}, "
            f"remove {sorted(described - set(read))}"
        )
    lines = []
    for group, variables in groups.items():
        lines += [f"## {group}\n", "| Variable | Default | What it does |", "| --- | --- | --- |"]
        for name, entry in variables.items():
            default = _setting_default(name) or entry.get("default", "unset")
            lines.append(f"| `{name}` | {default} | {' '.join(entry['text'].split())} |")
        lines.append("")
    return "\n".join(lines)


# The store's schema -------------------------------------------------------


class TableNotes(NamedTuple):
    """What ``SCHEMA_SQL`` says of a table beyond its columns' types."""

    name: str
    comment: str  # the ``--`` lines above its CREATE TABLE
    columns: dict[str, str]  # a column's ``--`` lines and its CHECK, as Markdown
    constraints: list[str]  # table constraints: composite keys, UNIQUE, CHECK


_CONSTRAINT = ("UNIQUE", "PRIMARY", "CHECK", "FOREIGN", "CONSTRAINT")


def table_notes(sql: str) -> Iterator[TableNotes]:
    """Each table of ``sql``, in its order, with the comments and checks beside it."""
    for match in re.finditer(
        r"((?:^--[^\n]*\n)*)CREATE TABLE IF NOT EXISTS (\w+) \((.*?)\n\)[^;\n]*;",
        sql,
        re.S | re.M,
    ):
        comment = " ".join(line[2:].strip() for line in match[1].splitlines())
        columns: dict[str, str] = {}
        constraints: list[str] = []
        pending: list[str] = []
        for line in match[3].splitlines():
            line = line.strip().rstrip(",")
            if line.startswith("--"):
                pending.append(line[2:].strip())
                continue
            if not line:
                continue
            if line.split()[0].upper() in _CONSTRAINT:
                constraints.append(" ".join(line.split()))
            elif line[0].isalpha() or line[0] == "_":
                check = re.search(r"CHECK \((.*)\)$", line)
                notes = [text(" ".join(pending)), f"`CHECK ({check[1]})`" if check else ""]
                columns[line.split()[0]] = " ".join(note for note in notes if note)
            pending = []
        yield TableNotes(match[2], comment, columns, constraints)


def schema_reference() -> str:
    """The store's tables, their columns and indexes, as SQLite makes them."""
    from aah.store.schema import SCHEMA_SQL, SCHEMA_VERSION

    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA_SQL)
    lines = [f"Schema version: **{SCHEMA_VERSION}** (SQLite's `user_version`).\n"]
    for table, comment, notes, constraints in table_notes(SCHEMA_SQL):
        lines.append(f"## `{table}`\n")
        if comment:
            lines.append(text(comment) + "\n")
        lines += ["| Column | Type | Null | Default | Key | Note |", *["| --- " * 6 + "|"]]
        foreign = {
            row[3]: f"{row[2]}.{row[4]}"
            for row in conn.execute(f"PRAGMA foreign_key_list({table})")
        }
        for _, name, kind, notnull, default, pk in conn.execute(f"PRAGMA table_info({table})"):
            key = "primary" if pk else (f"→ `{foreign[name]}`" if name in foreign else "")
            shown = f"`{default}`" if default is not None else ""
            null = "no" if notnull or pk else "yes"
            lines.append(
                f"| `{name}` | {kind or 'any'} | {null} | {text(shown)} | {key} "
                f"| {notes.get(name, '')} |"
            )
        indexes = []
        for _, index, unique, *_ in conn.execute(f"PRAGMA index_list({table})"):
            if not index.startswith("sqlite_autoindex"):
                columns = ", ".join(row[2] for row in conn.execute(f"PRAGMA index_info({index})"))
                indexes.append(f"`{index}` ({columns}){' unique' if unique else ''}")
        if indexes:
            lines.append(f"\nIndexes: {', '.join(indexes)}.")
        if constraints:
            lines.append(f"\nConstraints: {', '.join(f'`{c}`' for c in constraints)}.")
        lines.append("")
    return "\n".join(lines)


# Events -------------------------------------------------------------------


def type_text(annotation: Any) -> str:
    """A field's type as a reader writes it: ``str | None``, ``'yes' | 'no'``."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return type_text(typing.get_args(annotation)[0])
    if origin is typing.Literal:
        return " \\| ".join(repr(value) for value in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(type_text(arg) for arg in typing.get_args(annotation))
    if origin is not None:
        args = ", ".join(type_text(arg) for arg in typing.get_args(annotation))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    if annotation is type(None):
        return "None"
    return getattr(annotation, "__name__", str(annotation))


def events_reference() -> str:
    """Each kind of event: its docstring, then its fields with their types and meaning."""
    import docstring_parser

    from aah.events import Event, EventBase

    union = typing.get_args(Event)[0]
    kinds = typing.get_args(union)

    def section(model: type[Any], skip: set[str]) -> list[str]:
        doc = docstring_parser.parse(model.__doc__ or "")
        meaning = {p.arg_name: p.description or "" for p in doc.params}
        out = [text(doc.short_description or "") + "\n"]
        if doc.long_description:
            out.append(text(doc.long_description) + "\n")
        out += ["| Field | Type | Meaning |", "| --- | --- | --- |"]
        for name, field in model.model_fields.items():
            if name in skip:
                continue
            shown = type_text(field.annotation)
            out.append(f"| `{name}` | {shown} | {text(' '.join(meaning.get(name, '').split()))} |")
        return [*out, ""]

    base = set(EventBase.model_fields)
    lines = ["## Every event\n", *section(EventBase, set())]
    for model in kinds:
        kind = model.model_fields["kind"].default
        lines += [f"## `{kind}`\n", f"`{model.__name__}`: " + section(model, base | {"kind"})[0]]
        lines += section(model, base | {"kind"})[1:]
    return "\n".join(lines)


# Performance scripts -----------------------------------------------------


def perf_reference(folder: Path = ROOT / "perf") -> str:
    """Each script of ``perf/`` with the first line of its docstring: what it prints."""
    rows = ["| Script | What it measures |", "| --- | --- |"]
    for path in sorted(folder.glob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        rows.append(f"| `perf/{path.name}` | {text(doc.split(chr(10), 1)[0])} |")
    return "\n".join(rows) + "\n"


GENERATORS: dict[str, Callable[[], str]] = {
    "cli": cli_reference,
    "environment": environment_reference,
    "schema": schema_reference,
    "events": events_reference,
    "perf": perf_reference,
}


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Fill each ``<!-- generated: NAME -->`` marker of a page (MkDocs's hook)."""
    return MARKER.sub(lambda match: GENERATORS[match["name"]](), markdown)
