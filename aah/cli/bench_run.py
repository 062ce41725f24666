"""``aah bench run``: a whole benchmark run, with a progress bar; resumable."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Coroutine
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import typer

from aah.benchmark.failtalms import SETTINGS
from aah.cli.options import (
    AahOption,
    ApproveMethodsOption,
    ApproveOption,
    ApproveToolsOption,
    AwarenessOption,
    ConcurrencyOption,
    DataOption,
    DbOption,
    DiscoverKOption,
    HumanDeadlineOption,
    ModelOption,
    OtelOption,
    RayOption,
    RunOption,
    StepLimitOption,
    ToolModeOption,
    ToolResultTokensOption,
    WorkersOption,
    awareness_mode,
)
from aah.cli.output import console, print_line, print_table, print_warning, table
from aah.cli.tools import open_registry
from aah.errors import AahError
from aah.extensions import BASE_HTTP_MODE_NAMES, BATCH_HUMAN_NAMES, known_name, listed
from aah.runtime import Activity

BENCHMARKS = ("fail-talms", "when2call", "bfcl")

if TYPE_CHECKING:
    from aah.benchmark import ProgressHook, RunSummary, TaskT, ToolSource, UnavailableMode
    from aah.benchmark.failtalms import Setting, Task
    from aah.llm import ProbeReport
    from aah.runtime import SessionOutcome


def parse_settings(value: str) -> list[Setting]:
    """``all`` or a comma-separated list of setting names."""
    if value == "all":
        return list(SETTINGS)
    chosen = [part.strip() for part in value.split(",") if part.strip()]
    unknown = [name for name in chosen if name not in SETTINGS]
    if unknown or not chosen:
        raise AahError(
            f"unknown setting {', '.join(unknown) or value!r}: use {', '.join(SETTINGS)} or all"
        )
    return chosen  # type: ignore[return-value]


def choose_tasks(tasks: list[Task], limit: int | None, ids: list[str]) -> list[Task]:
    """Tasks named by ``--ids``, else at most ``limit`` per setting, in data order."""
    return choose_by_group(
        tasks,
        limit,
        ids,
        lambda task: task.setting,
        "underspecified-17 (see `aah bench data --show`)",
    )


def choose_by_group(
    tasks: list[TaskT],
    limit: int | None,
    ids: list[str],
    group: Callable[[TaskT], str],
    id_example: str,
) -> list[TaskT]:
    """Tasks named by ``--ids``, else at most ``limit`` per ``group``, in data order.

    Raises:
        AahError: an id names no task (the message shows ``id_example``).
    """
    if ids:
        wanted = set(ids)
        chosen = [task for task in tasks if task.id in wanted]
        missing = wanted - {task.id for task in chosen}
        if missing:
            raise AahError(f"no task with id {sorted(missing)[0]!r}: ids look like {id_example}")
        return chosen
    if limit is None:
        return tasks
    taken: dict[str, int] = {}
    chosen = []
    for task in tasks:
        key = group(task)
        if taken.get(key, 0) < limit:
            taken[key] = taken.get(key, 0) + 1
            chosen.append(task)
    return chosen


def bench_run(
    run: RunOption,
    setting: str = typer.Option("all", "--setting", help="A setting, a comma list, or all."),
    aah: AahOption = None,
    human: str = typer.Option("oracle", "--human", help=f"{listed(BATCH_HUMAN_NAMES)}."),
    limit: int | None = typer.Option(
        None,
        "--limit",
        min=1,
        help="At most N tasks per setting (When2Call: per gold behaviour; BFCL: per category).",
    ),
    category: str = typer.Option(
        "all-single-turn", "--category", help="BFCL: a category, a comma list, or all-single-turn."
    ),
    ids: list[str] = typer.Option([], "--ids", help="Only these task ids (repeatable)."),
    concurrency: ConcurrencyOption = 8,
    workers: WorkersOption = "1",
    ray: RayOption = None,
    http: str = typer.Option("mock", "--http", help=f"{listed(BASE_HTTP_MODE_NAMES)}."),
    unavailable: str = typer.Option("hidden", "--unavailable", help="hidden or broken."),
    shard: str | None = typer.Option(None, "--shard", help="Run shard i of n, e.g. 1/4."),
    model: ModelOption = None,
    seed: int | None = typer.Option(None, "--seed", help="Seed sent to the model."),
    task_timeout: float = typer.Option(600.0, "--task-timeout", help="Seconds per task."),
    step_limit: StepLimitOption = 10,
    human_deadline: HumanDeadlineOption = None,
    db: DbOption = None,
    data: DataOption = None,
    benchmark: str = typer.Option("fail-talms", "--benchmark", help=f"{listed(BENCHMARKS)}."),
    turns: int = typer.Option(
        1, "--turns", min=1, help="When2Call: model turns per question (the first is scored)."
    ),
    awareness: AwarenessOption = None,
    judge: bool = typer.Option(
        False, "--judge", help="When2Call: label first turns with the LLM judge too."
    ),
    judge_model: str | None = typer.Option(
        None, "--judge-model", help="When2Call judge model (default AAH_JUDGE_MODEL)."
    ),
    tool_result_tokens: ToolResultTokensOption = None,
    tool_mode: ToolModeOption = "native",
    probe: bool = typer.Option(
        True,
        "--probe/--no-probe",
        help="Probe the agent's server once before the run (as `aah models check`) and "
        "store what it found in the run's manifest.",
    ),
    tools: str = typer.Option(
        "given",
        "--tools",
        help="Fail-TaLMs: given (the task's endpoints are handed to the agent) or registry "
        "(none are: it finds them with find_tools over the whole registry, minus what the "
        "setting removes).",
    ),
    discover: bool = typer.Option(
        False, "--discover", help="Fail-TaLMs: also give the agent find_tools beside its endpoints."
    ),
    discover_k: DiscoverKOption = None,
    epochs: int = typer.Option(
        1,
        "--epochs",
        min=1,
        help="Run each task this many times (epoch by epoch; the same name resumes; "
        "the report adds pass@k and pass^k).",
    ),
    approve: ApproveOption = None,
    approve_methods: ApproveMethodsOption = None,
    approve_tools: ApproveToolsOption = None,
    otel: OtelOption = False,
) -> None:
    """Run benchmark tasks as sessions of one named, resumable run."""
    if otel:
        from aah.telemetry import turn_on_export

        turn_on_export()
    from aah.benchmark import check_local_workers, concurrency_shares, parse_workers

    processes = parse_workers(workers)
    concurrency_shares(concurrency, processes)  # refused here: before any data is read
    if ray is not None:
        from aah.benchmark import check_ray
        from aah.config import get_settings

        check_ray(db or get_settings().db)
    else:
        check_local_workers(processes)
    if benchmark not in BENCHMARKS:
        raise AahError(f"unknown --benchmark {benchmark!r}: use {' or '.join(BENCHMARKS)}")
    if tools not in ("given", "registry"):
        raise AahError(f"unknown --tools {tools!r}: use given or registry")
    if benchmark != "fail-talms" and (tools != "given" or discover):
        raise AahError(
            f"--tools registry and --discover are Fail-TaLMs settings, not {benchmark}'s: "
            "drop them, or use --benchmark fail-talms"
        )
    from aah.runtime import policy_from_options

    approvals = policy_from_options(approve, approve_methods, approve_tools or [])
    if approvals is not None and benchmark != "fail-talms":
        # Their scores read the calls the model proposed in one turn, not a person's decisions.
        raise AahError(f"--approve* flags work with --benchmark fail-talms, not {benchmark}")
    if awareness is not None and benchmark != "when2call":
        # Fail-TaLMs asks what each setting asks, BFCL never asks: a flag
        # that would change nothing is an error, not a silent no-op.
        raise AahError(
            f"--awareness applies to --benchmark when2call; {benchmark} sets its own: drop it"
        )
    if benchmark == "bfcl":
        from aah.cli.bench_bfcl import BfclFlags, run_bfcl

        run_bfcl(
            BfclFlags(
                run,
                category,
                bool(aah),
                limit,
                ids,
                concurrency,
                shard,
                model,
                seed,
                task_timeout,
                db,
                data,
                epochs,
                tool_mode,
                probe,
                workers=processes,
                ray=ray,
            )  # fmt: skip
        )
        return
    aah = True if aah is None else aah
    if benchmark == "when2call":
        from aah.cli.bench_when2call import When2CallFlags, run_when2call

        flags = When2CallFlags(
            run, aah, limit, ids, concurrency, shard, model, seed, task_timeout, turns,
            awareness_mode(awareness or "none"), judge, judge_model, db, data, epochs,
            tool_mode, probe, workers=processes, ray=ray,
        )  # fmt: skip
        run_when2call(flags)
        return
    from aah.benchmark import RunOptions, parse_shard, shard_tasks
    from aah.benchmark.failtalms import BatchRunner, load_tasks
    from aah.config import get_settings
    from aah.data import find_data_dir
    from aah.llm import model_config, probe_server
    from aah.runtime import choose_tool_mode, run_async, tool_mode_choice

    human_name = known_name(BATCH_HUMAN_NAMES, human, "--human")
    choice = tool_mode_choice(tool_mode)
    http_mode = known_name(BASE_HTTP_MODE_NAMES, http, "--http")
    if unavailable not in ("hidden", "broken"):
        raise AahError(f"unknown --unavailable {unavailable!r}: use hidden or broken")
    data_dir = find_data_dir(data, need_benchmark=True)
    registry = open_registry(data, build_if_missing=True)
    tasks = choose_tasks(load_tasks(data_dir, parse_settings(setting)), limit, ids)
    tasks = shard_tasks(tasks, parse_shard(shard))
    config = model_config("agent", model=model)
    report = run_async(probe_server(config, overflow_probe=False)) if probe else None
    if report is not None:
        act_on_probe(report)
    mode, why = run_async(choose_tool_mode(choice, config, report))
    options = RunOptions(
        run=run,
        aah=aah,
        human=human_name,
        concurrency=concurrency,
        http=http_mode,
        unavailable=cast("UnavailableMode", unavailable),
        step_limit=step_limit,
        task_timeout=task_timeout,
        seed=seed,
        human_deadline=human_deadline,
        tool_result_tokens=tool_result_tokens or get_settings().tool_result_tokens,
        tool_mode=mode,
        epochs=epochs,
        probe=report.model_dump(mode="json") if report is not None else None,
        tools=cast("ToolSource", tools),
        discover=discover,
        discover_k=discover_k or get_settings().discover_k,
        approvals=approvals,
        workers=processes,
        ray=ray,
    )
    runner = BatchRunner(options, registry, config)
    if report is not None and options.probe is not None:
        largest = runner.largest_prompt_tokens(tasks)
        options.probe["largest_prompt_tokens"] = largest
        warn_if_too_long(largest, report.context_length, config.max_tokens)
    db_path = db or get_settings().db
    console.print(
        f"run [bold]{run}[/]: {len(tasks)} tasks"
        + (f" × {epochs} epochs" if epochs > 1 else "")
        + f", model {config.model}, "
        f"aah {'on' if aah else 'off'}, human {human}, http {http}, tools {mode} ({why})"
        + (", tools found with find_tools" if tools == "registry" else "")
        + (", find_tools on" if discover and tools == "given" else "")
        + (f", {processes} worker processes" if processes > 1 and ray is None else "")
        + (f", {processes} Ray worker(s) on {ray}" if ray is not None else ""),
        highlight=False,
    )
    activity = Activity()
    summary = run_with_progress(
        run,
        len(tasks) * epochs,
        lambda on_done, on_waiting: runner.run(
            tasks, db_path, on_done, on_waiting, activity=activity
        ),
        activity,
    )
    print_summary(run, summary, db_path)


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


def warn_if_too_long(largest: int, context: int | None, reply_tokens: int | None) -> None:
    """Warn when the run's largest first request (plus a reply) may not fit the context."""
    if context is None:
        return
    needed = largest + (reply_tokens or 0)
    if needed > context:
        print_warning(
            f"the largest first request of this run is about {largest:,} tokens (plus "
            f"{reply_tokens or 0:,} for the reply), but the server's context is {context:,}: "
            "those tasks will fail; use a model with a larger context"
        )


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


def print_summary(run: str, summary: RunSummary, db: Path, next_step: str | None = None) -> None:
    """The run's counts as a table, its first errors, and what to do next."""
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
