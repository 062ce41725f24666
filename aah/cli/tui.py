"""``aah tui``: the terminal app for live demos (needs the ``ui`` extra)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from aah.annotators import annotator_key, check_annotator_name
from aah.cli.options import DataOption, DbOption, OtelOption
from aah.errors import AahError
from aah.ui import freeze_start_up

if TYPE_CHECKING:
    from aah.ui.tui import AahApp

UI_EXTRA_MISSING = "the terminal app needs the ui extra: pip install 'aah[ui]'"


def tui(
    db: DbOption = None,
    data: DataOption = None,
    annotator: str | None = typer.Option(
        None, "--annotator", help="Your name, stored with every answer (default: $USER)."
    ),
    otel: OtelOption = False,
) -> None:
    """Open the terminal app: run a task live, answer the agent, break its tools."""
    if otel:
        from aah.telemetry import turn_on_export

        turn_on_export()
    run_tui(db, data, annotator=annotator)


def run_tui(
    db: Path | None,
    data: Path | None,
    task_id: str | None = None,
    *,
    annotator: str | None = None,
) -> None:
    """Open the terminal app; with ``task_id``, start that demo task at once.

    Raises:
        AahError: the ``ui`` extra is missing, the tools cannot be found, or
            ``task_id`` names no demo task.
    """
    app = build_app(db, data, task_id, annotator=annotator)
    from aah.ui.tui import tolerate_undecodable_input

    tolerate_undecodable_input()
    freeze_start_up()
    app.run()


def build_app(
    db: Path | None,
    data: Path | None,
    task_id: str | None = None,
    *,
    annotator: str | None = None,
) -> AahApp:
    """The app, ready to run (tests drive it headless).

    Raises:
        AahError: as for :func:`run_tui`.
    """
    try:
        import textual  # noqa: F401  # only to learn whether the extra is installed
    except ImportError as exc:
        raise AahError(UI_EXTRA_MISSING) from exc
    from aah.benchmark import demo_task
    from aah.cli.tools import open_registry
    from aah.config import get_settings
    from aah.ui.tui import AahApp

    if task_id is not None:
        demo_task(task_id)  # an unknown name fails here, in one line, not inside the app
    name = _annotator_name(annotator) if annotator is not None else None
    registry = open_registry(data, build_if_missing=True)
    return AahApp(registry, db or get_settings().db, data=data, task_id=task_id, annotator=name)


def _annotator_name(given: str) -> str:
    """``--annotator`` as answers are stored under it.

    Raises:
        AahError: The web sign-in would refuse the name too (empty, mixed scripts...).
    """
    try:
        return check_annotator_name(given)
    except ValueError as refused:
        if not annotator_key(given):
            raise AahError("--annotator is empty: give your name, e.g. --annotator ana") from None
        raise AahError(f"--annotator {given!r}: {refused}") from None
