"""``aah bench run``: a whole benchmark run, with a progress bar; resumable.

One recipe for every benchmark, found through the registry
(``aah.benchmark.benchmark_names``): the benchmark prepares its tasks from
its flags, the recipe probes the model server, picks the tool mode, runs the
tasks under a progress bar (in worker processes or on Ray if asked), lets
the benchmark score what it scores afterwards, and prints the summary. The
command's flags are the ones every run has, the runtime flags some
benchmarks read, and each benchmark's own (``Benchmark.options``); a flag
the chosen benchmark does not read is refused, never ignored.
"""

from __future__ import annotations

import gc
import inspect
import math
import threading
import time
from collections.abc import Callable, Coroutine, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from aah.benchmark import BenchOption, RunFlags, all_benchmarks, benchmark_names, get_benchmark
from aah.cli.options import (
    AahOption,
    ApproveMethodsOption,
    ApproveOption,
    ApproveToolsOption,
    AssignOption,
    AwarenessOption,
    ConcurrencyOption,
    DataOption,
    DbOption,
    DiscoverKOption,
    GuidelinesOption,
    HumanDeadlineOption,
    ModelOption,
    OtelOption,
    RayOption,
    ReviewersOption,
    RunOption,
    StepLimitOption,
    ToolModeOption,
    ToolResultTokensOption,
    WorkersOption,
    awareness_mode,
)
from aah.cli.output import console, print_line, print_table, print_warning, table
from aah.errors import AahError
from aah.extensions import BASE_HTTP_MODE_NAMES, BATCH_HUMAN_NAMES, listed
from aah.runtime import Activity

if TYPE_CHECKING:
    from aah.benchmark import Benchmark, ProgressHook, RunSummary
    from aah.llm import ProbeReport
    from aah.runtime import SessionOutcome

_EMPTY = inspect.Parameter.empty


def _common_parameters() -> list[tuple[str, Any, Any]]:
    """``(name, annotation, default)`` of the flags every run has and the runtime flags."""
    names = benchmark_names()
    return [
        ("run", RunOption, _EMPTY),
        (
            "benchmark",
            Annotated[str, typer.Option("--benchmark", help=f"{listed(names)}.")],
            names[0],
        ),
        ("aah", AahOption, None),
        (
            "human",
            Annotated[str, typer.Option("--human", help=f"{listed(BATCH_HUMAN_NAMES)}.")],
            "oracle",
        ),
        (
            "limit",
            Annotated[
                int | None,
                typer.Option(
                    "--limit",
                    min=1,
                    help="At most N tasks per "
                    + "; ".join(f"{b.group} ({b.title})" for b in all_benchmarks())
                    + ".",
                ),
            ],
            None,
        ),
        (
            "ids",
            Annotated[list[str], typer.Option("--ids", help="Only these task ids (repeatable).")],
            [],
        ),
        ("concurrency", ConcurrencyOption, 8),
        ("workers", WorkersOption, "1"),
        ("ray", RayOption, None),
        (
            "http",
            Annotated[str, typer.Option("--http", help=f"{listed(BASE_HTTP_MODE_NAMES)}.")],
            "mock",
        ),
        (
            "unavailable",
            Annotated[str, typer.Option("--unavailable", help="hidden or broken.")],
            "hidden",
        ),
        (
            "shard",
            Annotated[str | None, typer.Option("--shard", help="Run shard i of n, e.g. 1/4.")],
            None,
        ),
        ("model", ModelOption, None),
        (
            "seed",
            Annotated[int | None, typer.Option("--seed", help="Seed sent to the model.")],
            None,
        ),
        (
            "task_timeout",
            Annotated[
                float | None,
                typer.Option(
                    "--task-timeout",
                    help="Seconds per task (default: the benchmark's, "
                    + ", ".join(
                        f"{b.title} {b.defaults['task_timeout']:g}" for b in all_benchmarks()
                    )
                    + ").",
                ),
            ],
            None,
        ),
        ("step_limit", StepLimitOption, 10),
        ("human_deadline", HumanDeadlineOption, None),
        ("db", DbOption, None),
        ("data", DataOption, None),
        ("awareness", AwarenessOption, None),
        ("tool_result_tokens", ToolResultTokensOption, None),
        ("tool_mode", ToolModeOption, "native"),
        (
            "probe",
            Annotated[
                bool,
                typer.Option(
                    "--probe/--no-probe",
                    help="Probe the agent's server once before the run (as `aah models check`) "
                    "and store what it found in the run's manifest.",
                ),
            ],
            True,
        ),
        ("discover_k", DiscoverKOption, None),
        (
            "epochs",
            Annotated[
                int,
                typer.Option(
                    "--epochs",
                    min=1,
                    help="Run each task this many times (epoch by epoch; the same name resumes; "
                    "the report adds pass@k and pass^k).",
                ),
            ],
            1,
        ),
        ("approve", ApproveOption, None),
        ("approve_methods", ApproveMethodsOption, None),
        ("approve_tools", ApproveToolsOption, None),
        ("otel", OtelOption, False),
        ("reviewers", ReviewersOption, None),
        ("guidelines", GuidelinesOption, None),
        ("assign", AssignOption, []),
    ]


def _option_parameter(option: BenchOption) -> tuple[str, Any, Any]:
    """A benchmark's own flag as ``(name, annotation, default)`` for Typer."""
    spelling = f"{option.flag}/{option.off_flag}" if option.off_flag else option.flag
    extra: dict[str, Any] = {} if option.minimum is None else {"min": option.minimum}
    kind: Any = list[str] if option.kind is list else option.kind
    if option.default is None:
        kind = kind | None
    return (
        option.name,
        Annotated[kind, typer.Option(spelling, help=option.help, **extra)],
        option.default,
    )


def _own_options() -> dict[str, tuple[BenchOption, list[str]]]:
    """Every benchmark's own flags by name, with the benchmarks that declare each.

    Raises:
        AahError: two benchmarks declare one name differently (a registry mistake).
    """
    found: dict[str, tuple[BenchOption, list[str]]] = {}
    for benchmark in all_benchmarks():
        for option in benchmark.options:
            if option.name in found:
                first, owners = found[option.name]
                same = (first.flag, first.kind, first.default, first.off_flag) == (
                    option.flag,
                    option.kind,
                    option.default,
                    option.off_flag,
                )
                if not same:
                    raise AahError(
                        f"{option.flag}: {owners[0]} and {benchmark.name} declare it differently"
                    )
                owners.append(benchmark.name)
            else:
                found[option.name] = (option, [benchmark.name])
    return found


# Flags of the command that belong to no benchmark's choice: never refused.
# Flags of the run's team: stored before the run by ``set_up_run_team``, whatever the benchmark.
_TEAM_FLAGS = ("reviewers", "guidelines", "assign")
_ALWAYS = frozenset({"benchmark", "otel", *_TEAM_FLAGS})


def _readers(name: str) -> list[str]:
    """The benchmarks that read the runtime flag ``name``."""
    return [b.name for b in all_benchmarks() if name in b.reads]


def bench_run(**given: Any) -> None:
    """Run benchmark tasks as sessions of one named, resumable run."""
    from aah.benchmark import COMMON_FLAGS

    benchmark = get_benchmark(given["benchmark"])
    if given["otel"]:
        from aah.telemetry import turn_on_export

        turn_on_export()
    with _kept_out_of_collections():
        # The run's modules load here: the runtime, langgraph, langchain-core
        # and aiohttp, about 1,000 modules (~0.1 s of collections otherwise).
        from aah.benchmark import check_local_workers, concurrency_shares, parse_workers

    processes = parse_workers(given["workers"])
    concurrency_shares(given["concurrency"], processes)  # refused here: before any data is read
    if given["ray"] is not None:
        from aah.benchmark import check_ray
        from aah.config import get_settings

        check_ray(given["db"] or get_settings().db)
    else:
        check_local_workers(processes)
    _refuse_foreign_flags(benchmark, given)
    own = {k: v for k, v in given.items() if k not in COMMON_FLAGS and k not in _ALWAYS}
    if given["awareness"] is not None:
        own["awareness"] = awareness_mode(given["awareness"])
    flags = RunFlags(
        **{k: given[k] for k in COMMON_FLAGS if k not in ("workers", "db")},
        workers=processes,
        db=_db_path(given["db"]),
        own=own,
        say=lambda line: console.print(f"[dim]{line}[/]", highlight=False),
    )
    if given["reviewers"] is not None or given["guidelines"] is not None or given["assign"]:
        from aah.desk import set_up_run_team
        from aah.store import SessionStore

        with SessionStore(flags.db) as store:
            set_up_run_team(
                store,
                flags.run,
                reviewers=given["reviewers"],
                guidelines=given["guidelines"],
                assign=given["assign"],
            )
    run_benchmark(benchmark, flags)


@contextmanager
def _kept_out_of_collections() -> Iterator[None]:
    """Run the block with the cyclic collector off, then freeze what it left alive.

    For imports: what they create lives as long as the process and is almost
    never cyclic garbage, yet the collector would scan it over and over as the
    heap grows, and again once in each later full collection (``gc.freeze``).
    The batch's ``fewer_gc_pauses`` hands it back when the tasks end.
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_on:
            gc.enable()


def _db_path(db: Path | None) -> Path:
    from aah.config import get_settings

    return db or get_settings().db


def _refuse_foreign_flags(benchmark: Benchmark, given: dict[str, Any]) -> None:
    """Refuse a flag given a value that ``benchmark`` neither declares nor reads.

    Raises:
        AahError: such a flag, naming the benchmarks it belongs to.
    """
    from aah.benchmark import COMMON_FLAGS

    own = {option.name for option in benchmark.options}
    declared = _own_options()
    runtime = {name: default for name, _, default in _common_parameters()}
    for name, value in given.items():
        if name in COMMON_FLAGS or name in _ALWAYS or name in own or name in benchmark.reads:
            continue
        if name in declared:
            option, owners = declared[name]
            default, flag = option.default, option.flag
        else:
            owners, default = _readers(name), runtime[name]
            flag = "--" + name.replace("_", "-")
        if value == default or (value == [] and default is None):
            continue
        raise AahError(
            f"{flag} applies to --benchmark {' or '.join(owners)}, not {benchmark.name}: "
            f"drop it, or use --benchmark {owners[0]}"
        )


def _signature() -> inspect.Signature:
    """``bench_run``'s flags as Typer reads them: the common ones, then each benchmark's own."""
    parameters = [*_common_parameters()]
    parameters += [_option_parameter(option) for option, _ in _own_options().values()]
    return inspect.Signature(
        [
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, annotation=kind, default=default
            )
            for name, kind, default in parameters
        ],
        return_annotation=None,
    )


bench_run.__signature__ = _signature()  # type: ignore[attr-defined]


def run_benchmark(benchmark: Benchmark, flags: RunFlags) -> None:
    """Prepare ``benchmark``'s run from ``flags``, run it under a progress bar, score, summarize.

    Raises:
        AahError: bad data or flags, an unreachable model, a run made with
            another setup, or tasks that ended in error.
    """
    from aah.benchmark import RunOptions
    from aah.llm import model_config, probe_server
    from aah.runtime import choose_tool_mode, run_async, tool_mode_choice
    from aah.store import SessionStore

    given = benchmark.defaults["aah"] if flags.aah is None else flags.aah
    timeout = flags.task_timeout or benchmark.defaults["task_timeout"]
    choice = tool_mode_choice(flags.tool_mode)  # a bad flag, before any data is read
    prepared = benchmark.prepare(flags)
    # A prepared run may decide Aah itself (a reading that offers no tools at all).
    aah = bool(prepared.options.get("aah", given))
    config = model_config("agent", model=flags.model)
    report = run_async(probe_server(config, overflow_probe=False)) if flags.probe else None
    if report is not None:
        act_on_probe(report)
    mode, why = run_async(choose_tool_mode(choice, config, report))
    options = RunOptions(
        run=flags.run,
        aah=aah,
        concurrency=flags.concurrency,
        task_timeout=timeout,
        seed=flags.seed,
        epochs=flags.epochs,
        tool_mode=mode,
        probe=report.model_dump(mode="json") if report is not None else None,
        workers=flags.workers,
        ray=flags.ray,
        **{k: v for k, v in prepared.options.items() if k != "aah"},
    )
    for line in prepared.warnings(options, config, report):
        print_warning(line)
    from rich.markup import escape

    details = f" {prepared.details}" if prepared.details else ""
    workers = ""
    if flags.ray is not None:
        workers = f", {flags.workers} Ray worker(s) on {flags.ray}"
    elif flags.workers > 1:
        workers = f", {flags.workers} worker processes"
    said = (
        f"{len(prepared.tasks)} {prepared.noun}{details}"
        + (f" × {flags.epochs} epochs" if flags.epochs > 1 else "")
        + f", model {config.model}, aah {'on' if aah else 'off'}{prepared.header}, "
        f"tools {mode} ({why}){workers}"
    )
    # Names come from people and servers: shown as written, never read as markup.
    console.print(f"run [bold]{escape(flags.run)}[/]: {escape(said)}", highlight=False)
    activity = Activity()
    summary = run_with_progress(
        flags.run,
        len(prepared.tasks) * flags.epochs,
        lambda on_done, on_waiting: prepared.start(
            options, config, flags.db, on_done, on_waiting, activity
        ),
        activity,
    )
    with SessionStore(flags.db) as store:
        lines = prepared.finish(store)
    print_summary(
        flags.run,
        summary,
        flags.db,
        next_step=prepared.next_step or f"aah report --run {flags.run}",
        after=lines,
    )


def act_on_probe(report: ProbeReport) -> None:
    """One warning line for each finding of the probe that a run should not ignore.

    Raises:
        AahError: the server could not be reached; every task would fail the
            same way, so the run stops before it starts.
    """
    if not report.reachable:
        setting = (
            "AAH_BASE_URL" if report.role == "agent" else f"AAH_{report.role.upper()}_BASE_URL"
        )
        raise AahError(
            f"the model server is unreachable: {report.error}: start it or fix {setting} "
            "(`aah models check` probes it); no task was run"
        )
    for line in report.lines():
        if line.warning:
            print_warning(f"model server: {line.check}: {line.result}; {line.action}")


def run_with_progress(
    name: str,
    total: int,
    start: Callable[[ProgressHook, Callable[[int], None]], Coroutine[Any, Any, RunSummary]],
    activity: Activity | None = None,
) -> RunSummary:
    """Run ``start(on_done, on_waiting)`` to its end under a progress bar of ``total`` tasks.

    The bar counts ended tasks; sessions waiting for a person are shown beside it,
    and, below it, what the run is doing now (``activity``: sessions running,
    model calls out, the age of the last step), so a slow server shows work.
    """
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from aah.runtime import run_async

    # Only the counts that are not zero, so that the line fits 80 columns.
    counts = {"skipped": 0, "error": 0, "waiting": 0}
    live = activity or Activity()
    started = time.perf_counter()

    def status(done: float) -> str:
        parts = [f"skipped {counts['skipped']}"] if counts["skipped"] else []
        parts += [f"errors {counts['error']}"] if counts["error"] else []
        parts += [f"{counts['waiting']} wait for a person"] if counts["waiting"] else []
        rate = done / max(time.perf_counter() - started, 1e-9)
        return " · ".join([*parts, f"{rate:.2f} tasks/s"])

    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(bar_width=12),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        activity_column(live),
        console=console,
        disable=not console.is_terminal,
    )

    # Output to a log or a pipe gets plain lines instead of a bar it cannot redraw.
    def plain_status(done: float) -> str:
        return " · ".join(part for part in (status(done), live.describe()) if part)

    plain = None if console.is_terminal else PlainProgress(name, total, plain_status)
    with progress, plain or nullcontext():
        bar = progress.add_task(name, total=total, status=status(0))

        def on_waiting(count: int) -> None:
            counts["waiting"] = count
            progress.update(bar, status=status(progress.tasks[0].completed))

        def on_done(task_id: str, outcome: SessionOutcome) -> None:
            if outcome.status in counts:
                counts[outcome.status] += 1
            progress.advance(bar)
            progress.update(bar, status=status(progress.tasks[0].completed))
            if plain is not None:
                plain.advance()

        try:
            summary = run_async(start(on_done, on_waiting))
        except KeyboardInterrupt:
            progress.stop()
            if counts["waiting"]:
                print_line(
                    f"interrupted: {counts['waiting']} sessions wait for a person; their "
                    "questions stay in the queue: run the same command again to go on",
                    style="yellow",
                )
            raise
        progress.update(bar, completed=total)
    return summary


def activity_column(activity: Activity) -> Any:
    """A progress column showing what the run does now, read afresh at every redraw."""
    from rich.progress import ProgressColumn
    from rich.progress import Task as ProgressTask
    from rich.text import Text

    class ActivityColumn(ProgressColumn):
        def render(self, task: ProgressTask) -> Text:
            return Text(activity.describe(), style="dim")

    return ActivityColumn()


class PlainProgress:
    """Progress as plain lines, for output that is not a terminal (a log, a pipe).

    A line every tenth of the tasks, and one every ``quiet_seconds`` while
    none ends, so a slow server still shows that the run is alive.
    """

    def __init__(
        self,
        name: str,
        total: int,
        status: Callable[[float], str],
        *,
        quiet_seconds: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name, self.total, self.status, self.clock = name, total, status, clock
        self.quiet_seconds = quiet_seconds
        self.done = 0
        self.started = self.last_line = clock()
        self._every = max(1, math.ceil(total / 10))
        self._stop = threading.Event()
        self._lock = threading.Lock()

    def advance(self) -> None:
        """One task ended: a line when it completes a tenth, or the run."""
        with self._lock:
            self.done += 1
            if self.done % self._every == 0 or self.done == self.total:
                self._line()

    def tick(self) -> None:
        """A line if none was printed for ``quiet_seconds``."""
        with self._lock:
            if self.clock() - self.last_line >= self.quiet_seconds:
                self._line(" (still running)")

    def _line(self, note: str = "") -> None:
        elapsed = int(self.clock() - self.started)
        print_line(
            f"{self.name}: {self.done}/{self.total} tasks ended{note} · {self.status(self.done)}"
            f" · {elapsed // 60}:{elapsed % 60:02d} elapsed"
        )
        self.last_line = self.clock()

    def __enter__(self) -> PlainProgress:
        threading.Thread(target=self._beat, daemon=True, name="aah-progress").start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()

    def _beat(self) -> None:
        while not self._stop.wait(1.0):
            self.tick()


def print_summary(
    run: str,
    summary: RunSummary,
    db: Path,
    next_step: str | None = None,
    after: Sequence[str] = (),
) -> None:
    """The run's counts as a table, the lines ``after`` it, its first errors, and what next."""
    rows: list[list[object]] = [
        ["tasks", summary.total],
        ["already done (resumed)", summary.already_done],
        ["finished", summary.finished],
        ["skipped (awareness no)", summary.skipped],
        ["stopped at the step limit", summary.stopped["step_limit"]],
        ["stopped: reply cut off", summary.stopped["cut_off"]],
        ["errors", summary.errors],
        ["seconds", f"{summary.seconds:.1f}"],
        ["tasks/s", f"{summary.tasks_per_second:.2f}"],
    ]
    if summary.stopped["terminated"]:
        rows.insert(6, ["terminated by a person", summary.stopped["terminated"]])
    print_table(table(f"Run {run}", ["", "count"], rows))
    for line in after:
        print_line(line, style="dim")
    print_line(
        f"stored in {db}; next: "
        f"`{next_step or f'aah grade --run {run}` then `aah report --run {run}'}`",
        style="dim",
    )
    if summary.errors:
        # A run with failed tasks is not a clean run: the exit status says so.
        raise AahError(
            f"{summary.failures()}: run the same command again to retry them "
            "(finished tasks are kept)"
        )
