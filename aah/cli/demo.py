"""``aah demo``: the demo tasks, offline, with no API key and no download.

With no model configured, a fake OpenAI-compatible server on 127.0.0.1 plays a
scripted agent, and says so. With ``AAH_BASE_URL``/``AAH_MODEL`` set, the
same tasks run on that model. Tools answer in mock mode either way.
"""

from __future__ import annotations

import sys
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from aah.cli.options import DataOption, DbOption, OtelOption, WideOption
from aah.cli.output import console, one_line, print_line, print_table, table

if TYPE_CHECKING:
    from aah.benchmark import DemoTask
    from aah.llm import ModelConfig
    from aah.runtime import SessionOutcome
    from aah.testing import FakeLLMServer
    from aah.tools import EndpointSpec
    from aah.tools.registry import Registry


def demo(
    task: list[str] = typer.Option([], "--task", help="Run only these demo tasks (repeatable)."),
    db: DbOption = None,
    data: DataOption = None,
    plain: bool = typer.Option(
        False, "--plain", help="Print a trace even in a terminal (no terminal app)."
    ),
    wide: WideOption = False,
    otel: OtelOption = False,
) -> None:
    """Run the demo tasks: a question to the human, a tool failure, a skip, a success.

    In a terminal with the ui extra installed this opens the terminal app;
    otherwise (or with --plain) it runs every task and prints a trace.
    """
    if otel:
        from aah.telemetry import turn_on_export

        turn_on_export()
    if not plain and sys.stdin.isatty() and sys.stdout.isatty() and find_spec("textual"):
        from aah.cli.tui import run_tui

        run_tui(db, data, task[0] if task else None)
        return
    from pydantic import SecretStr

    from aah.benchmark import SCRIPTED_LABEL, demo_script, demo_task, load_demo_tasks
    from aah.cli.tools import open_registry
    from aah.config import get_settings
    from aah.llm import ModelConfig, model_config
    from aah.runtime import run_async
    from aah.testing import FakeLLMServer

    tasks = [demo_task(name) for name in task] if task else list(load_demo_tasks())
    registry = open_registry(data, build_if_missing=True)
    db_path = db or get_settings().db
    settings = get_settings()
    if settings.model and settings.base_url:
        config = model_config("agent")
        console.print(f"[bold]model:[/] {config.model} at {config.base_url}", highlight=False)
        outcomes = run_async(_run_all(tasks, registry, db_path, config))
    else:
        console.print(f"[bold yellow]{SCRIPTED_LABEL}[/]")
        with FakeLLMServer(demo_script(tasks[0], _specs(tasks[0], registry))) as server:
            config = ModelConfig(
                base_url=server.base_url, model="fake-model", api_key=SecretStr("demo"), retries=0
            )
            outcomes = run_async(_run_all(tasks, registry, db_path, config, server))
    rows = (
        [t.id, t.shows, o.status, one_line(o.final_answer)]
        for t, o in zip(tasks, outcomes, strict=True)
    )
    columns = ["task", "shows", "status", "final answer"]
    print_table(table("Demo summary", columns, rows, wrap=True), wide=wide)
    print_line(
        f"Sessions are stored in {db_path}: see `aah sessions list --db {db_path}`.", style="dim"
    )


async def _run_all(
    tasks: list[DemoTask],
    registry: Registry,
    db: Path,
    config: ModelConfig,
    server: FakeLLMServer | None = None,
) -> list[SessionOutcome]:
    outcomes = []
    for task in tasks:
        if server is not None:
            from aah.benchmark import demo_script

            server.set_script(demo_script(task, _specs(task, registry)))
        outcomes.append(await _run_task(task, registry, db, config))
    return outcomes


def _specs(task: DemoTask, registry: Registry) -> list[EndpointSpec]:
    return [registry.get(name) for name in task.tools]


async def _run_task(
    task: DemoTask, registry: Registry, db: Path, config: ModelConfig
) -> SessionOutcome:
    from aah.cli.trace import TracePrinter
    from aah.runtime import ScriptedHuman, SessionRequest, open_runtime, run_session

    console.rule(f"[bold]{task.title}[/]")
    console.print(f"[bold]user:[/] {task.query}", highlight=False)
    request = SessionRequest(
        query=task.query,
        specs=_specs(task, registry),
        aah=True,
        awareness=task.awareness,
    )
    human = ScriptedHuman(task.human_answers, name="demo user")
    async with open_runtime(
        db=db,
        model=config,
        human=human,
        http_mode="fault" if task.fault else "mock",
        fault_plan=task.fault or None,
        listeners=[TracePrinter(console)],
    ) as runtime:
        return await run_session(request, runtime)
