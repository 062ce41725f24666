"""The Launch tab (admins only): start a batch run whose questions come to the queue.

Its number boxes hand over whatever a client sends (no rounding or range in
Gradio, which would fail on infinity or text): ``whole_number`` checks each
one here, and a bad one is a line in the page.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import gradio as gr

from aah.bounds import OutOfBounds, check_number
from aah.ui.web.auth import Annotator, page_error, require_admin
from aah.ui.web.format import plain
from aah.ui.web.launch import (
    LAUNCH_HEADERS,
    SETTING_CHOICES,
    LaunchRequest,
    RunLauncher,
    log_tail,
)

# The most tasks per setting a run may ask for (the benchmark has a few hundred).
MAX_TASKS = 100_000
# Linux's largest process id is 2**22; other systems stay below 2**31.
MAX_PID = 2**31 - 1
_PICK_RUN = "type the process id of a run launched from this page"


def whole_number(value: Any, maximum: int, refusal: str) -> int | None:
    """``value`` from a number box as a whole number from 1 to ``maximum``; None when empty.

    Read by aah's one reader of typed numbers (:func:`aah.bounds.check_number`).

    Raises:
        gr.Error: ``value`` is no such number (``refusal``, one line).
    """
    if value is None or value == "":
        return None
    try:
        return int(check_number(value, "the number", integer=True, minimum=1, maximum=maximum))
    except OutOfBounds:
        raise page_error(refusal) from None


def build_launch_tab(launcher: RunLauncher, user: gr.State) -> None:
    """Lay out the Launch tab inside the current Blocks and wire its events."""
    gr.Markdown(
        "Start `aah bench run --human queue` on this app's database. The agent's "
        "questions appear in the Queue tab; the run waits for answers."
    )
    with gr.Row():
        run = gr.Textbox(label="Run name", value=_default_run_name, elem_id="launch-run")
        setting = gr.Dropdown(
            label="Setting", choices=list(SETTING_CHOICES), value="underspecified"
        )
        limit = gr.Number(label="Tasks per setting (empty: all)", value=5)
    with gr.Row():
        model = gr.Textbox(label="Agent model (empty: AAH_MODEL)", elem_id="launch-model")
        aah = gr.Checkbox(label="Aah on (the agent may ask)", value=True)
    launch = gr.Button("Launch run", variant="primary", elem_id="launch-button")
    status = gr.Markdown(elem_id="launch-status")
    with gr.Row():
        table = gr.Dataframe(headers=LAUNCH_HEADERS, datatype="str", interactive=False, wrap=True)
    with gr.Row():
        pid = gr.Number(label="Process id", value=None, scale=2)
        with gr.Column(scale=1, min_width=160):
            show = gr.Button("Show log", size="sm")
            stop = gr.Button("Stop run", variant="stop", size="sm")
    log = gr.Textbox(label="Log (end)", lines=12, interactive=False, elem_id="launch-log")

    def on_launch(
        who: Annotator | None,
        name: str,
        chosen: str,
        per_setting: Any,
        agent_model: str,
        ask: bool,
    ) -> tuple[str, list[list[str]], int, str]:
        require_admin(who)
        limit = whole_number(
            per_setting,
            MAX_TASKS,
            f"set the tasks per setting to a whole number from 1 to {MAX_TASKS:,}, "
            "or leave it empty for all",
        )
        request = LaunchRequest(
            run=name.strip(),
            setting=chosen,
            limit=limit,
            model=agent_model.strip() or None,
            aah=ask,
        )
        try:
            started = launcher.launch(request)
        except ValueError as exc:
            raise page_error(str(exc)) from None
        note = f"Started run **{plain(request.run)}** as process {started.process.pid}."
        return note, launcher.rows(), started.process.pid, log_tail(started.log)

    def on_show(who: Annotator | None, chosen: Any) -> tuple[list[list[str]], str]:
        require_admin(who)
        number = whole_number(chosen, MAX_PID, _PICK_RUN)
        launched = launcher.find(number) if number is not None else None
        if launched is None:
            raise page_error(_PICK_RUN)
        return launcher.rows(), log_tail(launched.log)

    def on_stop(who: Annotator | None, chosen: Any) -> tuple[str, list[list[str]]]:
        require_admin(who)
        running = "type the process id of a running run launched from this page"
        number = whole_number(chosen, MAX_PID, running)
        if number is None or not launcher.stop(number):
            raise page_error(running)
        return f"Asked process {number} to stop.", launcher.rows()

    launch.click(
        on_launch,
        [user, run, setting, limit, model, aah],
        [status, table, pid, log],
        api_name="launch_run",
    )
    show.click(on_show, [user, pid], [table, log], api_name="run_log")
    stop.click(on_stop, [user, pid], [status, table], api_name="stop_run")


def _default_run_name() -> str:
    return datetime.now(UTC).strftime("web-%Y%m%d-%H%M")
