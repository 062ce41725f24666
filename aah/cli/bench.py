"""``aah bench``: the benchmark tasks, how they were derived, and (later) batch runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, cast

import typer

from aah.cli.options import DataOption, JsonOption, WideOption
from aah.cli.output import (
    console,
    err_console,
    one_line,
    print_json,
    print_line,
    print_table,
    table,
)
from aah.errors import AahError
from aah.scoring import SETTINGS

if TYPE_CHECKING:
    from aah.benchmark.failtalms import CoverageReport, Task
    from aah.scoring import Setting
    from aah.tools.registry import Registry

app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False)


@app.callback()
def bench() -> None:
    """Benchmark tasks: what the data holds and what aah derived from it."""


@app.command("list")
def list_command(as_json: JsonOption = False, wide: WideOption = False) -> None:
    """The benchmarks `aah bench run --benchmark` runs: their flags and published figures."""
    from aah.benchmark import all_benchmarks

    rows = []
    for b in all_benchmarks():
        own = [option.flag for option in b.options]
        reads = ["--" + name.replace("_", "-") for name in sorted(b.reads)]
        rows.append(
            {
                "name": b.name,
                "title": b.title,
                "limit_per": b.group,
                "flags": own,
                "runtime_flags": reads,
                "aah_default": b.defaults["aah"],
                "task_timeout": b.defaults["task_timeout"],
                "report": b.report.key if b.report is not None else None,
                "export": f"--{b.name}" if b.export is not None else None,
                "published": list(b.published),
            }
        )
    if as_json:
        print_json(rows)
        return
    columns = ["benchmark", "--limit per", "its flags", "aah", "published figures"]
    cells = [
        (
            f"{row['name']} ({row['title']})",
            row["limit_per"],
            " ".join(row["flags"] + row["runtime_flags"]) or "-",
            "on" if row["aah_default"] else "off",
            "; ".join(row["published"]),
        )
        for row in rows
    ]
    print_table(table("Benchmarks", columns, cells, wrap=True), wide=wide)


@app.command("data")
def data_command(
    data: DataOption = None,
    stats: Annotated[
        bool, typer.Option("--stats", help="Also list the hard cases, with reasons.")
    ] = False,
    setting: Annotated[
        list[str] | None,
        typer.Option("--setting", help=f"Only this setting (repeatable): {', '.join(SETTINGS)}."),
    ] = None,
    as_json: JsonOption = False,
    show: Annotated[
        str | None, typer.Option("--show", help="Print one task, e.g. underspecified-17.")
    ] = None,
    wide: WideOption = False,
) -> None:
    """Load the five settings and show how each query's original was found."""
    from aah.benchmark.failtalms import load_tasks, measure_coverage
    from aah.data import find_data_dir

    chosen = _settings(setting) if setting else None
    data_dir = find_data_dir(data, need_benchmark=True)
    registry = _registry_or_note(quiet_stdout=as_json)
    try:
        tasks = load_tasks(data_dir, chosen, registry)
    finally:
        if registry is not None:
            registry.close()
    if show is not None:
        _show(_find(tasks, show), as_json, wide)
        return
    report = measure_coverage(tasks)
    if as_json:
        body = report.model_dump(mode="json")
        if not stats:
            body.pop("hard_cases")
        print_json({"registry_checked": registry is not None, **body})
        return
    _print_coverage(report, stats, wide)


def _settings(names: list[str]) -> list[Setting]:
    unknown = [name for name in names if name not in SETTINGS]
    if unknown:
        raise AahError(f"unknown setting {unknown[0]!r}: choose from {', '.join(SETTINGS)}")
    return cast("list[Setting]", names)


def _registry_or_note(*, quiet_stdout: bool) -> Registry | None:
    """The registry, or None after one line saying the endpoint check is skipped."""
    from aah.config import get_settings
    from aah.tools.registry import Registry

    path = get_settings().registry_path()
    if path.is_file():
        return Registry(path)
    note = f"no tool registry at {path}: endpoint names not checked (run `aah tools build`)"
    print_line(note, to=err_console if quiet_stdout else console)
    return None


def _find(tasks: list[Task], task_id: str) -> Task:
    for task in tasks:
        if task.id == task_id:
            return task
    raise AahError(f"no task {task_id!r}: ids look like underspecified-17 (setting-query_id)")


def _show(task: Task, as_json: bool, wide: bool) -> None:
    if as_json:
        print_json(task.model_dump(mode="json"))
        return
    rows = [
        (name, "\n".join(value) if isinstance(value, list) else value)
        for name, value in task.model_dump().items()
    ]
    print_table(table(task.id, ["field", "value"], rows, wrap=True), wide=wide)


def _print_coverage(report: CoverageReport, stats: bool, wide: bool) -> None:
    from aah.benchmark.failtalms import LOW_SIMILARITY

    rows = []
    for row in report.settings:
        facts = (
            f"{row.facts_nonempty} ({100 * row.facts_nonempty / row.total:.1f}%)"
            if row.facts_nonempty is not None and row.total
            else "-"
        )
        rows.append(
            (
                row.setting,
                row.total,
                row.self_matched + row.exact,
                row.fuzzy,
                row.ambiguous,
                row.unmatched,
                row.low_similarity,
                facts,
            )
        )
    columns = [
        "setting",
        "tasks",
        "exact",
        "fuzzy",
        "ambig.",
        "unmatched",
        f"sim<{LOW_SIMILARITY}",
        "with facts",
    ]
    print_table(table("Originals found per setting", columns, rows, compact=True), wide=wide)
    missing = sorted({name for row in report.settings for name in row.missing_endpoints})
    console.print(f"Endpoints the registry lacks: {', '.join(missing) or 'none'}")
    for row in report.settings:
        if row.facts_nonempty is not None and row.same_as_original is not None:
            changed = row.total - row.same_as_original
            console.print(
                f"Hidden facts: {row.facts_nonempty} of {row.total} under-specified tasks "
                f"({100 * row.facts_nonempty / max(row.total, 1):.1f}%); "
                f"{row.facts_nonempty} of the {changed} whose query differs from its original "
                f"({100 * row.facts_nonempty / max(changed, 1):.1f}%). "
                f"{row.same_as_original} are word for word their original: nothing was "
                "removed, so nothing is hidden."
            )
    if stats:
        cases = (
            (c.id, "; ".join(c.reasons), one_line(c.query), one_line(c.original or ""))
            for c in report.hard_cases
        )
        columns = ["task", "why", "query", "original"]
        title = f"Hard cases ({len(report.hard_cases)})"
        print_table(table(title, columns, cases, compact=True), wide=wide)
    else:
        console.print(f"{len(report.hard_cases)} hard cases: see them with --stats")
